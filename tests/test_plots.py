"""Figures: the right figures for each experiment, byte-identical on a second run, and
readable files (PNG at DPI, SVG without dates)."""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib.colors
import polars as pl
import pytest

from simcore.base.errors import SimcoreError
from simcore.base.stamps import stamp_problems
from simcore.report.plots import DPI, FIGURES, _pick, _styles, write_figures
from simcore.report.tables import write_tables
from simcore.sweep.store import write_table
from tests.test_tables import build_store


@pytest.fixture(scope="module")
def tables_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plots")
    store = build_store(root / "results", experiments=("krevat", "aridor"))
    write_tables(store, root / "tables")
    return root / "tables"


@pytest.fixture(scope="module")
def figures(tables_dir: Path) -> list[Path]:
    return write_figures(tables_dir, tables_dir.parent / "figures")


def test_figures_per_experiment(figures: list[Path]) -> None:
    # aridor has no migration or bm policy (no migrations figure) and no job waits (no
    # wait figure: zero on a log scale); krevat has them all but the response figures (no
    # response statistics in this store: tests/test_chu_tables.py and
    # tests/test_timeshare.py draw those)
    # file names follow the x axis: krevat sweeps the runtime scale c, aridor the load
    # carried-vs-load needs a sweep of four offered loads or more, which neither has
    # (tests/test_timeshare.py draws it)
    skipped = {"aridor": {"migrations-vs-{axis}", "wait-vs-utilization", "carried-vs-load"},
               "krevat": {"carried-vs-load"}}
    chu = {"response-vs-{axis}", "response-ci-vs-{axis}", "response-vs-queues",
           "ranking-map"}
    axes = {"aridor": "load", "krevat": "runtime-scale"}
    expected = [f"{experiment}/{figure.format(axis=axes[experiment])}.{ext}"
                for experiment in ("aridor", "krevat")
                for figure in FIGURES for ext in ("png", "svg")
                if figure not in chu and figure not in skipped[experiment]]
    assert [f"{p.parent.name}/{p.name}" for p in figures] == expected
    assert all(p.is_file() and p.stat().st_size > 1000 for p in figures)
    assert not list(figures[0].parent.glob(".*.tmp"))


def test_png_and_svg_files(figures: list[Path]) -> None:
    png = next(p for p in figures if p.parts[-2:] == ("krevat", "capacity.png")).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"pHYs" in png  # physical size chunk carries the dpi
    ppm = struct.unpack(">I", png[png.index(b"pHYs") + 4:][:4])[0]
    assert round(ppm * 0.0254) == DPI
    svg = next(p for p in figures if p.parts[-2:] == ("krevat", "migrations-vs-runtime-scale.svg"))
    text = svg.read_text()
    assert "<dc:date>" not in text and text.lstrip().startswith("<?xml")


def test_processes_draw_the_same_figures(tables_dir: Path, figures: list[Path],
                                         tmp_path: Path) -> None:
    """Two processes drawing experiments side by side write the same files, bytes and all,
    and return them in the same order as one."""
    experiments = {p.parts[-2] for p in figures}
    assert len(experiments) >= 2, "the fixture should hold several experiments"
    again = write_figures(tables_dir, tmp_path / "figures", jobs=2)
    assert [p.parts[-2:] for p in again] == [p.parts[-2:] for p in figures]
    for first, second in zip(figures, again, strict=True):
        assert first.read_bytes() == second.read_bytes(), second
    assert stamp_problems(tmp_path / "figures") == []  # stamped: what the archive checks


def test_figures_are_deterministic(tables_dir: Path, figures: list[Path],
                                  tmp_path: Path) -> None:
    # aridor's utilization and capacity again (two figures keep the test fast; panels by
    # p_fat, curves by p_torus, null p_fat of no machine): the same PNG and SVG bytes.
    # The other tables are empty here, so their figures are not drawn.
    for name in ("utilization", "capacity", "wait_slowdown", "migrations", "response"):
        table = pl.read_parquet(tables_dir / f"{name}.parquet")
        keep = name in ("utilization", "capacity")
        write_table(table.filter((pl.col("experiment") == "aridor") & keep).to_arrow(),
                    tmp_path / "t" / f"{name}.parquet")
    again = write_figures(tmp_path / "t", tmp_path / "figures")
    assert [p.name for p in again] == [f"{f}.{e}" for f in ("utilization-vs-load",
                                       "capacity") for e in ("png", "svg")]
    first = {p.parts[-2:]: p.read_bytes() for p in figures}
    for path in again:
        assert path.read_bytes() == first[path.parts[-2:]], path.name


