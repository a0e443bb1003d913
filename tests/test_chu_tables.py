"""The response table (Chu's accuracy target) and Chu's figures, on a hand-made store."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from simcore.base.confidence import t_quantile
from simcore.report.plots import write_figures
from simcore.report.tables import aggregate, write_tables
from simcore.sweep.store import read_summaries, shard_dir, summary_table, write_table

T_95_2 = 2.919986  # Student t, 0.95 quantile, 2 degrees of freedom (3 seeds)


def _row(allocator: str, queues: int, load: float, seed: int) -> dict[str, object]:
    """Responses 100 + 8 (seed - 2) under BL (half-width 2.92 x 8 / sqrt 3 = 13.5: 13.5%
    of 100, missing the target) and 100 + 0.5 (seed - 2) under BDI (0.84%: met); MQ's
    response falls with Q."""
    spread = 8.0 if allocator == "bl" else 0.5
    return {"seed": seed, "machine_spec": f"mesh:32x32 allocator={allocator}",
            "scheduler": "mq", "queues": queues, "scan": "down", "criterion": "processors",
            "blocking": False, "start_delay_s": 0.0, "offered_load": load,
            "warmup_jobs": 1000, "measured_jobs": 49000,
            "mean_response_s": 100.0 * load / queues**0.1 + spread * (seed - 2),
            "sd_response_s": 90.0, "median_response_s": 80.0, "busy_fraction": load,
            "mean_queue_length": 3.5,
            "mean_response_s_q1": 50.0, "mean_response_s_q4": 200.0}


def build(root: Path) -> Path:
    for allocator in ("bl", "bdi"):
        for queues in (1, 4, 32):
            rows = [_row(allocator, queues, load, seed) for load in (0.5, 0.7)
                    for seed in (1, 2, 3)]
            for i, row in enumerate(rows):
                row["run_key"] = f"{allocator}-{queues}-{i}"
            names = {"experiment": "chu", "workload": "uniform", "machine": allocator,
                     "policy": f"mq-q{queues}"}
            write_table(summary_table(rows), shard_dir(root, "test", names) / "summary.parquet",
                        {"shard": {"dataset": "test", **names}})
    return root / "test" / "store"


def test_response_table_flags_cells_that_miss_the_target(tmp_path: Path) -> None:
    tables = aggregate(read_summaries(build(tmp_path)))
    table = tables["response"]
    assert table.height == 12  # 2 allocators x 3 Q x 2 loads
    bl = table.filter((pl.col("machine") == "bl") & (pl.col("queues") == 1)
                      & (pl.col("offered_load") == 0.5)).row(0, named=True)
    assert t_quantile(0.95, 2) == pytest.approx(T_95_2, abs=5e-7)
    assert bl["n"] == 3 and bl["mean_response_s_mean"] == pytest.approx(50.0)
    assert bl["ci_level"] == 0.90  # Chu's level for Chu's queue disciplines
    assert bl["mean_response_s_ci"] == pytest.approx(T_95_2 * 8.0 / math.sqrt(3), rel=1e-6)
    assert bl["ci_relative"] == pytest.approx(bl["mean_response_s_ci"] / 50.0)
    assert bl["meets_target"] is False
    assert bl["runs_for_target"] == math.ceil(3 * (bl["ci_relative"] / 0.05) ** 2)
    assert bl["mean_queue_length_mean"] == 3.5
    sizes = tables["response_by_size"].filter(
        (pl.col("machine") == "bl") & (pl.col("queues") == 1)
        & (pl.col("offered_load") == 0.5)).row(0, named=True)
    assert sizes["busy_fraction_mean"] == 0.5
    assert sizes["mean_response_s_q2_mean"] is None and sizes["mean_response_s_q4_mean"] == 200.0
    bdi = table.filter(pl.col("machine") == "bdi")
    assert bdi["meets_target"].all() and not table.filter(
        pl.col("machine") == "bl")["meets_target"].any()


def test_chu_figures(tmp_path: Path) -> None:
    write_tables(build(tmp_path / "results"), tmp_path / "tables")
    paths = write_figures(tmp_path / "tables", tmp_path / "figures")
    names = [f"{p.parent.name}/{p.name}" for p in paths]
    assert [n for n in names if n.startswith("chu/response-")] == [
        f"chu/{f}.{e}" for f in ("response-vs-load", "response-ci-vs-load", "response-vs-queues")
        for e in ("png", "svg")]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_response_ci_figure_keeps_fast_series_apart(tmp_path: Path) -> None:
    """Response times an order of magnitude apart (FCFS beside backfilling) share a log
    axis, on which the faster series do not lie on the zero line."""
    import matplotlib

    from simcore.report.plots import STYLE, response_ci_vs_load

    rows = aggregate(read_summaries(build(tmp_path)))["response"]
    with matplotlib.style.context(STYLE, after_reset=True):
        fig = response_ci_vs_load("chu", rows)
    assert [ax.get_yscale() for ax in fig.axes] == ["log"]
    assert "log scale" in fig.axes[0].get_ylabel()


def test_two_runs_give_no_interval_and_no_precision_verdict(tmp_path: Path) -> None:
    """At n = 2 neither the response figure (no bars, no hollow markers) nor the table (no
    interval, target not judged) rests anything on an interval 12.7 standard errors wide;
    at n = 3 both do."""
    import matplotlib

    from simcore.report.plots import STYLE, response_ci_vs_load
    from simcore.report.tables import markdown

    summaries = read_summaries(build(tmp_path))
    for seeds, judged in (((1, 2), False), ((1, 2, 3), True)):
        rows = aggregate(summaries.filter(pl.col("seed").is_in(seeds)))["response"]
        text = markdown("response", rows).replace("\n", " ")  # sentences unwrapped
        assert ("No confidence intervals: n = 2 runs per row" in text) is not judged
        assert ("not judged, fewer than 3 runs per row" in text) is not judged
        assert ("| ± CI (s) |" in text and "| CI level |" in text) is judged
        with matplotlib.style.context(STYLE, after_reset=True):
            fig = response_ci_vs_load("chu", rows)
        hollow = [line for line in fig.axes[0].get_lines()
                  if line.get_markerfacecolor() == "white" and len(line.get_xdata())]
        assert bool(hollow) is judged  # bl misses the target
        assert ("hollow:" in fig.get_suptitle()) is judged


def test_intervals_are_95_percent_but_for_chus_schedulers(tmp_path: Path) -> None:
    """The same runs under a scheduler that is not Chu's: the response table's interval is
    95%, as the utilization table's is, not Chu's 90%; the Markdown says whether the
    precision target is met."""
    from simcore.report.tables import markdown

    rows = [{**_row("bl", 1, 0.5, seed), "scheduler": "backfill", "queues": None,
             "scan": None, "criterion": None, "blocking": None, "machine_spec": "flat:1024",
             "utilization": 0.5 + 0.01 * seed, "run_key": f"k{seed}"} for seed in (1, 2, 3)]
    names = {"experiment": "e", "workload": "w", "machine": "flat", "policy": "backfill"}
    write_table(summary_table(rows), shard_dir(tmp_path, "t", names) / "summary.parquet",
                {"shard": {"dataset": "t", **names}})
    tables = aggregate(read_summaries(tmp_path / "t" / "store"))
    response = tables["response"].row(0, named=True)
    utilization = tables["utilization"].row(0, named=True)
    t95 = t_quantile(0.975, 2)
    assert response["ci_level"] == 0.95
    assert response["mean_response_s_ci"] == pytest.approx(t95 * 8.0 / math.sqrt(3), rel=1e-9)
    assert utilization["utilization_ci95"] == pytest.approx(t95 * 0.01 / math.sqrt(3), rel=1e-6)
    text = markdown("response", tables["response"])
    assert "met in 0 of 1 rows, NOT met in 1: those rows rest on 3 runs" in " ".join(
        text.split())


@pytest.fixture()
def chu_figures(tmp_path: Path) -> list:
    from tests.test_plots import _drawn

    write_tables(build(tmp_path / "results"), tmp_path / "tables")
    drawn = _drawn(tmp_path / "tables")
    assert any(name.startswith("chu/response") for name, _ in drawn)
    return drawn


def test_chu_figures_have_distinct_panel_titles(chu_figures: list) -> None:
    for name, fig in chu_figures:
        titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
        assert len(titles) == len(set(titles)), (name, titles)


def test_chu_figures_give_times_in_hours(tmp_path: Path) -> None:
    from tests.test_plots import _drawn

    write_tables(build(tmp_path / "results"), tmp_path / "tables")
    drawn = _drawn(tmp_path / "tables")
    assert any(name.startswith("chu/response") for name, _ in drawn)
    for name, fig in drawn:
        for ax in fig.axes:
            assert "response" not in ax.get_ylabel() or "(h" in ax.get_ylabel(), (
                name, ax.get_ylabel())
            assert ax.yaxis.get_offset_text().get_text() == "", name
