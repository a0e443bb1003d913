"""The GPU-rack study (`modern-gpu`, `modern-gpu-dilation` in config/papers.yaml): its runs
reduced to tables and figures (`simcore blocks study`).

Each run's machine is read back from its spec text (`blocks:64x18 down_fraction=0.05
segment=16`): its segment policy (`flat` for the flat machine of the same nodes), how nodes
are unavailable (`none`; `static`, a down set of nodes; `rack`, a down set of racks;
`dynamic` and `rack-dynamic`, failures repaired) and the long-run unavailable share u (the
down set's probability, or repair / (MTBF + repair) of a failure domain), and its cross-block
dilation d. Runs of one setting (workload, offered load, machine) are reduced over seeds
to a mean and a 95% half-width. `topology_lost` is a block machine's lost capacity minus the
flat machine's under the same workload, load and unavailability: what the block rule costs
beyond what any machine loses; the analytic model's usable share
(`simcore.tools.block_capacity`) stands beside the static rows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from simcore.base.confidence import half_width
from simcore.tools.block_capacity import usable_capacity

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_TOKEN = re.compile(r"(\w+)=(\S+)")
EXPERIMENTS = ("modern-gpu", "modern-gpu-dilation")
METRICS = ("utilization", "lost", "failed", "goodput", "mean_wait_s", "mean_bsld",
           "one_block_share", "blocks_spanned_mean", "refused_jobs")
SETTING = ("workload", "offered_load", "segment", "mode", "unavailability", "dilation")
SEGMENTS = ("flat", "whole", "1", "4", "16", "18", "recommended")


def _machine(spec: str) -> dict[str, object]:
    """What a run's machine spec text says of the study's axes."""
    options = dict(_TOKEN.findall(spec))
    flat = spec.startswith("flat:")
    block = 1 if flat else int(spec.split(":", 1)[1].split()[0].split("x")[1])
    if "down_fraction" in options:
        rack = options.get("failure_domain") == "block"
        mode, share = ("rack" if rack else "static"), float(options["down_fraction"])
    elif "unit_mtbf_s" in options:
        rack = options.get("failure_domain") == "block"
        mtbf = float(options["unit_mtbf_s"]) / (block if rack else 1)
        repair = float(options.get("repair_s", 14400.0))
        mode, share = ("rack-dynamic" if rack else "dynamic"), round(repair / (mtbf + repair), 6)
    else:
        mode, share = "none", 0.0
    return {"segment": "flat" if flat else options.get("segment", "whole"), "mode": mode,
            "unavailability": share, "dilation": float(options.get("block_dilation", 0.0)),
            "block": block}


def study_rows(summaries: pl.DataFrame, experiment: str) -> pl.DataFrame:
    """One row per setting (SETTING) of the experiment's runs: runs, and the mean and 95%
    half-width over seeds of each of METRICS; `topology_lost` (mean) beside the flat
    machine's; `usable` the analytic model's share for static rows of a fixed segment."""
    runs = summaries.filter(pl.col("experiment") == experiment)
    if runs.is_empty():
        return pl.DataFrame()
    parsed = pl.DataFrame([_machine(s) for s in runs["machine_spec"].to_list()])
    runs = runs.with_columns(parsed)
    groups = runs.group_by(list(SETTING), maintain_order=True)
    rows = groups.agg(pl.len().alias("runs"), pl.col("block").first(),
                      *(pl.col(m).mean().alias(f"{m}_mean") for m in METRICS),
                      *(pl.col(m).alias(f"{m}_values") for m in METRICS))
    rows = rows.with_columns(*(pl.col(f"{m}_values").map_elements(
        lambda v: half_width(v.to_list(), 0.95), return_dtype=pl.Float64).alias(f"{m}_ci95")
        for m in METRICS)).drop([f"{m}_values" for m in METRICS])
    flat = rows.filter(pl.col("segment") == "flat").select(
        "workload", "offered_load", "mode", "unavailability",
        pl.col("lost_mean").alias("flat_lost"))  # racks compare with the nodes' flat rows
    rows = rows.with_columns(pl.col("mode").replace({"rack": "static",
                                                     "rack-dynamic": "dynamic"}).alias("flat_mode"))
    rows = rows.join(flat, left_on=["workload", "offered_load", "flat_mode", "unavailability"],
                     right_on=["workload", "offered_load", "mode", "unavailability"],
                     how="left").drop("flat_mode")
    usable = [usable_capacity(b, int(s), u) if m == "static" and s.isdigit() else None
              for b, s, m, u in zip(rows["block"], rows["segment"], rows["mode"],
                                    rows["unavailability"], strict=True)]
    order = {s: i for i, s in enumerate(SEGMENTS)}
    return (rows.with_columns((pl.col("lost_mean") - pl.col("flat_lost")).alias("topology_lost"),
                              pl.Series("usable", usable, dtype=pl.Float64),
                              pl.col("segment").replace_strict(order).alias("_order"))
            .sort(["workload", "offered_load", "mode", "unavailability", "dilation", "_order"])
            .drop("_order", "flat_lost"))


def cell(mean: float | None, ci: float | None, digits: int, scale: float = 1.0) -> str:
    """A table cell: the mean (times `scale`) to `digits` places, with its half-width."""
    if mean is None:
        return "-"
    text = f"{mean * scale:.{digits}f}"
    return text if ci is None or ci == 0 else f"{text} ± {ci * scale:.{digits}f}"


def markdown(rows: pl.DataFrame, load: float) -> str:
    """The rows at one offered load as Markdown tables, one per workload: utilization,
    lost (and the share of it beyond the flat machine's), failed, goodput, mean wait (h),
    bounded slowdown, jobs inside one base block, refused jobs, analytic usable share."""
    out = []
    for (workload,), part in rows.filter(pl.col("offered_load") == load).group_by(
            "workload", maintain_order=True):
        out += [f"**{workload}**, offered load {load:g}", "",
                "| segment | unavailable | u | d | n | utilization | lost | lost beyond flat "
                "| failed | goodput | wait (h) | bsld | one block | refused | usable (model) |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in part.iter_rows(named=True):
            out.append(
                f"| {r['segment']} | {r['mode']} | {100 * r['unavailability']:g}% | "
                f"{r['dilation']:g} | {r['runs']} | "
                f"{cell(r['utilization_mean'], r['utilization_ci95'], 3)} | "
                f"{cell(r['lost_mean'], r['lost_ci95'], 3)} | "
                f"{cell(r['topology_lost'], None, 3)} | "
                f"{cell(r['failed_mean'], None, 3)} | "
                f"{cell(r['goodput_mean'], r['goodput_ci95'], 3)} | "
                f"{cell(r['mean_wait_s_mean'], r['mean_wait_s_ci95'], 1, 1 / 3600)} | "
                f"{cell(r['mean_bsld_mean'], None, 0)} | "
                f"{cell(r['one_block_share_mean'], None, 2)} | "
                f"{cell(r['refused_jobs_mean'], None, 0)} | "
                f"{cell(r['usable'], None, 3)} |")
        out.append("")
    return "\n".join(out)


def write_study(summaries: pl.DataFrame, out: str | Path) -> list[Path]:
    """study.csv (every setting of both experiments), study.md (the tables at each offered
    load) and the figures (`simcore.report.plots`' GPU-rack figures) under `out`; nothing
    without runs of the experiments."""
    from simcore.base.atomic import atomic_write_bytes
    from simcore.report.plots import write_figure

    parts = {e: study_rows(summaries, e) for e in EXPERIMENTS}
    if all(p.is_empty() for p in parts.values()):
        return []
    rows = pl.concat([p.with_columns(pl.lit(e).alias("experiment")) for e, p in parts.items()
                      if not p.is_empty()], how="diagonal")
    out = Path(out)
    atomic_write_bytes(out / "study.csv", rows.write_csv().encode())
    text = []
    for experiment, part in parts.items():
        for load in sorted(part["offered_load"].unique().to_list()) if part.height else []:
            text += [f"### {experiment}, offered load {load:g}", "", markdown(part, load)]
    atomic_write_bytes(out / "study.md", "\n".join(text).encode())
    files = [out / "study.csv", out / "study.md"]
    for name, draw in FIGURES.items():
        files += write_figure(functools.partial(draw, rows), out, name)
    return files


_LOAD = 0.9  # the figures' offered load
_COLOURS = dict(zip(SEGMENTS, ("black", "tab:blue", "tab:orange", "tab:green", "tab:red",
                               "tab:purple", "tab:brown"), strict=True))
_MODES = {"static": "static down set of nodes"}


def _panels(rows: pl.DataFrame, y: str, label: str, title: str, note: str,
            scale: float = 1.0, log: bool = False,
            extra: Callable[[Axes, pl.DataFrame], None] | None = None) -> Figure | None:
    """y against unavailability (%), a panel per workload and unavailability mode at the
    figures' offered load, a line per segment policy (the no-unavailability rows at u = 0
    of every panel)."""
    from simcore.report.plots import figure_title, new_figure

    rows = rows.filter((pl.col("experiment") == EXPERIMENTS[0])
                       & (pl.col("offered_load") == _LOAD) & pl.col(y).is_not_null())
    if rows.is_empty():
        return None
    workloads = rows["workload"].unique(maintain_order=True).to_list()
    fig = new_figure(4.6 * len(workloads), 3.6 * len(_MODES))
    axes = fig.subplots(len(_MODES), len(workloads), squeeze=False, sharey=not log)
    for c, workload in enumerate(workloads):
        for r, (mode, name) in enumerate(_MODES.items()):
            ax = axes[r][c]
            part = rows.filter((pl.col("workload") == workload)
                               & pl.col("mode").is_in(["none", mode]))
            for segment in SEGMENTS:
                line = part.filter(pl.col("segment") == segment).sort("unavailability")
                if line.height:
                    ax.plot((100 * line["unavailability"]).to_list(),
                            (line[y] * scale).to_list(), marker="o", markersize=3,
                            color=_COLOURS[segment], label=segment)
            if extra is not None and mode == "static":
                extra(ax, part)
            ax.set_title(f"{workload}: {name}", fontsize=9)
            ax.set_xlabel("nodes unavailable (%)")
            ax.set_ylabel(label)
            if log:
                ax.set_yscale("log")
    axes[0][0].legend(fontsize=7, title="segment", title_fontsize=7)
    figure_title(fig, title, note)
    return fig


def _usable(ax: Axes, part: pl.DataFrame) -> None:
    """The analytic usable share of the static rows, dashed, in the segment's colour."""
    for segment in ("16", "18"):
        line = part.filter((pl.col("segment") == segment) & pl.col("usable").is_not_null()
                           ).sort("unavailability")
        if line.height:
            ax.plot((100 * line["unavailability"]).to_list(), line["usable"].to_list(),
                    linestyle="--", color=_COLOURS[segment], linewidth=1,
                    label=f"{segment}: model")


def capacity_figure(rows: pl.DataFrame) -> Figure | None:
    """How much of the machine each segment policy keeps busy as nodes become unavailable."""
    return _panels(rows, "utilization_mean", "utilization",
                   "Utilization against node unavailability, 64 racks of 18 nodes",
                   f"(offered load {_LOAD:g}, EASY; means over seeds; dashed: the analytic "
                   "model's usable share for segments 16 and 18, a ceiling)", extra=_usable)


def topology_figure(rows: pl.DataFrame) -> Figure | None:
    """What block placement costs beyond a flat machine of the same nodes."""
    return _panels(rows, "topology_lost", "lost capacity beyond flat",
                   "Capacity lost to topology: lost share minus the flat machine's",
                   f"(offered load {_LOAD:g}, same workload and unavailability; flat is 0)")


def wait_figure(rows: pl.DataFrame) -> Figure | None:
    """What users wait for it."""
    return _panels(rows, "mean_wait_s_mean", "mean wait (h, log)",
                   "Mean wait against node unavailability", f"(offered load {_LOAD:g})",
                   scale=1 / 3600, log=True)


def dilation_figure(rows: pl.DataFrame) -> Figure | None:
    """What placement buys when spanning racks slows jobs down: the share of jobs inside
    one rack and the mean wait against the dilation d."""
    from simcore.report.plots import figure_title, new_figure

    rows = rows.filter((pl.col("experiment") == EXPERIMENTS[1])
                       & (pl.col("offered_load") == _LOAD) & (pl.col("segment") != "flat"))
    if rows.is_empty():
        return None
    workloads = rows["workload"].unique(maintain_order=True).to_list()
    panels = (("one_block_share_mean", "jobs inside one rack", 1.0),
              ("mean_wait_s_mean", "mean wait (h)", 1 / 3600),
              ("utilization_mean", "utilization", 1.0))
    fig = new_figure(4.0 * len(panels), 3.2 * len(workloads))
    axes = fig.subplots(len(workloads), len(panels), squeeze=False)
    for r, workload in enumerate(workloads):
        for c, (y, label, scale) in enumerate(panels):
            ax = axes[r][c]
            for segment in SEGMENTS[1:]:
                line = rows.filter((pl.col("workload") == workload)
                                   & (pl.col("segment") == segment)).sort("dilation")
                ax.plot((100 * line["dilation"]).to_list(), (line[y] * scale).to_list(),
                        marker="o", markersize=3, color=_COLOURS[segment], label=segment)
            ax.set_title(workload, fontsize=9)
            ax.set_xlabel("cross-rack dilation d (%)")
            ax.set_ylabel(label)
    axes[0][0].legend(fontsize=7, title="segment", title_fontsize=7)
    figure_title(fig, "What placement buys: a job spanning k racks runs (1 + d (k - 1) / k) "
                 "times longer", f"(offered load {_LOAD:g}, no unavailability)")
    return fig


#: The study's figures, each answering one question (the drawing function's docstring).
FIGURES: dict[str, Callable[[pl.DataFrame], Figure | None]] = {
    "capacity-vs-unavailability": capacity_figure,
    "topology-lost-vs-unavailability": topology_figure,
    "wait-vs-unavailability": wait_figure,
    "placement-vs-dilation": dilation_figure,
}
