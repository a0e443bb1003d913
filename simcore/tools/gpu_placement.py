"""The placement comparison of the GPU-rack study (`modern-gpu-placement` in
config/papers.yaml): Slurm's block and tree rules and Kueue's TAS on the same racks, beside
the flat machine, under one admission (EASY) and under Kueue's own (BestEffortFIFO), with
cross-rack dilation d swept.

Each run's placement is read back from its machine spec text: `flat`, `block`, `tree`,
`kueue-required` or `kueue-preferred` (the request of `tas_request`), and its d. Runs of
one setting (workload, offered load, admission, placement, d) are reduced to a mean and a
95% half-width over seeds; the figure puts each placement's mean wait against its mean
racks spanned per job, a panel per d.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from simcore.base.confidence import half_width
from simcore.tools.gpu_racks import cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EXPERIMENT = "modern-gpu-placement"
PLACEMENTS = ("flat", "block", "tree", "kueue-required", "kueue-preferred")
ADMISSIONS = {"aggressive-backfill": "EASY", "best-effort-fifo": "BestEffortFIFO"}
METRICS = ("utilization", "mean_wait_s", "mean_bsld", "one_block_share",
           "blocks_spanned_mean", "refused_jobs")
_TOKEN = re.compile(r"(\w+)=(\S+)")
_NAMES = {"slurm-block": "block", "slurm-tree": "tree"}
_LOAD = 0.9  # the figure's offered load
_COLOURS = dict(zip(PLACEMENTS, ("black", "tab:blue", "tab:green", "tab:red", "tab:orange"),
                    strict=True))


def placement(spec: str) -> dict[str, object]:
    """A run's placement and dilation d from its machine spec text."""
    options = dict(_TOKEN.findall(spec))
    if spec.startswith("flat:"):
        name = "flat"
    elif options.get("allocator") == "kueue-tas":
        name = f"kueue-{options.get('tas_request', 'preferred')}"
    else:
        name = _NAMES[options.get("allocator", "slurm-block")]
    return {"placement": name, "dilation": float(options.get("block_dilation", 0.0))}


def placement_rows(summaries: pl.DataFrame) -> pl.DataFrame:
    """One row per setting of the experiment's runs: runs, mean and 95% half-width of each
    of METRICS."""
    runs = summaries.filter(pl.col("experiment") == EXPERIMENT)
    if runs.is_empty():
        return pl.DataFrame()
    runs = runs.with_columns(pl.col("policy").replace_strict(ADMISSIONS).alias("admission"))
    runs = pl.concat([runs, pl.DataFrame([placement(s) for s in runs["machine_spec"]])],
                     how="horizontal")
    keys = ["workload", "offered_load", "admission", "placement", "dilation"]
    rows = runs.group_by(keys, maintain_order=True).agg(
        pl.len().alias("runs"), *(pl.col(m).mean().alias(f"{m}_mean") for m in METRICS),
        *(pl.col(m).alias(f"{m}_values") for m in METRICS))
    rows = rows.with_columns(*(pl.col(f"{m}_values").map_elements(
        lambda v: half_width(v.to_list(), 0.95), return_dtype=pl.Float64).alias(f"{m}_ci95")
        for m in METRICS)).drop([f"{m}_values" for m in METRICS])
    order = {p: i for i, p in enumerate(PLACEMENTS)}
    first = {a: i for i, a in enumerate(ADMISSIONS.values())}
    return (rows.with_columns(pl.col("placement").replace_strict(order).alias("_order"),
                              pl.col("admission").replace_strict(first).alias("_first"))
            .sort(["workload", "offered_load", "_first", "dilation", "_order"])
            .drop("_order", "_first"))


