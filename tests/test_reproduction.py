"""The reproduction report: queries on the store, the published file's checks, sections."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from simcore.base.errors import ConfigError
from simcore.base.stamps import stamp_problems
from simcore.report.reproduction import (
    copy_figures,
    evaluate,
    evaluate_seeds,
    has_runs,
    load_published,
    report,
    verdict_paths,
    write_report,
)
from simcore.report.verdicts import VERDICTS
from simcore.sweep.store import read_summaries, read_verified, shard_dir, summary_table, write_table
from tests.conftest import ROOT
from tests.test_tables import build_store

TORUS = {"experiment": "krevat", "workload": "nasa", "machine": "torus"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return read_summaries(build_store(tmp_path_factory.mktemp("store")))


def test_queries_reduce_the_store(runs):
    """The synthetic store's values (tests/test_tables.py): utilization of torus/fcfs is
    0.5 + 0.125 ci + 0.03125 (seed - 2), so 0.5 at c = 1.0 and 0.625 at c = 1.2;
    migration attempts average 7 and successes 5."""
    where = {**TORUS, "policy": "fcfs"}
    assert evaluate(runs, {"metric": "utilization", "where": {**where, "runtime_scale": 1.0}}
                    ) == 0.5
    assert evaluate(runs, {"max": "utilization", "where": where}) == 0.625
    change = evaluate(runs, {"change": "utilization", "of": {"policy": "migration"},
                             "over": {"policy": "fcfs"},
                             "where": {**TORUS, "runtime_scale": 1.0}})
    assert change == pytest.approx(0.5625 / 0.5 - 1)
    ratio = evaluate(runs, {"ratio": ["migrations_successful", "migrations_attempted"],
                            "where": {**TORUS, "policy": "migration", "runtime_scale": 1.0}})
    assert ratio == pytest.approx(5 / 7)
    assert evaluate(runs, {"metric": "utilization", "where": {"workload": "none"}}) is None
    with pytest.raises(ConfigError, match="no column 'nope'"):
        evaluate(runs, {"metric": "utilization", "where": {"nope": 1}})


def test_queries_per_seed(runs):
    """The same queries on each seed alone: utilization 0.5 + 0.03125 (seed - 2) for
    torus/fcfs at c = 1.0 and 0.5625 + 0.03125 (seed - 2) for migration; migration succeeds
    3 + seed of 5 + seed attempts."""
    where = {**TORUS, "runtime_scale": 1.0}
    assert evaluate_seeds(runs, {"metric": "utilization", "where": {**where, "policy": "fcfs"}}
                          ) == [0.46875, 0.5, 0.53125]
    change = {"change": "utilization", "of": {"policy": "migration"},
              "over": {"policy": "fcfs"}, "where": where}
    assert evaluate_seeds(runs, change) == pytest.approx(
        [(0.5625 + d) / (0.5 + d) - 1 for d in (-0.03125, 0.0, 0.03125)])
    ratio = {"ratio": ["migrations_successful", "migrations_attempted"],
             "where": {**where, "policy": "migration"}}
    assert evaluate_seeds(runs, ratio) == pytest.approx([4 / 6, 5 / 7, 6 / 8])
    assert evaluate_seeds(runs, {"max": "utilization", "where": {**TORUS, "policy": "fcfs"}}
                          ) == [0.59375, 0.625, 0.65625]  # c = 1.2 for each seed
    assert evaluate_seeds(runs, {"metric": "utilization", "where": {"workload": "none"}}) == []


def test_knee_queries_and_list_selections():
    """Utilization 0.5 c up to c = 1.6, then 0.8 + 0.05 (c - 1.6): the knee is at c = 1.6,
    level 0.8, found across two experiments listed in one selection; a curve that keeps
    rising at the same slope has no knee."""
    import polars as pl

    scales = [0.8, 1.0, 1.2, 1.4, 1.6, 2.0, 2.5, 3.0]
    rows = pl.DataFrame({
        "experiment": ["low"] * 4 + ["high"] * 4, "policy": ["bf"] * 8, "seed": [1] * 8,
        "runtime_scale": scales,
        "utilization": [0.5 * c if c <= 1.6 else 0.8 + 0.05 * (c - 1.6) for c in scales],
        "straight": [0.3 * c for c in scales]})
    both = {"experiment": ["low", "high"], "policy": "bf"}
    query = {"knee": "utilization", "along": "runtime_scale", "where": both}
    assert evaluate(rows, query) == pytest.approx(0.8, abs=1e-3)
    assert evaluate(rows, {**query, "knee": "straight"}) is None
    assert evaluate(rows, {**query, "where": {**both, "experiment": ["low"]}}) is None, \
        "the first experiment alone stops before the knee"
    assert evaluate(rows, {"metric": "utilization", "where": both}) == pytest.approx(
        sum(rows["utilization"]) / 8)


def test_a_change_of_saturation_points_compares_two_sweeps_seed_by_seed(tmp_path):
    """Carried load min(load, k) + 0.1 max(load - k, 0): EASY bends at k = 0.8 and FCS at
    0.88 + 0.01 (seed - 2), so FCS saturates 10% later on seed 2, and the change is taken
    per seed as any change is."""
    loads = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]
    rows = []
    for policy in ("easy", "fcs"):
        for seed in (1, 2, 3):
            k = 0.8 if policy == "easy" else 0.88 + 0.01 * (seed - 2)
            for load in loads:
                rows.append({"seed": seed, "machine_spec": "flat:32", "scheduler": policy,
                             "offered_load": load, "run_key": f"{policy}-{seed}-{load}",
                             "accepted_load": min(load, k) + 0.1 * max(load - k, 0.0)})
    names = {"experiment": "fcs", "workload": "lublin", "machine": "flat"}
    for policy in ("easy", "fcs"):
        write_table(summary_table([r for r in rows if r["scheduler"] == policy]),
                    shard_dir(tmp_path, "test", {**names, "policy": policy})
                    / "summary.parquet", {"shard": {"dataset": "test", **names,
                                                    "policy": policy}})
    store = read_summaries(tmp_path / "test" / "store")
    query = {"change": {"saturation": "at_offered_load"}, "of": {"policy": "fcs"},
             "over": {"policy": "easy"}, "where": names}
    assert evaluate_seeds(store, query) == pytest.approx(
        [(0.88 + d) / 0.8 - 1 for d in (-0.01, 0.0, 0.01)], abs=1e-3)
    assert evaluate(store, query) == pytest.approx(0.1, abs=1e-3)
    assert evaluate(store, {**query, "of": {"policy": "gang"}}) is None


def _job_store(tmp_path, runs, jobs):
    """A store of one shard per policy: (summary rows, job rows as column lists)."""
    import pyarrow as pa

    from simcore.sweep.store import JOBS_SCHEMA

    for policy in runs:
        names = {"experiment": "e", "workload": "w", "machine": "m", "policy": policy}
        where = shard_dir(tmp_path, "test", names)
        meta = {"shard": {"dataset": "test", **names}}
        write_table(summary_table(runs[policy]), where / "summary.parquet", meta)
        n = len(jobs[policy]["run_key"])
        write_table(pa.table({f.name: pa.array(jobs[policy].get(f.name, [None] * n), f.type)
                              for f in JOBS_SCHEMA}), where / "jobs.parquet", meta)
    return tmp_path / "test" / "store"


def test_runs_that_kept_per_job_rows_get_the_metrics_derived_from_them(tmp_path):
    """Run a on a 2x2x2 torus (8 units) over 100 s: a job of 3 units placed on 4 for 50 s
    and one of 2 on 2 for 100 s. Requested: (3 x 50 + 2 x 100) / 800 = 0.4375, its stored
    utilization; allocated: (4 x 50 + 2 x 100) / 800 = 0.5. Its halves by run time: the
    50 s job alone (response 60 s), the other (150 s). Run b: three jobs, the shorter half
    is the 1 s job alone (5 s ties go by job number). Run c kept no per-job rows."""
    from simcore.report.job_metrics import ALLOCATED, HALVES, with_job_metrics

    spec = {"machine_spec": "torus:2x2x2", "makespan_s": 100.0}
    runs = {"x": [{"run_key": "a", "seed": 1, "utilization": 0.4375, **spec},
                  {"run_key": "b", "seed": 2, "utilization": 0.1, **spec}],
            "y": [{"run_key": "c", "seed": 1, "utilization": 0.5, **spec}]}
    jobs = {"x": {"run_key": ["a", "a", "b", "b", "b"], "job_id": [1, 2, 2, 1, 3],
                  "size": [3, 2, 1, 1, 1], "alloc_size": [4, 2, 1, 1, 1],
                  "run_s": [50.0, 100.0, 5.0, 5.0, 1.0],
                  "response_s": [60.0, 150.0, 100.0, 200.0, 300.0]},
            "y": {"run_key": []}}
    store = _job_store(tmp_path, runs, jobs)
    derived = with_job_metrics(read_summaries(store), store).sort("run_key")
    assert derived[ALLOCATED].to_list() == [0.5, pytest.approx(11 / 800), None]
    assert derived[HALVES[0]].to_list() == [60.0, 300.0, None]
    assert derived[HALVES[1]].to_list() == [150.0, 150.0, None]
    files = [str(store / "experiment=e/workload=w/machine=m/policy=y/summary.parquet")]
    assert with_job_metrics(read_summaries(None, files), None, files)[
        HALVES[0]].to_list() == [None]
    assert evaluate(derived, {"metric": ALLOCATED, "where": {"run_key": "a"}}) == 0.5
    with pytest.raises(ConfigError, match=r"1 selected run.*experiment.*e have no per-job"):
        evaluate(derived, {"metric": HALVES[0], "where": {"policy": "y"}})
    with pytest.raises(ConfigError, match=r"rows give a utilization of 0.01375 .* not its "
                                          r"stored 0.1"):
        evaluate(derived, {"metric": ALLOCATED, "where": {"run_key": "b"}})


def test_the_report_reads_the_job_rows_beside_the_summaries(tmp_path):
    """A claim on `utilization_allocated` through the whole report: run a's 0.5 is ours."""
    from simcore.report.job_metrics import ALLOCATED

    runs = {"x": [{"run_key": "a", "seed": 1, "utilization": 0.4375,
                   "machine_spec": "torus:2x2x2", "makespan_s": 100.0}]}
    jobs = {"x": {"run_key": ["a", "a"], "job_id": [1, 2], "size": [3, 2],
                  "alloc_size": [4, 2], "run_s": [50.0, 100.0], "response_s": [1.0, 1.0]}}
    store = _job_store(tmp_path, runs, jobs)
    claim = {"what": "allocated", "source": "s", "paper": None, "extension": "ours",
             "why": "y", "query": {"metric": ALLOCATED, "where": {"experiment": "e"}}}
    text = report({"e": {"title": "t", "did": "d", "ours": "o", "experiments": ["e"],
                         "claims": [claim]}}, store)
    assert "| allocated | 0.500 |" in text