def test_error_bars_only_with_three_runs_or_more() -> None:
    from simcore.report.plots import _dodge, _error_bars

    assert _error_bars(pl.DataFrame({"n": [3, 4]})) == (
        True, "bars: 95% confidence intervals (Student t), n = 3-4 runs per point")
    drawn, note = _error_bars(pl.DataFrame({"n": [2, 2]}))
    assert not drawn and note.startswith("no error bars: n = 2 runs per point")
    offsets = [_dodge(i, 3, 0.5) for i in range(3)]
    assert offsets == pytest.approx([-0.0125, 0.0, 0.0125]), "spread over 5% of the axis"


def test_pick_loads() -> None:
    assert _pick([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    values = [0.6 + 0.1 * i for i in range(11)]
    assert _pick(values) == [values[i] for i in (0, 2, 4, 6, 8, 10)]


def test_missing_tables_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SimcoreError, match="missing result table"):
        write_figures(tmp_path, tmp_path / "figures")


def test_parameters_varying_within_a_workload_get_panels_not_series():
    """Workloads that differ only in processors_per_unit (CTC / 4 vs SDSC 1:1) sit in
    separate panels and are not split further by it; p_torus, varying within each
    workload, gets panels of its own: a curve is one machine x policy, so the legend
    encodes no parameter."""
    from simcore.report.plots import _panels, _series
    from simcore.report.tables import CONFIG_KEYS

    rows = pl.DataFrame([
        {**dict.fromkeys(CONFIG_KEYS), "experiment": "a", "workload": w, "machine": "bgl",
         "policy": "backfill", "processors_per_unit": ppu, "p_torus": pt}
        for w, ppu in (("ctc", 4), ("sdsc", 1)) for pt in (0.0, 1.0)])
    assert _series(rows) == [{"machine": "bgl", "policy": "backfill"}]
    assert [title for title, _ in _panels(rows)] == [
        "ctc, p_torus=0", "ctc, p_torus=1", "sdsc, p_torus=0", "sdsc, p_torus=1"]


def _drawn(tables_dir: Path) -> list[tuple[str, object]]:
    """(experiment/figure, Figure) of every figure the test tables support."""
    import matplotlib.style

    from simcore.report.plots import STYLE

    out = []
    with matplotlib.style.context(STYLE, after_reset=True):
        for name, (table, draw, _) in FIGURES.items():
            rows = pl.read_parquet(tables_dir / f"{table}.parquet")
            for experiment in sorted(set(rows["experiment"].to_list())):
                fig = draw(experiment, rows.filter(pl.col("experiment") == experiment))
                if fig is not None:
                    fig.canvas.draw()
                    out.append((f"{experiment}/{name}", fig))
    return out


@pytest.fixture(scope="module")
def drawn(tables_dir: Path) -> list[tuple[str, object]]:
    figures = _drawn(tables_dir)
    assert len(figures) >= 8
    return figures


def test_every_figure_gives_the_runs_per_point(drawn) -> None:
    for name, fig in drawn:
        assert "n = " in fig.get_suptitle(), name


def test_legends_encode_no_parameter(drawn) -> None:
    """A curve is one machine x policy; p_fat, p_torus and the like get panels."""
    for name, fig in drawn:
        for legend in fig.legends:
            labels = [t.get_text() for t in legend.get_texts()]
            assert not [label for label in labels if "=" in label.replace(" = ", "")], (
                name, labels)


def test_no_curve_hides_another(drawn) -> None:
    """Not the always-migrate maximum under the always-migrate curve, nor two machines with
    the same numbers: equal curves are drawn once (and named together)."""
    for name, fig in drawn:
        for ax in fig.axes:
            data = [tuple(map(tuple, line.get_xydata())) for line in ax.get_lines()
                    if len(line.get_xydata()) > 1]
            assert len(data) == len(set(data)), f"{name}: a curve hides another"


def test_no_axis_carries_an_offset(drawn) -> None:
    for name, fig in drawn:
        for ax in fig.axes:
            assert ax.yaxis.get_offset_text().get_text() == "", name


def test_no_two_series_of_a_figure_share_colour_and_marker():
    # modern's 12 machine x policy series once drew bgl and torus-8x4x4 alike
    styles = [(s["color"], s["marker"]) for s in _styles([{}] * 110)]
    assert len(set(styles)) == 110


def ranking_rows(means: dict[tuple[float, float], dict[str, float]]) -> pl.DataFrame:
    """A response table of the four ranked schedulers at offered load 0.8: `means` by
    (switch cost, largest granularity); EASY's and spin-block's rows, which have no switch
    cost, hold the mean of the first switch cost given for their range."""
    rows, seen = [], set()
    for (cost, high), by_scheduler in means.items():
        for scheduler, mean in by_scheduler.items():
            switched = scheduler in ("gang", "fcs")
            if not switched and (scheduler, high) in seen:
                continue
            seen.add((scheduler, high))
            rows.append({"experiment": "x", "scheduler": scheduler, "offered_load": 0.8,
                         "switch_cost_s": cost if switched else None,
                         "bsp_granularity_min_s": 1e-3, "bsp_granularity_max_s": high,
                         "mean_response_s_mean": mean, "n": 3})
    return pl.DataFrame(rows)


def test_ranking_map_classifies_each_cell_by_the_papers_ranking() -> None:
    """Cells: FCS first and EASY last (the paper's ranking), FCS first only, FCS not first;
    EASY and spin-block, without a switch cost, count in every column of their range."""
    from matplotlib.patches import Rectangle

    from simcore.report.plots import RANKING_CLASSES, ranking, ranking_map

    assert ranking({"fcs": 1.0, "spin-block": 2.0, "gang": 3.0, "backfill": 4.0}) == (
        "F < S < G < E", 0)
    assert ranking({"fcs": 1.0, "spin-block": 2.0, "gang": 5.0, "backfill": 4.0}) == (
        "F < S < E < G", 1)
    assert ranking({"fcs": 3.0, "spin-block": 2.0, "gang": 1.0, "backfill": 4.0}) == (
        "G < S < F < E", 2)
    rows = ranking_rows({
        (0.0, 1.0): {"backfill": 50.0, "spin-block": 40.0, "gang": 45.0, "fcs": 30.0},
        (0.01, 1.0): {"backfill": 50.0, "spin-block": 40.0, "gang": 60.0, "fcs": 35.0},
        (0.0, 0.1): {"backfill": 50.0, "spin-block": 20.0, "gang": 45.0, "fcs": 30.0},
        (0.01, 0.1): {"backfill": 50.0, "spin-block": 20.0, "gang": 70.0, "fcs": 10.0}})
    fig = ranking_map("x", rows)
    assert fig is not None
    ax = fig.axes[0]
    cells = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text()
             for t in ax.texts}
    assert cells == {(0, 0): "S < F < G < E", (1, 0): "F < S < E < G",
                     (0, 1): "F < S < G < E", (1, 1): "F < S < E < G"}
    colours = {(round(p.get_x() + 0.5), round(p.get_y() + 0.5)): p.get_facecolor()
               for p in ax.patches if isinstance(p, Rectangle)}
    expected = {(0, 0): 2, (1, 0): 1, (0, 1): 0, (1, 1): 1}
    for cell, kind in expected.items():
        assert colours[cell] == pytest.approx(
            matplotlib.colors.to_rgba(RANKING_CLASSES[kind][1])), cell
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 ms – 100 ms",
                                                            "1 ms – 1 s (default)"]
    assert "offered load 0.8" in fig.get_suptitle() and "n = 3" in fig.get_suptitle()
    assert ranking_map("x", rows.filter(pl.col("scheduler") != "gang")) is None
    assert ranking_map("x", pl.concat([rows, rows])) is None  # two rows in a cell
