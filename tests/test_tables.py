"""Result tables: aggregates over seeds against hand-computed values, the always-migrate
join, null handling, determinism and the empty-store error.

The synthetic store (`build_store`) uses dyadic values (multiples of 1/32) so that means
and standard deviations are exact in floating point:

- krevat (load axis runtime_scale c in {1.0, 1.2}, offered_load null), workload nasa:
  machine torus with fcfs, migration (fn 0.1/0.7), migration-always (fn 0/1), bm
  (fn 0.1/0.7, no always-migrate bm), and machine flat with fcfs; seeds 1..3;
- aridor (load axis offered_load in {0.6, 0.8}), workload ctc: wired machines bgl and
  torus-links under backfill, p_fat and p_torus in {0, 1}; seeds 1..3; no job waits
  (mean wait 0: no wait figure on a log scale);
- smoke: one seed of fcfs and migration on torus at c = 1.0 (n = 1, no always-migrate).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from pathlib import Path

import polars as pl
import pytest

from simcore.base.confidence import t_quantile
from simcore.base.errors import SimcoreError
from simcore.base.stamps import made_files, stamp_problems, write_stamp
from simcore.report.tables import CONFIG_KEYS, TABLES, aggregate, write_tables
from simcore.sweep.store import shard_dir, summary_table, write_table

SEEDS = (1, 2, 3)
T_975_2 = 4.302653  # Student t, 0.975 quantile, 2 degrees of freedom (3 seeds)
KREVAT_POLICIES = {  # name: (index, scheduler, fn_tor, fn_max)
    "fcfs": (0, "fcfs", None, None),
    "migration": (1, "migration", 0.1, 0.7),
    "migration-always": (2, "migration", 0.0, 1.0),
    "bm": (3, "bm", 0.1, 0.7),
}


def _krevat_row(machine: str, policy: str, ci: int, seed: int) -> dict[str, object]:
    pi, scheduler, fn_tor, fn_max = KREVAT_POLICIES[policy]
    pi += 4 * (machine == "flat")
    base = 0.5 + 0.125 * ci + 0.0625 * (pi % 4)
    util = base + 0.03125 * (seed - 2)
    unused = 0.25 - 0.0625 * ci
    migrating = scheduler in ("migration", "bm")
    if fn_tor == 0.0:
        successful = 10 * (1 + ci) + 2 * seed
    else:
        successful = 3 + seed if scheduler == "migration" else 1 + seed
    return {
        "seed": seed, "machine_spec": "flat:128" if machine == "flat" else "torus:4x4x8",
        "scheduler": scheduler, "skip_jobs": 0, "first_jobs": 10000,
        "processors_per_unit": 1, "runtime_scale": (1.0, 1.2)[ci],
        "start_delay_s": 1.0,
        "reservation": True if scheduler == "bm" else None,
        "max_growth": 1 if scheduler == "bm" else None,
        "estimates": "requested" if scheduler == "bm" else None,
        "fn_tor": fn_tor, "fn_max": fn_max,
        "offered_load_actual": 0.5 * (1.0, 1.2)[ci] + 0.001 * seed,
        "utilization": util, "unused": unused, "lost": 1.0 - util - unused,
        "accepted_load": util,  # jobs without a BSP model: the utilization
        "failed": 0.0, "goodput": util,
        "mean_wait_s": 3600.0 * (1 + pi + ci) * seed, "mean_bsld": 2.0 + pi + ci + seed,
        "migrations_attempted": (5 + seed + 20 * (fn_tor == 0.0)) if migrating else 0,
        "migrations_successful": successful if migrating else 0,
        "mean_time_between_migrations_s": (math.nan if seed == 2 or not migrating
                                           else 3600.0 * seed),
        # arrivals kept: a replay, whose fidelity the runner would store
        "fidelity_jobs": 10000, "fidelity_within_10_min": 0.25 + 0.125 * ci + 0.03125 * seed,
    }


def _aridor_row(machine: str, ol: float, p_fat: float, p_torus: float,
                seed: int) -> dict[str, object]:
    util = ol - 0.125 * p_fat - 0.0625 * p_torus * (machine == "torus-links")
    util += 0.03125 * (seed - 2)
    return {
        "seed": seed, "machine_spec": f"{machine}:8x4x4", "scheduler": "backfill", "skip_jobs": 0,
        "processors_per_unit": 4, "runtime_scale": 1.0, "offered_load": ol, "p_fat": p_fat,
        "p_torus": p_torus, "start_delay_s": 0.0, "reservation": True, "max_growth": 0,
        "estimates": "requested", "offered_load_actual": ol + 0.0078125 * (seed - 2),
        "utilization": util, "unused": 0.125, "lost": 0.875 - util - 0.0625 * (seed == 3),
        "failed": 0.0625 * (seed == 3), "goodput": util - 0.0625 * (seed == 3),
        "accepted_load": util,
        "mean_wait_s": 0.0, "mean_bsld": 1.0 + 0.5 * seed,  # no job waits
        "migrations_attempted": 0, "migrations_successful": 0,
        "mean_time_between_migrations_s": math.nan,
    }


def store_rows() -> dict[tuple[str, str, str, str], list[dict[str, object]]]:
    """Rows of the synthetic store by shard (experiment, workload, machine, policy)."""
    shards: dict[tuple[str, str, str, str], list[dict[str, object]]] = {}
    for machine, policies in (("torus", list(KREVAT_POLICIES)), ("flat", ["fcfs"])):
        for policy in policies:
            shards[("krevat", "nasa", machine, policy)] = [
                _krevat_row(machine, policy, ci, seed) for ci in (0, 1) for seed in SEEDS]
    for machine in ("bgl", "torus-links"):
        shards[("aridor", "ctc", machine, "backfill")] = [
            _aridor_row(machine, ol, p_fat, p_torus, seed)
            for ol in (0.6, 0.8) for p_fat in (0.0, 1.0) for p_torus in (0.0, 1.0)
            for seed in SEEDS]
    for policy in ("fcfs", "migration"):
        shards[("smoke", "nasa", "torus", policy)] = [_krevat_row("torus", policy, 0, 1)]
    for shard, rows in shards.items():
        for i, row in enumerate(rows):
            row["run_key"] = "-".join([*shard, str(i)])
    return shards


def build_store(root: Path, reverse: bool = False,
                experiments: Collection[str] = ("krevat", "aridor", "smoke")) -> Path:
    """Write the synthetic store (of `experiments`) as dataset "test" under root and return
    its store directory; `reverse` writes every shard's rows and the shards themselves in
    reverse order (aggregates must not change)."""
    items = [(k, v) for k, v in store_rows().items() if k[0] in experiments]
    for (experiment, workload, machine, policy), rows in items[::-1] if reverse else items:
        names = {"experiment": experiment, "workload": workload, "machine": machine,
                 "policy": policy}
        write_table(summary_table(rows[::-1] if reverse else rows),
                    shard_dir(root, "test", names) / "summary.parquet",
                    {"shard": {"dataset": "test", **names}})
    return root / "test" / "store"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    from simcore.sweep.store import read_summaries

    return aggregate(read_summaries(build_store(tmp_path_factory.mktemp("store"))))


def _one(table: pl.DataFrame, **where: object) -> dict[str, object]:
    rows = table.filter(*(pl.col(c).eq_missing(pl.lit(v)) for c, v in where.items()))
    assert rows.height == 1, (where, rows)
    return rows.row(0, named=True)


def test_t_quantile_matches_tables() -> None:
    expected = {1: 12.706205, 2: 4.302653, 3: 3.182446, 10: 2.228139, 30: 2.042272,
                100: 1.983972}
    for df, value in expected.items():
        assert t_quantile(0.975, df) == pytest.approx(value, abs=5e-7)
    assert t_quantile(0.995, 5) == pytest.approx(4.032143, abs=5e-7)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)


def test_utilization_mean_std_ci(tables: dict[str, pl.DataFrame]) -> None:
    util = tables["utilization"]
    row = _one(util, experiment="krevat", machine="torus", policy="bm", runtime_scale=1.2)
    assert row["n"] == 3
    assert row["utilization_mean"] == 0.5 + 0.125 + 0.0625 * 3  # exact (dyadic values)
    assert row["utilization_std"] == 0.03125
    assert row["utilization_ci95"] == pytest.approx(T_975_2 * 0.03125 / math.sqrt(3), rel=1e-6)
    assert row["offered_load_actual_mean"] == pytest.approx(0.6 + 0.002, rel=1e-12)
    assert row["offered_load"] is None and row["p_fat"] is None
    assert row["scheduler"] == "bm" and row["fn_tor"] == 0.1 and row["reservation"] is True


def test_configurations_group_over_seeds_only(tables: dict[str, pl.DataFrame]) -> None:
    util = tables["utilization"]
    assert util.columns[: len(CONFIG_KEYS)] == list(CONFIG_KEYS)
    assert "seed" not in util.columns and "run_key" not in util.columns
    # krevat: 5 policy/machine pairs x 2 c; aridor: 2 machines x 2 loads x 2 p_fat x 2 p_torus
    counts = dict(util.group_by("experiment").len().iter_rows())
    assert counts == {"krevat": 10, "aridor": 16, "smoke": 2}
    aridor = util.filter(pl.col("experiment") == "aridor")
    assert set(aridor["n"]) == {3}
    row = _one(aridor, machine="torus-links", offered_load=0.8, p_fat=1.0, p_torus=1.0)
    assert row["utilization_mean"] == 0.8 - 0.125 - 0.0625
    assert row["offered_load_actual_mean"] == pytest.approx(0.8, rel=1e-12)
    assert util.sort(list(CONFIG_KEYS), nulls_last=False).equals(util)


def test_single_seed_has_null_spread(tables: dict[str, pl.DataFrame]) -> None:
    row = _one(tables["utilization"], experiment="smoke", policy="fcfs")
    assert row["n"] == 1 and row["utilization_mean"] == 0.46875  # seed 1 only
    assert row["utilization_std"] is None and row["utilization_ci95"] is None
    wait = _one(tables["wait_slowdown"], experiment="smoke", policy="fcfs")
    assert wait["mean_wait_s_mean"] == 3600.0 and wait["mean_wait_s_ci95"] is None


def test_migrations_and_always_migrate_maximum(tables: dict[str, pl.DataFrame]) -> None:
    mig = tables["migrations"]
    assert set(mig["scheduler"]) == {"migration", "bm"}
    assert set(mig["experiment"]) == {"krevat", "smoke"}
    for ci, c in enumerate((1.0, 1.2)):
        row = _one(mig, experiment="krevat", policy="migration", runtime_scale=c)
        assert row["n"] == 3
        assert row["migrations_attempted_mean"] == 7.0
        assert row["migrations_successful_mean"] == 5.0
        # the always-migrate runs at the same c: successful = 10 (1 + ci) + 2 seed
        assert row["max_successful_mean"] == 10 * (1 + ci) + 4
        # seed 2 has NaN (fewer than two migrations): mean over seeds 1 and 3
        assert row["mean_time_between_migrations_s_mean"] == 7200.0
        assert row["utilization_mean"] == 0.5 + 0.125 * ci + 0.0625
        always = _one(mig, experiment="krevat", policy="migration-always", runtime_scale=c)
        assert always["max_successful_mean"] == always["migrations_successful_mean"]
        # no always-migrate B+M policy, and none at all in smoke: no maximum
        bm = _one(mig, experiment="krevat", policy="bm", runtime_scale=c)
        assert bm["max_successful_mean"] is None and bm["migrations_successful_mean"] == 3.0
    smoke = _one(mig, experiment="smoke", policy="migration")
    assert smoke["max_successful_mean"] is None
    assert smoke["mean_time_between_migrations_s_mean"] == 3600.0


def test_capacity_and_wait_slowdown(tables: dict[str, pl.DataFrame]) -> None:
    cap = _one(tables["capacity"], experiment="krevat", machine="flat", runtime_scale=1.0)
    assert (cap["n"], cap["utilized_mean"], cap["unused_mean"]) == (3, 0.5, 0.25)
    assert cap["lost_mean"] == 0.25
    assert (cap["failed_mean"], cap["goodput_mean"]) == (0.0, 0.5)
    aridor = _one(tables["capacity"], experiment="aridor", machine="torus-links",
                  offered_load=0.6, p_fat=0.0, p_torus=1.0)
    # seed 3's run lost 1/16 of the capacity to failed units, and that much goodput
    assert aridor["failed_mean"] == pytest.approx(0.0625 / 3)
    assert aridor["utilized_mean"] + aridor["unused_mean"] + aridor["lost_mean"] + \
        aridor["failed_mean"] == pytest.approx(1.0)
    assert aridor["goodput_mean"] == pytest.approx(aridor["utilized_mean"] - 0.0625 / 3)
    wait = _one(tables["wait_slowdown"], experiment="krevat", machine="torus",
                policy="migration", runtime_scale=1.2)
    # wait = 3600 (1 + 1 + 1) seed: mean 21600, std 10800; bsld = 4 + seed
    assert wait["mean_wait_s_mean"] == 21600.0
    assert wait["mean_wait_s_ci95"] == pytest.approx(T_975_2 * 10800 / math.sqrt(3), rel=1e-6)
    assert wait["mean_bsld_mean"] == 6.0
    assert wait["mean_bsld_ci95"] == pytest.approx(T_975_2 / math.sqrt(3), rel=1e-6)
    assert wait["utilization_mean"] == 0.5 + 0.125 + 0.0625


def test_write_tables_deterministic(tmp_path: Path) -> None:
    store = build_store(tmp_path / "a")
    first = write_tables(store, tmp_path / "out1")
    again = write_tables(store, tmp_path / "out1")
    reversed_store = build_store(tmp_path / "b", reverse=True)
    other = write_tables(reversed_store, tmp_path / "out2")
    names = [p.name for p in first]
    assert names == [f"{t}.{e}" for t in TABLES
                     for e in ("parquet", "csv", "columns.csv", "md")]
    assert [p.name for p in other] == names and again == first
    assert stamp_problems(tmp_path / "out1") == []  # stamped: what the archive checks
    for a, b in zip(first, other, strict=True):
        if a.suffix == ".parquet":
            ta, tb = pl.read_parquet(a), pl.read_parquet(b)
            assert ta.equals(tb) and ta.height > 0
        else:
            assert a.read_bytes() == b.read_bytes()
    assert not list((tmp_path / "out1").glob(".*.tmp"))


def test_tables_written_again_leave_none_of_the_earlier_ones(tmp_path: Path) -> None:
    """A table an earlier run made (its stamp lists it) is removed when the tables are
    written again; a file no run made is left, and the stamp does not claim it."""
    store = build_store(tmp_path / "a")
    out = tmp_path / "out"
    write_tables(store, out)
    (out / "retired.csv").write_text("a\n1\n")
    write_stamp(out, made_files(out))  # as if an earlier run had made it
    (out / "notes.txt").write_text("mine\n")
    write_tables(store, out)
    assert not (out / "retired.csv").exists() and (out / "notes.txt").exists()
    assert stamp_problems(out) == [f"{out / 'notes.txt'}: present but not made with the rest"]


def test_markdown_is_readable(tmp_path: Path) -> None:
    """One section per experiment; what is the same in every row stated once above it;
    machine and policy names explained; short headers with units; rounded results; lines
    a person can read."""
    write_tables(build_store(tmp_path / "store"), tmp_path / "out")
    text = (tmp_path / "out" / "utilization.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "# utilization"
    assert max(len(line) for line in lines) <= 160
    krevat = text.split("## krevat\n", 1)[1].split("\n## ", 1)[0]
    assert "Every row: workload = nasa, first_jobs = 10000 jobs.\n" in krevat
    assert "- torus = torus:4x4x8" in krevat and "- flat = flat:128" in krevat
    assert ("- migration-always = migration start_delay_s=1 fn_tor=0 fn_max=1 "
            "migrate_when=changed equal_layout=apply") in krevat
    table = [line for line in krevat.splitlines() if line.startswith("|")]
    assert [cell.strip() for cell in table[0].split("|")[1:-1]] == [
        "machine", "policy", "runtime_scale", "n", "utilization", "sd", "± 95% CI",
        "offered load"]
    assert "Not shown, the same in every row (as printed) as another column: carried load as " \
        "utilization." in " ".join(krevat.split())
    assert len({len(line) for line in table}) == 1  # aligned columns
    assert re.search(r" 0\.625 \|", krevat)  # results: fractions to 3 decimals
    assert re.search(r"\| +1\.2 \|", krevat)  # parameters (runtime_scale): shortest form
    assert "machine_spec" not in text and "fn_tor (" not in text
    wait = (tmp_path / "out" / "wait_slowdown.md").read_text()
    assert "mean wait (s)" in wait and "21600.0" in wait
    assert pl.read_csv(tmp_path / "out" / "utilization.csv").height == 28
    units = pl.read_csv(tmp_path / "out" / "utilization.columns.csv")
    assert units.filter(pl.col("column") == "utilization_ci95").row(0) == (
        "utilization_ci95", "fraction", units["meaning"][units["column"].to_list().index(
            "utilization_ci95")])
    assert set(units["column"]) == set(pl.read_csv(tmp_path / "out" / "utilization.csv").columns)


def _section(text: str, experiment: str) -> str:
    return text.split(f"## {experiment}\n", 1)[1].split("\n## ", 1)[0]


def test_every_row_states_only_settings_that_matter(tables: dict[str, pl.DataFrame]) -> None:
    """A transform at its default in every row (skip_jobs 0, processors_per_unit 1) leaves
    the jobs as they are and is not stated; one at another value (first_jobs, Aridor's
    processors_per_unit 4) is; a setting varying across the rows is a column."""
    from simcore.report.tables import markdown

    text = markdown("utilization", tables["utilization"])
    krevat, aridor = _section(text, "krevat"), _section(text, "aridor")
    every = next(line for line in krevat.splitlines() if line.startswith("Every row:"))
    assert every == "Every row: workload = nasa, first_jobs = 10000 jobs."
    assert "processors_per_unit = 4 procs/unit" in aridor and "skip_jobs" not in text
    header = next(line for line in aridor.splitlines() if line.startswith("|"))
    assert "| offered_load | p_fat | p_torus |" in header


def test_offered_and_carried_load_columns(tables: dict[str, pl.DataFrame]) -> None:
    """The utilization table's loads say which they are: the offered load measured on the
    jobs (not shown where it equals the offered_load target as printed) and the carried
    load; no "achieved" or "accepted" anywhere in the Markdown."""
    from simcore.report.tables import TABLE_DEFINITIONS, markdown

    row = _one(tables["utilization"], experiment="aridor", machine="bgl", offered_load=0.6,
               p_fat=0.0, p_torus=0.0)
    assert row["offered_load_actual_mean"] == 0.6 and row["accepted_load_mean"] == 0.6
    text = "".join(markdown(name, tables[name]) for name in TABLE_DEFINITIONS)
    assert "achieved" not in text and "accepted" not in text
    aridor = _section(markdown("utilization", tables["utilization"]), "aridor")
    assert "as another column: offered load as offered_load, carried load as utilization." \
        in " ".join(aridor.split())
    assert "carried load" in markdown("wait_slowdown", tables["wait_slowdown"])


def test_intervals_only_on_three_runs_or_more(tables: dict[str, pl.DataFrame]) -> None:
    """As the figures draw no bars below three runs per point, the tables print no
    interval on rows of fewer runs, and say so once; rows of three runs keep theirs; the
    blank-cells sentence comes only with blank cells."""
    from simcore.report.tables import markdown

    two = tables["utilization"].filter(pl.col("experiment") == "aridor").with_columns(
        n=pl.lit(2, dtype=pl.Int64))
    text = markdown("utilization", two)
    assert text.count("No confidence intervals: n = 2 runs per row, too few for an "
                      "interval") == 1
    assert "± 95% CI" not in text.split("## aridor", 1)[1] and "0.078" not in text
    assert "Blank cells" not in text
    three = markdown("utilization", tables["utilization"].filter(
        pl.col("experiment") == "aridor"))
    assert "| ± 95% CI |" in three and " 0.078 |" in three
    assert "too few" not in three and "Blank cells" not in three
    mixed = markdown("utilization", pl.concat([two.head(1), tables["utilization"].filter(
        pl.col("experiment") == "aridor").slice(1)]))
    assert "Confidence intervals blank on the rows of n = 2 runs" in mixed
    migrations = markdown("migrations", tables["migrations"])
    assert "Blank cells" in migrations  # bm has no always-migrate runs: max successful blank


def test_empty_store_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SimcoreError, match=r"no results under .*store"):
        write_tables(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_experiment_without_migrations(tmp_path: Path) -> None:
    paths = write_tables(build_store(tmp_path, experiments=("aridor",)), tmp_path / "out")
    assert len(paths) == 4 * len(TABLES)  # every table, even the empty one: outputs stay fixed
    assert (tmp_path / "out" / "migrations.md").read_text().endswith("(no rows)\n")
    assert pl.read_csv(tmp_path / "out" / "migrations.csv").height == 0
    assert pl.read_parquet(tmp_path / "out" / "migrations.parquet").height == 0


def test_a_result_printed_like_a_fixed_setting_is_shown(tmp_path: Path) -> None:
    """A setting the same in every row is stated above the grid; a result that happens to
    print like it (a 95% CI of 0.001 beside arrival_shake_s = 0.001 s) is still a column
    of the grid, not named as its copy."""
    from simcore.report.tables import markdown
    from simcore.sweep.store import read_summaries

    table = aggregate(read_summaries(build_store(tmp_path / "store")))["utilization"]
    krevat = table.filter(pl.col("experiment") == "krevat").with_columns(
        pl.lit(0.001).alias("utilization_ci95"), pl.lit(0.001).alias("arrival_shake_s"),
        pl.lit(30).cast(pl.Int64).alias("n"))
    text = markdown("utilization", krevat)
    assert "arrival_shake_s = 0.001 s" in text
    header = next(line for line in text.splitlines() if line.startswith("|"))
    assert "± 95% CI" in header
    assert "95% CI as" not in " ".join(text.split())