@pytest.mark.parametrize(("change", "message"), [
    ({"change": "utilization"}, r"query.change: expected exactly one of \('metric', 'max', "
                                r"'ratio', 'saturation', 'knee'\)"),
    ({"knee": "utilization"}, r"query.change.along: missing"),
])
def test_a_change_of_a_query_holds_one_query_of_another_kind(tmp_path, change, message):
    published = yaml.safe_load((ROOT / "config/published.yaml").read_text())
    claim = published["seeds"]["aridor2005"]["claims"][0]
    claim["query"]["change"] = change
    path = Path(tmp_path) / "p.yaml"
    path.write_text(yaml.safe_dump(published))
    with pytest.raises(ConfigError, match=rf"seeds.aridor2005.claims\[0\].{message}"):
        load_published(path)


def test_a_query_has_runs_only_if_every_selection_has(runs):
    change = {"change": "utilization", "of": {"policy": "migration"},
              "over": {"policy": "fcfs"}, "where": TORUS}
    assert has_runs(runs, change)
    assert not has_runs(runs, {**change, "of": {"policy": "gang"}})
    assert not has_runs(runs, {**change, "where": {**TORUS, "workload": "sdsc"}})
    assert has_runs(runs, {"metric": "utilization", "where": TORUS})
    assert not has_runs(runs, {"metric": "utilization", "where": {"workload": "none"}})


