"""Figures: the right figures for each experiment, byte-identical on a second run, and
readable files (PNG at DPI, SVG without dates)."""

from __future__ import annotations

import struct
from pathlib import Path

import polars as pl
import pytest

from simcore.errors import SimcoreError
from simcore.plots import DPI, FIGURES, _pick, write_figures
from simcore.store import write_table
from simcore.tables import write_tables
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
    skipped = {"migrations-vs-load", "wait-vs-utilization"}
    chu = {"response-vs-load", "response-ci-vs-load", "response-vs-queues"}
    expected = [f"{experiment}/{figure}.{ext}" for experiment in ("aridor", "krevat")
                for figure in FIGURES for ext in ("png", "svg")
                if figure not in chu and (experiment == "krevat" or figure not in skipped)]
    assert [f"{p.parent.name}/{p.name}" for p in figures] == expected
    assert all(p.is_file() and p.stat().st_size > 1000 for p in figures)
    assert not list(figures[0].parent.glob(".*.tmp"))


def test_png_and_svg_files(figures: list[Path]) -> None:
    png = next(p for p in figures if p.parts[-2:] == ("krevat", "capacity.png")).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"pHYs" in png  # physical size chunk carries the dpi
    ppm = struct.unpack(">I", png[png.index(b"pHYs") + 4:][:4])[0]
    assert round(ppm * 0.0254) == DPI
    svg = next(p for p in figures if p.parts[-2:] == ("krevat", "migrations-vs-load.svg"))
    text = svg.read_text()
    assert "<dc:date>" not in text and text.lstrip().startswith("<?xml")


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
    from simcore.plots import _dodge, _error_bars

    assert _error_bars(pl.DataFrame({"n": [3, 4]})) == (
        True, "bars: 95% confidence intervals (Student t) over 3+ runs")
    drawn, note = _error_bars(pl.DataFrame({"n": [2, 3]}))
    assert not drawn and note.startswith("no error bars: 2 run(s) per point")
    offsets = [_dodge(i, 3, 0.5) for i in range(3)]
    assert offsets == [-0.005, 0.0, 0.005], "coinciding series spread over 2% of the axis"


def test_pick_loads() -> None:
    assert _pick([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    values = [0.6 + 0.1 * i for i in range(11)]
    assert _pick(values) == [values[i] for i in (0, 2, 4, 6, 8, 10)]


def test_missing_tables_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SimcoreError, match="missing result table"):
        write_figures(tmp_path, tmp_path / "figures")


def test_series_split_by_parameters_varying_within_a_workload():
    """Workloads that differ only in processors_per_unit (CTC / 4 vs SDSC 1:1) sit in
    separate panels; their lines must not also be split by it, but p_torus, varying within
    each workload, is a series of its own."""
    from simcore.plots import _series
    from simcore.tables import CONFIG_KEYS

    rows = pl.DataFrame([
        {**dict.fromkeys(CONFIG_KEYS), "experiment": "a", "workload": w, "machine": "bgl",
         "policy": "backfill", "processors_per_unit": ppu, "p_torus": pt}
        for w, ppu in (("ctc", 4), ("sdsc", 1)) for pt in (0.0, 1.0)])
    keys = _series(rows, exclude=())
    assert [(k["machine"], k["p_torus"]) for k in keys] == [("bgl", 0.0), ("bgl", 1.0)]
    assert all("processors_per_unit" not in k for k in keys)