def markdown(rows: pl.DataFrame) -> str:
    """The rows as Markdown tables, one per workload and offered load."""
    out = []
    for (workload, load), part in rows.group_by(["workload", "offered_load"],
                                                maintain_order=True):
        out += [f"**{workload}**, offered load {load:g}", "",
                "| admission | placement | d | n | utilization | wait (h) | bsld | one rack "
                "| racks spanned | refused |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in part.iter_rows(named=True):
            out.append(
                f"| {r['admission']} | {r['placement']} | {r['dilation']:g} | {r['runs']} | "
                f"{cell(r['utilization_mean'], None, 3)} | "
                f"{cell(r['mean_wait_s_mean'], None, 2, 1 / 3600)} | "
                f"{cell(r['mean_bsld_mean'], None, 0)} | "
                f"{cell(r['one_block_share_mean'], None, 2)} | "
                f"{cell(r['blocks_spanned_mean_mean'], None, 2)} | "
                f"{cell(r['refused_jobs_mean'], None, 0)} |")
        out.append("")
    return "\n".join(out)


def wait_figure(rows: pl.DataFrame) -> Figure | None:
    """Wait against placement quality per allocator: at each dilation d (a column) and
    workload (a row), each placement's mean wait against its mean racks spanned per job,
    a circle under EASY and a square under BestEffortFIFO; the flat machine's wait under
    each admission dashed."""
    from simcore.report.plots import figure_title, new_figure

    rows = rows.filter(pl.col("offered_load") == _LOAD)
    racks = rows.filter(pl.col("placement") != "flat")
    if racks.is_empty():
        return None
    workloads = racks["workload"].unique(maintain_order=True).to_list()
    dilations = sorted(racks["dilation"].unique().to_list())
    fig = new_figure(3.3 * len(dilations), 3.1 * len(workloads))
    axes = fig.subplots(len(workloads), len(dilations), squeeze=False, sharey="row")
    markers = dict(zip(ADMISSIONS.values(), ("o", "s"), strict=True))
    styles = dict(zip(ADMISSIONS.values(), ("--", ":"), strict=True))
    for r, workload in enumerate(workloads):
        flat = rows.filter((pl.col("workload") == workload) & (pl.col("placement") == "flat"))
        for c, d in enumerate(dilations):
            ax = axes[r][c]
            for row in flat.iter_rows(named=True):
                ax.axhline(row["mean_wait_s_mean"] / 3600, color=_COLOURS["flat"],
                           linestyle=styles[row["admission"]], linewidth=0.8,
                           label=f"flat, {row['admission']}")
            part = racks.filter((pl.col("workload") == workload) & (pl.col("dilation") == d))
            for row in part.iter_rows(named=True):
                ax.scatter(row["blocks_spanned_mean_mean"], row["mean_wait_s_mean"] / 3600,
                           color=_COLOURS[row["placement"]], marker=markers[row["admission"]],
                           s=22, label=f"{row['placement']}, {row['admission']}")
            ax.set_title(f"{workload}, d = {d:g}", fontsize=9)
            ax.set_xlabel("racks spanned per job (mean)")
            if c == 0:
                ax.set_ylabel("mean wait (h)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=5, fontsize=7, frameon=False)
    figure_title(fig, "Wait against placement quality on 64 racks of 18 nodes, per allocator",
                 f"(offered load {_LOAD:g}; a job spanning k racks runs 1 + d (k - 1) / k "
                 "times longer; one run per point)")
    return fig


def write_placement(summaries: pl.DataFrame, out: str | Path) -> list[Path]:
    """placement.csv, placement.md and the figure under `out`; nothing without runs of
    the experiment."""
    from simcore.base.atomic import atomic_write_bytes
    from simcore.report.plots import write_figure

    rows = placement_rows(summaries)
    if rows.is_empty():
        return []
    out = Path(out)
    atomic_write_bytes(out / "placement.csv", rows.write_csv().encode())
    atomic_write_bytes(out / "placement.md", markdown(rows).encode())
    return [out / "placement.csv", out / "placement.md",
            *write_figure(lambda: wait_figure(rows), out, "wait-vs-placement")]