def test_report_sections(tmp_path, runs):
    """A section per seed with its verdicts; the counts open the report. Torus/fcfs
    saturates at 0.625 (seeds: 0.59375, 0.625, 0.65625, a 95% half-width of
    4.303 x 0.03125 / sqrt(3) = 0.078); migration gains 12.5% over it at c = 1.0 (the
    per-seed paired gains 13.3%, 12.5% and 11.8%: 12.5% ± 1.9%)."""
    fcfs = {**TORUS, "policy": "fcfs"}
    gain = {"change": "utilization", "of": {"policy": "migration"}, "over": {"policy": "fcfs"},
            "where": {**TORUS, "runtime_scale": 1.0}}
    peak = {"max": "utilization", "where": fcfs}

    def row(what, paper, query, **more):
        return {"what": what, "source": f"p. {len(what)}", "paper": paper, "query": query,
                "why": f"{what.title()}.", "kind": "text", "statement": what, **more}

    claims = [
        row("saturation", "60%", peak),
        row("gain", "+20%", gain),
        row("bound", "no more than 50%", peak, kind="figure"),
        row("range", "60-70%", peak, statement="saturation",
            shown="another row of statement saturation"),
        row("order", None, {**gain, "of": {"policy": "fcfs"}, "over": {"policy": "migration"}},
            direction="lower", condition="at c = 1.0, where the paper gives none"),
        row("fitted", "0.5", {"metric": "utilization", "where": {**fcfs, "runtime_scale": 1.0}},
            calibrated="the constant k, fitted to this row"),
        row("sage", "54%", None, outside_model="SAGE is not a workload the model runs"),
        {"what": "ours only", "source": "p. 6: no number", "paper": None, "why": "Ours.",
         "extension": "a run the paper did not make", "query": gain},
        row("elsewhere", "50%", {"metric": "utilization", "where": {**fcfs, "workload": "sdsc"}})]
    del claims[6]["query"]
    published = {"x": {
        "title": "A study", "did": "It did things.", "ours": "We did them too.",
        "departures": ["A stand-in trace,\n  a lighter load."],
        "experiments": ["krevat"], "figures": ["krevat/capacity.png"], "claims": claims},
        "y": {"title": "Another", "did": "d", "ours": "o", "experiments": ["later"],
              "claims": []}}
    store = build_store(tmp_path)
    text = report(published, store)
    assert "**Departures from the paper**" in text and "- A stand-in trace, a lighter load." \
        in text
    assert text.count("**Departures from the paper**") == 1, "only the seed that has them"
    assert "## A study" in text and "**Our configuration.** We did them too." in text
    assert ("| saturation | 60% ± 0.5 (text, p. 10) | 62.5% ± 7.8% | 3 | +2.5 pt "
            "| inconclusive | Saturation. |") in text
    assert ("| gain | +20% ± 0.5 (text, p. 4) | +12.5% ± 1.9% | 3 | -7.5 pt | not reproduced "
            "| Gain. |") in text
    assert ("| bound | no more than 50% ± 2 (figure, p. 5) | 62.5% ± 7.8% | 3 | +12.5 pt "
            "| not reproduced | Bound. |") in text
    assert ("| range | 60-70% ± 0.5 (text, p. 5) | 62.5% ± 7.8% | 3 | inside | shown "
            "| *Another row of statement saturation.* Range. |") in text
    assert ("| order | lower, no number (text, p. 5) | -11.1% ± 1.5% | 3 |  | reproduced "
            "| **Our condition:** At c = 1.0, where the paper gives none. Order. |") in text
    assert ("| fitted | 0.5 ± 0.05 (text, p. 6) | 0.50 ± 0.08 | 3 | 0.00 | calibrated "
            "| *The constant k, fitted to this row.* Fitted. |") in text
    assert ("| sage | 54% (text, p. 4) | n/a |  |  | outside the model | *SAGE is not a "
            "workload the model runs.* Sage. |") in text
    assert "| elsewhere | 50% ± 0.5 (text, p. 9) | n/a |  |  | not run | Elsewhere. |" in text
    assert "| ours only |" not in text.split("**Our own results**")[0]
    assert ("| ours only | +12.5% ± 1.9% (95% CI) | p. 6: no number | *A run the paper did "
            "not make.* Ours. |") in text.split("**Our own results**")[1]
    head = ("| study | statements | scored | reproduced | near miss | not reproduced "
            "| inconclusive | outside the model | calibrated | shown | not applicable "
            "| extension | not run |")
    counts = text.index(head)
    assert counts < text.index("## A study")
    assert "| A study | 7 | 5 | 1 | 0 | 2 | 1 | 1 | 1 | 1 | 0 | 1 | 1 |" in text
    assert "| Another | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in text
    assert "| **all** | 7 | 5 | 1 | 0 | 2 | 1 | 1 | 1 | 1 | 0 | 1 | 1 |" in text
    for name in VERDICTS:
        assert f"- *{name}*: " in text[:counts]
    assert "![krevat/capacity.png](figures/krevat/capacity.png)" in text
    assert "*Not in this dataset (no section below): Another.*" in text
    assert "## Another" not in text
    assert report(published, store) == text


