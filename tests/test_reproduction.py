"""The reproduction report: queries on the store, the published file's checks, sections."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simcore.base.errors import ConfigError
from simcore.report.reproduction import (
    copy_figures,
    evaluate,
    evaluate_seeds,
    has_runs,
    load_published,
    report,
)
from simcore.sweep.store import read_summaries
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


def test_a_query_has_runs_only_if_every_selection_has(runs):
    change = {"change": "utilization", "of": {"policy": "migration"},
              "over": {"policy": "fcfs"}, "where": TORUS}
    assert has_runs(runs, change)
    assert not has_runs(runs, {**change, "of": {"policy": "gang"}})
    assert not has_runs(runs, {**change, "where": {**TORUS, "workload": "sdsc"}})
    assert has_runs(runs, {"metric": "utilization", "where": TORUS})
    assert not has_runs(runs, {"metric": "utilization", "where": {"workload": "none"}})


def test_report_sections(tmp_path, runs):
    published = {"x": {
        "title": "A study", "did": "It did things.", "ours": "We did them too.",
        "experiments": ["krevat"], "figures": ["krevat/capacity.png"],
        "claims": [{"what": "saturation", "source": "p. 1", "paper": 0.6, "why": "Because.",
                    "query": {"max": "utilization", "where": {**TORUS, "policy": "fcfs"}}}]},
        "y": {"title": "Another", "did": "d", "ours": "o", "experiments": ["later"],
              "claims": []}}
    store = build_store(tmp_path)
    text = report(published, store)
    assert "## A study" in text and "**Our configuration.** We did them too." in text
    assert "| saturation | 0.600 (p. 1) | 0.625 | +0.025 (+4%) | Because. |" in text
    assert "![krevat/capacity.png](figures/krevat/capacity.png)" in text
    assert "*Not in this dataset (no section below): Another.*" in text
    assert "## Another" not in text
    assert report(published, store) == text


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
