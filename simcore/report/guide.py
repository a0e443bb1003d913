"""The last lines of a workflow run: where a dataset's results are and what to open first."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from simcore.base import patterns
from simcore.report.plots import FIGURES
from simcore.report.tables import TABLES


def where_to_look(results: str | os.PathLike[str], dataset: str) -> str:
    """A few lines naming the dataset's directory under `results` and, of the files it
    holds, the first to open: the first table's Markdown digest, the first experiment's
    first figure, the reproduction report, and the archive; and whether the response
    times meet their precision target."""
    root = Path(results)
    tables = root / patterns.TABLES.format(dataset=dataset)
    figures = root / patterns.FIGURES.format(dataset=dataset)
    first = [tables / f"{name}.md" for name in TABLES]
    order = [f.split("{")[0] for f in FIGURES]
    pngs = sorted(figures.glob("*/*.png"), key=lambda p: (p.parent.name, next(
        (i for i, prefix in enumerate(order) if p.stem.startswith(prefix)), len(order)),
        p.stem))
    lines = [f"Results of dataset {dataset}: {root / dataset}/"]
    for path, what in (
            (next((p for p in first if p.is_file()), None),
             f"the tables as Markdown ({', '.join(TABLES)}; .csv and .parquet beside them)"),
            (pngs[0] if pngs else None,
             f"the first of {len(pngs)} figures (figures/<experiment>/<figure>.png and .svg)"),
            (root / patterns.REPRODUCTION.format(dataset=dataset),
             "the seed studies' published numbers beside this dataset's"),
            (root / patterns.ARCHIVE.format(dataset=dataset), "the dataset archive")):
        if path is not None and path.is_file():
            lines.append(f"  open {path}  {what}")
    response = tables / "response.parquet"
    if response.is_file():
        met = pl.read_parquet(response, columns=["meets_target"])["meets_target"].drop_nulls()
        if met.len():
            lines.append(f"  precision target of the mean response met in {int(met.sum())} of "
                         f"{met.len()} rows (tables/response.md says how many runs the "
                         "others need)")
    return "\n".join(lines)