def test_the_verdict_table_holds_the_rows_beside_the_report(tmp_path):
    """`reproduction` writes the report and its rows as CSV and checksummed Parquet, each
    stamped; a statement scored twice is refused naming the row."""
    store = build_store(tmp_path / "d")
    published = yaml.safe_load((ROOT / "config/published.yaml").read_text())
    claims = [{"what": "gain", "source": "p. 2", "paper": "+20%", "kind": "figure",
               "statement": "gain", "why": "Less.",
               "query": {"change": "utilization", "of": {"policy": "migration"},
                         "over": {"policy": "fcfs"}, "where": {**TORUS, "runtime_scale": 1.0}}},
              {"what": "sage", "source": "p. 3", "paper": "54%", "kind": "text",
               "statement": "sage", "why": "No code.", "outside_model": "not a workload"}]
    published["seeds"] = {"x": {"title": "A study", "did": "d", "ours": "o",
                                "experiments": ["krevat"], "claims": claims},
                          "y": {"title": "Not run here", "did": "d", "ours": "o",
                                "experiments": ["later"],
                                "claims": [{**claims[0], "statement": "later"}]}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(published))
    out = tmp_path / "out/reproduction.md"
    write_report(path, store, None, out)
    csv, parquet = verdict_paths(out)
    assert (csv.name, parquet.name) == ("reproduction-verdicts.csv",
                                        "reproduction-verdicts.parquet")
    table = pl.from_arrow(read_verified(parquet))
    assert table.equals(pl.read_csv(csv, schema=table.schema))
    assert table.columns == ["study", "statement", "kind", "what", "source", "paper", "n",
                             "ours", "half_width", "tolerance", "low", "high", "verdict",
                             "condition", "why"]
    gain, sage = table.rows(named=True)  # none of y's: its experiment has no runs
    assert (gain["statement"], gain["kind"], gain["n"], gain["verdict"]) == (
        "gain", "figure", 3, "not reproduced")
    assert gain["ours"] == pytest.approx(0.12533, abs=1e-5)
    assert gain["tolerance"] == pytest.approx(0.02) and gain["low"] == gain["high"] == 0.2
    assert (sage["verdict"], sage["n"], sage["ours"]) == ("outside the model", 0, None)
    assert all(not stamp_problems(p) for p in (out, csv, parquet))
    blocked = tmp_path / "blocked/reproduction.md"
    verdict_paths(blocked)[1].mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        write_report(path, store, None, blocked)
    assert sorted(p.name for p in blocked.parent.iterdir()) == [
        "reproduction-verdicts.parquet"], "all three files or none"
    claims.append({**claims[0], "what": "gain again"})
    path.write_text(yaml.safe_dump(published))
    with pytest.raises(ConfigError, match=r"seeds.x.claims\[2\].statement: .gain. is scored "
                                          r"by seeds.x.claims\[0\] already"):
        load_published(path)


def test_a_dataset_without_the_seeds_says_so_in_one_line(tmp_path):
    """The default dataset holds none of the seeds' experiments: one line says what it
    holds, instead of a section per seed saying it is missing."""
    published = load_published(ROOT / "config" / "published.yaml")
    text = report(published, build_store(tmp_path, experiments=("smoke",)))
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0] == "# Reproduction of the seed studies"
    assert lines[1].startswith("**This dataset holds none of the seed studies' experiments** "
                               "(it holds smoke)")


def test_linked_figures_are_copied_beside_a_report_outside_the_dataset(tmp_path):
    published = {"x": {"experiments": ["krevat"], "figures": ["krevat/capacity.png"]},
                 "y": {"experiments": ["later"], "figures": ["later/capacity.png"]}}
    source = tmp_path / "figures"
    (source / "krevat").mkdir(parents=True)
    (source / "krevat/capacity.png").write_bytes(b"png")
    assert copy_figures(published, {"krevat"}, source, tmp_path / "docs/reproduction") == [
        tmp_path / "docs/reproduction/krevat/capacity.png"]  # not y's: it has no runs
    assert (tmp_path / "docs/reproduction/krevat/capacity.png").read_bytes() == b"png"
    (source / "krevat/capacity.png").unlink()
    with pytest.raises(ConfigError, match=r"'krevat/capacity\.png': not found under"):
        copy_figures(published, {"krevat"}, source, tmp_path / "elsewhere")


def test_published_file_is_complete_and_checked(tmp_path):
    seeds = load_published(ROOT / "config/published.yaml")
    assert {"krevat2003", "aridor2005", "leung2002", "chu1995", "frachtenberg2003"} <= set(
        seeds)
    broken = yaml.safe_load((ROOT / "config/published.yaml").read_text())
    del broken["seeds"]["krevat2003"]["claims"][0]["source"]
    path = Path(tmp_path) / "p.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ConfigError, match=r"seeds.krevat2003.claims\[0\]: missing 'source'"):
        load_published(path)


def test_departures_are_sentences(tmp_path):
    broken = yaml.safe_load((ROOT / "config/published.yaml").read_text())
    broken["seeds"]["leung2002"]["departures"] = "one long string"
    path = Path(tmp_path) / "p.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ConfigError, match=r"seeds.leung2002.departures: expected a list"):
        load_published(path)


@pytest.mark.parametrize(("seed", "index", "change", "key", "message"), [
    ("krevat2003", 0, {"paper": "sixty-three"}, "paper", "cannot read 'sixty-three'"),
    ("krevat2003", 0, {"paper": float("nan")}, "paper", "not a printed value"),
    ("chu1995", 28, {"direction": None}, "paper", "no published value and no 'direction'"),
    ("frachtenberg2003", 2, {"calibrated": " "}, "calibrated", "a sentence naming"),
    ("krevat2003-scale", 1, {"paper": "-44%"}, "paper", "an extension has no published"),
    ("krevat2003", 12, {"direction": "lower"}, "direction", "contradicts the paper's '+15%'"),
    ("aridor2005", 6, {"tolerance": "five points"}, "tolerance", "expected a number >= 0"),
    ("krevat2003", 0, {"kind": None}, "kind", "expected one of figure, table, measured, text"),
    ("chu1995", 3, {"statement": None}, "statement", "naming the published statement"),
    ("krevat2003", 2, {"tolerance": 0.1}, "tolerance_why", "only with a sentence saying why"),
])
def test_a_claim_without_what_its_verdict_needs_names_file_seed_claim_and_key(
        tmp_path, seed, index, change, key, message):
    broken = yaml.safe_load((ROOT / "config/published.yaml").read_text())
    broken["seeds"][seed]["claims"][index].update(change)
    path = Path(tmp_path) / "p.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ConfigError) as refused:
        load_published(path)
    assert str(refused.value).startswith(f"{path}: seeds.{seed}.claims[{index}].{key}: ")
    assert message in str(refused.value)


def test_rows_fixed_by_their_input_or_fitted_to_the_paper_are_not_scored():
    """Frachtenberg's FCFS scenario rows restate the run times they are given, gang's rows
    of scenario 1 and spin-block's of scenarios 2 and 3 the costs fitted to them; the
    node-level rows of the scale section have no published value."""
    seeds = load_published(ROOT / "config/published.yaml")
    for claim in seeds["frachtenberg2003"]["claims"]:
        where = claim.get("query", {}).get("where", {})  # none: outside the model
        if where.get("experiment") != "frachtenberg2003-scenarios":
            continue
        fitted = where.get("policy") == "batch" or (where.get("workload"),
                                                    where.get("policy")) in {
            ("fcs-scenario1", "gang"), ("fcs-scenario2", "spin-block"),
            ("fcs-scenario3", "spin-block")}
        assert ("calibrated" in claim) == fitted, claim["what"]
    assert all("extension" in c for c in seeds["krevat2003-scale"]["claims"])
