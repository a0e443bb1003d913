"""Figures of the result tables, one set per experiment (Krevat 2003 ch. 5, Aridor 2005).

`write_figures` reads the Parquet tables of `simcore.report.tables.write_tables` and draws, for
each experiment, the figures its data supports:

- utilization-vs-load: mean utilization against the load axis (the offered load when the
  experiment sets one, else the runtime scale c), with 95% CI bars where every point rests
  on three runs or more; series are offset sideways so that coinciding curves stay
  visible;
- wait-vs-utilization, bsld-vs-utilization: mean wait (hours) and mean bounded slowdown,
  both on log scales, against mean utilization, each curve traced in load order;
- migrations-vs-load: migrations attempted, successful and the always-migrate maximum
  (log scale) against the load axis, and the mean time between migrations (migration
  data only);
- capacity: stacked horizontal bars of capacity utilized, unused, lost and failed, one panel
  per load value (at most MAX_LOADS, evenly spaced);
- response-vs-load: mean and median response time and bounded slowdown against the load
  axis (log scales), a row of panels per workload (Frachtenberg et al.'s Figure 7);
- carried-vs-load: mean carried load against the offered load, each curve's knee marked;
- response-ci-vs-load (Chu 1995): mean response time (log scale, so that curves far below
  the slowest one stay apart) with 90% CI bars against the offered load, hollow markers
  where the half-width misses Chu's 5% accuracy;
- response-vs-queues: Multiple Queues' mean response time against the number of queues,
  one curve per machine (allocator) and MQ variant, a panel per workload and load;
- ranking-map (Frachtenberg et al.): FCS, spin-block, gang and EASY ordered by mean
  response in a cell per switch cost and granularity range, coloured by how far the
  order is the paper's.

A curve (or bar) is one machine x policy (its colour), split further by every other
configuration column that varies within one machine x policy (e.g. p_torus: line style
and marker) and is not an axis or a panel (workloads and p_fat get panels of their own).
Each experiment's figures go to a directory of their own, `<experiment>/<figure>.png`.
Figures are drawn on `Figure` objects with an Agg canvas, never through pyplot, so
importing this module selects no backend; rcParams change only inside a style context,
reset to matplotlib's defaults, while `write_figures` runs (a user's matplotlibrc does not
leak in). Output is deterministic: fixed `svg.hashsalt`, glyphs as paths, no date in the
SVG metadata, and PNG metadata carries no date.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import textwrap
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple, TypedDict

import matplotlib as mpl
import matplotlib.style
import polars as pl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import Formatter
from matplotlib.typing import ColorType, LineStyleType, MarkerType

from simcore.base.atomic import atomic_path
from simcore.base.errors import SimcoreError
from simcore.base.stamps import remove_stamped, write_stamp
from simcore.jobs.bsp import RANDOM_GRANULARITY_S
from simcore.policy import SCHEDULERS
from simcore.report.tables import (
    ALWAYS_MIGRATE,
    CONFIG_KEYS,
    MAX_SUCCESSFUL,
    MIN_INTERVAL_RUNS,
    RESPONSE_TARGET,
    bend,
    extremes,
)
from simcore.schedulers.registry import SWITCH_COST_S
from simcore.sweep.store import read_verified

MAX_LOADS = 6
DPI = 150
STYLE = {
    "svg.hashsalt": "torus-sweep",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "figure.titlesize": 11,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
MIN_WIDTH_IN = 6.0
_AXIS_NAMES = {"offered_load": "offered load", "runtime_scale": "runtime scale c"}
_AXIS_LABELS = {"offered_load": "offered load (target, fraction of capacity)",
                "runtime_scale": "runtime scale c (× trace run times)"}
_AXIS_SHORT = {"offered_load": "load", "runtime_scale": "c"}
AXIS_SLUGS = {"offered_load": "load", "runtime_scale": "runtime-scale"}
#: Every time in a figure is in hours.
HOUR_S = 3600.0
_UTILIZATION = "utilization (fraction of capacity)"
#: Eleven markers beside ten colours: no two of the first 110 series look alike.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h")
_CAPACITY = (("utilized_mean", "utilized", "#4c72b0"), ("unused_mean", "unused", "#c7c7c7"),
             ("lost_mean", "lost", "#dd8452"), ("failed_mean", "failed", "#c44e52"))
_RESPONSE = (("mean_response_s_mean", "mean response (h)"),
             ("median_response_s_mean", "median response (h)"))
_METRICS: tuple[tuple[str, str, LineStyleType, MarkerType], ...] = (
            ("migrations_attempted_mean", "attempted", "-", "o"),
            ("migrations_successful_mean", "successful", "--", "s"),
            ("max_successful_mean", "max successful (always migrate)", ":", "^"))

Row = dict[str, object]


class _Look(TypedDict):
    """How a series is drawn: keyword arguments of `Axes.plot`, `Axes.errorbar` and
    `Line2D`."""

    color: ColorType
    marker: MarkerType


class _Curve(_Look):
    """A series' look with its line and marker size."""

    linestyle: LineStyleType
    markersize: float


def _load_axis(rows: pl.DataFrame) -> str:
    """offered_load when the experiment rescales arrivals, else runtime_scale."""
    return "offered_load" if rows["offered_load"].drop_nulls().len() else "runtime_scale"


def _varying(rows: pl.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns that take more than one value (null counts as one) in `rows`."""
    return [c for c in columns if rows[c].n_unique() > 1]


def _value(column: str, value: object) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if column == "p_fat" and value in (0.0, 1.0):
        return f"{'slim' if value == 0.0 else 'fat'} (p_fat={text})"
    return f"{column}={text}"


def _matches(row: Row) -> pl.Expr:
    """Null-safe equality with every column of `row`."""
    return pl.all_horizontal(pl.col(c).eq_missing(pl.lit(v)) for c, v in row.items())


def _splits(rows: pl.DataFrame, exclude: Sequence[str]) -> list[str]:
    """The configuration columns outside `exclude` that take several values within one
    workload x machine x policy (p_fat, p_torus may, and a policy parameter or a machine's
    allocator option the grid sweeps; processors_per_unit does not when only workloads
    differ in it): each value gets
    panels of its own, so that a curve is one machine x policy (small multiples rather
    than a legend that encodes parameters)."""
    out = []
    for column in CONFIG_KEYS:
        if column in (*_SERIES, "experiment", "workload", "scheduler", *exclude):
            continue
        _, spread = extremes(rows.group_by(["workload", *_SERIES]).agg(
            pl.col(column).drop_nulls().n_unique())[column])
        if spread > 1:
            out.append(column)
    return out


def _panels(rows: pl.DataFrame, exclude: Sequence[str] = ()) -> list[tuple[str, pl.DataFrame]]:
    """(title, rows) per workload and per value combination of the columns `_splits`
    finds. Rows with a null there belong to every panel of that workload: the parameter
    does not apply to them (a machine without shapes ignores p_fat), so they are the
    shared reference."""
    split = _splits(rows, exclude)
    panels = []
    for workload in sorted(rows["workload"].unique().to_list()):
        part = rows.filter(pl.col("workload") == workload)
        combos: list[Row] = [{}]
        for column in split:
            values = sorted(part[column].drop_nulls().unique().to_list())
            combos = [{**c, column: v} for c in combos for v in values] or combos
        for combo in combos:
            selected = part.filter(pl.all_horizontal(
                True, *(pl.col(c).is_null() | (pl.col(c) == v) for c, v in combo.items())))
            if selected.height:
                title = ", ".join([workload, *(_value(c, v) for c, v in combo.items())])
                panels.append((title, selected))
    return panels


#: What a curve is: one machine x policy.
_SERIES = ("machine", "policy")


def _series(rows: pl.DataFrame) -> list[Row]:
    """The curves: the machine x policy combinations, sorted."""
    columns = list(_SERIES)
    return list(rows.select(columns).unique().sort(columns).iter_rows(named=True))


def _same_curves(rows: pl.DataFrame, keys: Sequence[Row],
                 columns: Sequence[str]) -> dict[int, list[int]]:
    """Series of one panel drawn in the same place: {first: [it and every later series
    whose `columns` equal its own]}, so that one curve is drawn for them and the panel
    names them all instead of hiding one under another. Series without rows are left
    out."""
    signatures: dict[tuple, int] = {}
    groups: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        part = rows.filter(_matches(key))
        if part.height:
            signature = tuple(part.sort(list(columns)).select(columns).iter_rows())
            groups.setdefault(signatures.setdefault(signature, i), []).append(i)
    return groups


def _label(key: Row) -> str:
    return f"{key['machine']} / {key['policy']}"


def _styles(keys: Sequence[Row]) -> list[_Look]:
    """A colour and a marker per series."""
    palette = mpl.colormaps["tab10"]
    return [{"color": palette(i % palette.N), "marker": _MARKERS[i % len(_MARKERS)]}
            for i in range(len(keys))]


#: Coinciding curves are spread sideways over this fraction of the load axis.
DODGE = 0.05


def _dodge(index: int, count: int, span: float) -> float:
    """Horizontal offset of series `index` of `count` so that coinciding curves stay
    visible: spread over DODGE of the axis."""
    return 0.0 if count < 2 else (index - (count - 1) / 2) * DODGE * span / (count - 1)


def _span(column: pl.Series) -> float:
    """The width of the column's values, 1 where they are all equal: what `_dodge` spreads
    series over."""
    low, high = extremes(column)
    return high - low or 1.0


def _dodge_note() -> str:
    return f"series offset sideways by up to {DODGE / 2:.1%} of the axis to stay visible"


def new_figure(width: float, height: float) -> Figure:
    """A constrained-layout figure on an Agg canvas, at least MIN_WIDTH_IN wide so that
    titles and legends fit."""
    fig = Figure(figsize=(max(width, MIN_WIDTH_IN), height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_title(fig: Figure, *lines: str) -> None:
    """The figure title, each line wrapped to the figure's width."""
    chars = int(fig.get_figwidth() * 10)
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in lines))


def _figure(n_panels: int, width: float, height: float, ncols: int = 3,
            sharey: bool = False) -> tuple[Figure, list[Axes]]:
    """A figure with n_panels axes of width x height inches each, ncols to a row."""
    ncols = min(ncols, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig = new_figure(width * ncols, height * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _legend(fig: Figure, handles: Sequence[Artist], labels: Sequence[str]) -> None:
    """One legend below the panels, as many columns as fit the figure's width."""
    longest = max(len(label) for label in labels)
    entry_in = 0.5 + 0.065 * longest
    ncols = max(1, min(len(labels), int(fig.get_figwidth() * 0.95 // entry_in)))
    fig.set_figheight(fig.get_figheight() + 0.22 * math.ceil(len(labels) / ncols) + 0.1)
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, frameon=False)


def _draw_lines(fig: Figure, axes: Sequence[Axes], panels: Sequence[tuple[str, pl.DataFrame]],
                keys: Sequence[Row], axis: str, columns: Sequence[str],
                plot: Callable[[Axes, pl.DataFrame, _Look, int, int], None]) -> None:
    """Per panel, one curve per series key (rows sorted along `axis`; `plot` told the
    series' index and count, for `_dodge`), and a shared legend. Series whose `columns`
    equal an earlier one's in a panel are drawn once there, and a note in the panel names
    them ("a = b"): nothing is hidden under another curve."""
    styles = _styles(keys)
    drawn = set()
    for ax, (title, rows) in zip(axes, panels, strict=True):
        ax.set_title(title)
        same = []
        for first, group in _same_curves(rows, keys, [axis, *columns]).items():
            plot(ax, rows.filter(_matches(keys[first])).sort(axis), styles[first], first,
                 len(keys))
            drawn.add(first)
            if len(group) > 1:
                same.append(" = ".join(_label(keys[i]) for i in group))
        if same:  # wrapped to the panel: about 14 characters an inch at this size
            spec = ax.get_subplotspec()
            assert spec is not None  # the axes are a grid's (`_figure`)
            chars = int(14 * fig.get_figwidth() / spec.get_gridspec().ncols)
            ax.text(0.02, 0.98, "\n".join(textwrap.fill(f"{text} (equal)", chars)
                                          for text in same),
                    transform=ax.transAxes, va="top", fontsize=7)
    order = sorted(drawn)
    _legend(fig, [Line2D([], [], markersize=5, **styles[i]) for i in order],
            [_label(keys[i]) for i in order])


def runs_note(rows: pl.DataFrame) -> str:
    """How many runs each point rests on: "n = 3 runs per point" (or a range)."""
    fewest, most = map(int, extremes(rows["n"]))
    count = str(fewest) if fewest == most else f"{fewest}-{most}"
    return f"n = {count} runs per point"


def _error_bars(rows: pl.DataFrame) -> tuple[bool, str]:
    """Whether to draw CI bars (every point rests on MIN_INTERVAL_RUNS runs or more, the
    tables' rule), and the sentence saying what the utilization bars are and what n is."""
    if extremes(rows["n"])[0] >= MIN_INTERVAL_RUNS:
        return True, f"bars: 95% confidence intervals (Student t), {runs_note(rows)}"
    return False, f"no error bars: {runs_note(rows)}, too few for an interval"


def utilization_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean utilization against the load axis; series offset sideways so that coinciding
    curves stay visible, 95% CI bars where there are enough runs."""
    rows = rows.filter(pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows, [axis])
    keys = _series(rows)
    bars, bar_note = _error_bars(rows)
    span = _span(rows[axis])
    fig, axes = _figure(len(panels), 4.4, 3.4, sharey=True)

    def plot(ax: Axes, part: pl.DataFrame, style: _Look, index: int,
             count: int) -> None:
        x = [v + _dodge(index, count, span) for v in part[axis].to_list()]
        ax.errorbar(x, part["utilization_mean"].to_list(),
                    yerr=part["utilization_ci95"].fill_null(0.0).to_list() if bars else None,
                    capsize=2, markersize=4, **style)

    _draw_lines(fig, axes, panels, keys, axis, ["utilization_mean", "utilization_ci95"], plot)
    for ax in axes:
        ax.set_xlabel(_AXIS_LABELS[axis])
        ax.set_ylim(0.0, 1.0)
    axes[0].set_ylabel(_UTILIZATION)
    figure_title(fig, f"Utilization vs {_AXIS_NAMES[axis]} — experiment {experiment}",
                 f"({bar_note}; {_dodge_note()})")
    return fig


def carried_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean carried load against offered load, the diagonal where the two are equal, and
    each curve's knee (the saturation table's) marked: the whole curve behind a
    saturation point, for sweeps of at least four offered loads."""
    rows = rows.filter(pl.col("offered_load").is_not_null()
                       & pl.col("accepted_load_mean").is_not_null())
    if not rows.height or rows["offered_load"].n_unique() < 4:
        return None
    axis = "offered_load"
    panels = _panels(rows, [axis])
    keys = _series(rows)
    fig, axes = _figure(len(panels), 4.8, 3.6, sharey=True)
    knees: dict[int, list[str]] = {}

    def plot(ax: Axes, part: pl.DataFrame, style: _Look, index: int,
             count: int) -> None:
        load, carried = part[axis].to_list(), part["accepted_load_mean"].to_list()
        ax.plot(load, carried, markersize=4, **style)
        found = bend(load, carried)
        if found is not None:
            ax.plot([found[0]], [found[1]], marker="|", markersize=16, linestyle="none",
                    color=style["color"], markeredgewidth=2)
        knees.setdefault(id(ax), []).append(
            f"{_label(keys[index])}: " + ("none" if found is None else f"{found[0]:.3f}"))

    _draw_lines(fig, axes, panels, keys, axis, ["accepted_load_mean"], plot)
    low, high = extremes(rows[axis])
    bottom = min(low, extremes(rows["accepted_load_mean"])[0])
    for ax in axes:
        ax.plot([bottom, high], [bottom, high], color="0.6", linestyle=":", linewidth=1,
                zorder=0)
        ax.text(0.02, 0.8, "knee at offered\n" + "\n".join(knees.get(id(ax), [])),
                transform=ax.transAxes, ha="left", va="top", fontsize=7)  # above the diagonal
        ax.set_xlabel(_AXIS_LABELS[axis])
        ax.set_ylim(0.9 * bottom, 1.02 * high)
    axes[0].set_ylabel("carried load (what the machine ran, fraction of capacity)")
    figure_title(fig, f"Carried vs offered load — experiment {experiment}",
                 f"(means over runs, {runs_note(rows)}; dotted: carried = offered; bar: the "
                 "knee, where the carried load stops following the offered load)")
    return fig


class _LogLabels(Formatter):
    """Plain numbers (0.5, 10, 200) on a log axis, quicker to read and to draw than
    mathtext powers. Minor ticks are labelled on short axes, which would otherwise show
    one label or none: all of them under one decade, 2 and 5 under two decades."""

    def __init__(self, minor: bool) -> None:
        self.minor = minor

    def __call__(self, x: float, pos: int | None = None) -> str:
        if self.minor and self.axis is not None:
            lo, hi = sorted(self.axis.get_view_interval())
            mantissa = round(x / 10 ** math.floor(math.log10(x)))
            if hi >= 100 * lo or (hi >= 10 * lo and mantissa not in (2, 5)):
                return ""
        return f"{x:g}"


def _log_y(ax: Axes) -> None:
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_LogLabels(minor=False))
    ax.yaxis.set_minor_formatter(_LogLabels(minor=True))


def _vs_utilization(experiment: str, rows: pl.DataFrame, column: str, scale: float,
                    ylabel: str, what: str) -> Figure | None:
    """A positive per-configuration mean (log scale) against mean utilization."""
    rows = rows.filter((pl.col(column) > 0) & pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows, [axis])
    keys = _series(rows)
    fig, axes = _figure(len(panels), 4.4, 3.4)

    def plot(ax: Axes, part: pl.DataFrame, style: _Look, index: int,
             count: int) -> None:
        ax.plot(part["utilization_mean"].to_list(), (part[column] / scale).to_list(),
                markersize=4, **style)

    _draw_lines(fig, axes, panels, keys, axis, ["utilization_mean", column], plot)
    for ax in axes:
        _log_y(ax)
        ax.set_xlabel(_UTILIZATION)
    axes[0].set_ylabel(ylabel)
    figure_title(fig, f"{what} vs utilization — experiment {experiment}",
                 f"(one point per {_AXIS_NAMES[axis]}, means over runs; {runs_note(rows)})")
    return fig


def wait_vs_utilization(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean job wait in hours (log) against mean utilization."""
    return _vs_utilization(experiment, rows, "mean_wait_s_mean", HOUR_S,
                           "mean job wait (h, log scale)", "Mean wait")


def bsld_vs_utilization(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean bounded slowdown (log) against mean utilization."""
    return _vs_utilization(experiment, rows, "mean_bsld_mean", 1.0,
                           "mean bounded slowdown (τ = 10 s, log scale)", "Bounded slowdown")


def _always(part: pl.DataFrame) -> bool:
    """Whether the rows are always-migrate runs (their schedulers' `always_migrate`)."""
    return bool(part.select(ALWAYS_MIGRATE.all()).item())


def migrations_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Migrations attempted and successful per run against the load axis (log scale:
    always-migrate attempts dwarf the others); below, the mean time between migrations
    (when any run has one). Krevat's maximum successful is the always-migrate policy's
    successful curve, drawn once as that policy's (the subtitle says so)."""
    rows = rows.filter(pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows, [axis])
    keys = _series(rows)
    styles = _styles(keys)
    span = _span(rows[axis])
    gaps = rows["mean_time_between_migrations_s_mean"].drop_nulls().len() > 0
    ncols = len(panels)
    fig = new_figure(4.4 * ncols, 3.4 * (1 + gaps))
    grid = fig.subplots(1 + gaps, ncols, squeeze=False, sharex="col")
    drawn: dict[int, ColorType] = {}  # series index: colour
    metrics: set[str] = set()
    always = next((_label(k) for k in keys if _always(rows.filter(_matches(k)))), "")
    for col, (title, panel) in enumerate(panels):
        counts = grid[0][col]
        counts.set_title(title)
        for i, key in enumerate(keys):
            part = panel.filter(_matches(key)).sort(axis)
            if not part.height:
                continue
            color = drawn[i] = styles[i]["color"]
            x = [v + _dodge(i, len(keys), span) for v in part[axis].to_list()]
            for metric, _, line, marker in _METRICS:
                if metric == MAX_SUCCESSFUL.column and always:
                    continue  # the always-migrate curve itself: not drawn twice
                values = part[metric].to_list()
                if any(v for v in values if v is not None):
                    counts.plot(x, [v if v else None for v in values], linestyle=line,
                                marker=marker, markersize=4, color=color)
                    metrics.add(metric)
            if gaps:
                grid[1][col].plot(x, (part["mean_time_between_migrations_s_mean"] / HOUR_S)
                                  .to_list(), marker="o", markersize=4, color=color)
        _log_y(counts)
        counts.set_ylabel("migrations per run (count, log scale)")
        grid[-1][col].set_xlabel(_AXIS_LABELS[axis])
        if gaps:
            grid[1][col].set_ylabel("mean time between migrations (h)")
            grid[1][col].set_ylim(bottom=0)
    order = sorted(drawn)
    handles = [Line2D([], [], linewidth=4, color=drawn[i]) for i in order]
    shown = [m for m in _METRICS if m[0] in metrics]
    handles += [Line2D([], [], color="black", linestyle=line, marker=marker, markersize=4)
                for _, _, line, marker in shown]
    labels = [_label(keys[i]) for i in order] + [label for _, label, _, _ in shown]
    _legend(fig, handles, labels)
    maximum = f"; max successful = {always}'s successful" if always else ""
    figure_title(fig, f"Migrations vs {_AXIS_NAMES[axis]} — experiment {experiment}",
                 f"(means over runs, {runs_note(rows)}; zero counts are not drawn on the log "
                 f"scale{maximum}; {_dodge_note()})")
    return fig


def _pick(values: Sequence[float], limit: int = MAX_LOADS) -> list[float]:
    """At most `limit` values, evenly spaced by index, always the first and the last."""
    if len(values) <= limit:
        return list(values)
    last = len(values) - 1
    return [values[round(i * last / (limit - 1))] for i in range(limit)]


def capacity(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Capacity utilized, unused, lost and (where units failed) failed per series: a row of
    panels per workload (and parameter values), one panel per load value."""
    rows = rows.filter(pl.all_horizontal(pl.col(c).is_not_null() for c, _, _ in _CAPACITY))
    if not rows.height:
        return None
    shares = [s for s in _CAPACITY if s[1] != "failed" or extremes(rows[s[0]])[1] > 0]
    axis = _load_axis(rows)
    loads = _pick(sorted(rows[axis].unique().to_list()))
    panels = _panels(rows, [axis])
    keys = _series(rows)
    labels = [_label(k) for k in keys]
    height = 0.9 + 0.28 * len(keys)
    label_in = 0.07 * max(len(label) for label in labels)
    fig = new_figure(label_in + 2.3 * len(loads), height * len(panels))
    grid = fig.subplots(len(panels), len(loads), squeeze=False, sharex=True, sharey=True)
    layout = fig.get_layout_engine()
    assert isinstance(layout, ConstrainedLayoutEngine)  # `new_figure`'s
    layout.set(wspace=0.06)
    grid[0][0].set_xlim(0.0, 1.0)
    grid[0][0].set_xticks([0.0, 0.5, 1.0], ["0", "0.5", "1"])
    grid[0][0].set_xticks([0.25, 0.75], minor=True)
    positions = list(range(len(keys)))[::-1]  # first series on top
    grid[0][0].set_yticks(positions, labels)  # shared by all panels, shown on the left
    for r, (title, panel) in enumerate(panels):
        for c, load in enumerate(loads):
            ax = grid[r][c]
            at_load = panel.filter(pl.col(axis) == load)
            for i, key in enumerate(keys):
                part = at_load.filter(_matches(key))
                if not part.height:
                    continue
                left = 0.0
                for column, _, color in shares:
                    width = part[column].item()
                    ax.barh(positions[i], width, left=left, color=color, height=0.7)
                    left += width
            ax.set_title(f"{title}\n{_AXIS_SHORT[axis]} = {load:g}")
            ax.grid(axis="y", visible=False)
            ax.grid(axis="x", which="both")
            if r == len(panels) - 1:
                ax.set_xlabel("fraction of capacity")
    _legend(fig, [Patch(color=color) for _, _, color in shares],
            [label for _, label, _ in shares])
    what = ", ".join(label for _, label, _ in shares[:-1]) + f" and {shares[-1][1]}"
    figure_title(fig, f"Capacity {what} — experiment {experiment}",
                 f"(means over runs, {runs_note(rows)})")
    return fig


def response_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean and median response time (log scales) against the load axis, a column per
    metric and a row per panel: Frachtenberg et al.'s Figure 7 (its slowdown panel is
    bsld-vs-utilization).
    Metrics without data (a store from before they were recorded) are left out, and so is
    the figure for an experiment at a single load."""
    metrics = [m for m in _RESPONSE if rows.filter(pl.col(m[0]) > 0).height]
    axis = _load_axis(rows)
    if not metrics or rows[axis].n_unique() < 2:
        return None
    panels = _panels(rows, [axis])
    keys = _series(rows)
    styles = _styles(keys)
    span = _span(rows[axis])
    fig = new_figure(4.4 * len(metrics), 3.2 * len(panels))
    grid = fig.subplots(len(panels), len(metrics), squeeze=False)
    drawn: dict[int, Line2D] = {}
    for r, (title, panel) in enumerate(panels):
        for c, (column, label) in enumerate(metrics):
            ax = grid[r][c]
            for i, key in enumerate(keys):
                part = panel.filter(_matches(key) & (pl.col(column) > 0)).sort(axis)
                if part.height:
                    ax.plot([v + _dodge(i, len(keys), span) for v in part[axis].to_list()],
                            (part[column] / HOUR_S).to_list(), markersize=4, **styles[i])
                    drawn[i] = Line2D([], [], markersize=5, **styles[i])
            _log_y(ax)
            ax.set_title(f"{title}: {label.split(' (')[0]}")
            ax.set_ylabel(label)
            ax.set_xlabel(_AXIS_LABELS[axis])
    order = sorted(drawn)
    _legend(fig, [drawn[i] for i in order], [_label(keys[i]) for i in order])
    figure_title(fig, f"Response time vs {_AXIS_NAMES[axis]} — experiment "
                 f"{experiment}", f"(means over runs, {runs_note(rows)}; no error bars; "
                 f"{_dodge_note()})")
    return fig


_RESPONSE_LABEL = "mean response time (h)"
#: The schedulers keeping Q queues (those with the `queues` parameter: Multiple Queues).
_QUEUED = tuple(name for name, row in SCHEDULERS.items() if "queues" in row.parameter_names)
#: Their parameters besides Q, which split their curves where they vary.
_QUEUE_VARIANTS = ("scan", "criterion", "blocking", "wtl")


def _levels(rows: pl.DataFrame) -> str:
    """The confidence levels of the rows' response intervals, e.g. "90%"."""
    return " and ".join(f"{level:.0%}" for level in sorted(set(rows["ci_level"].to_list())))


def _bars_note(rows: pl.DataFrame, bars: bool) -> str:
    """What the response figures' bars are: their confidence level(s) and n."""
    if bars:
        return f"bars: {_levels(rows)} confidence intervals, {runs_note(rows)}"
    return f"no error bars: {runs_note(rows)}, too few for an interval"


def response_ci_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean response time (log scale; CI bars at each row's level: 90% for Chu's
    schedulers, else 95%) against the offered load; where there are bars, a hollow marker
    where the half-width is above the precision target."""
    rows = rows.filter(pl.col("mean_response_s_mean").is_not_null()
                       & pl.col("offered_load").is_not_null())
    if rows["offered_load"].n_unique() < 2:
        return None
    axis = "offered_load"
    panels = _panels(rows, [axis])
    keys = _series(rows)
    bars, _ = _error_bars(rows)
    span = _span(rows[axis])
    fig, axes = _figure(len(panels), 4.4, 3.4)

    def plot(ax: Axes, part: pl.DataFrame, style: _Look, index: int,
             count: int) -> None:
        x = [v + _dodge(index, count, span) for v in part[axis].to_list()]
        ax.errorbar(x, (part["mean_response_s_mean"] / HOUR_S).to_list(),
                    yerr=(part["mean_response_s_ci"] / HOUR_S).fill_null(0.0).to_list()
                    if bars else None, capsize=2, markersize=4, **style)
        missed = [bars and not met for met in part["meets_target"].fill_null(True).to_list()]
        ax.plot([v for v, m in zip(x, missed, strict=True) if m],
                [v / HOUR_S for v, m in zip(part["mean_response_s_mean"].to_list(), missed,
                                            strict=True) if m],
                linestyle="none", marker=style["marker"], markersize=7,
                markerfacecolor="white", markeredgecolor=style["color"])

    _draw_lines(fig, axes, panels, keys, axis,
                ["mean_response_s_mean", "mean_response_s_ci"], plot)
    for ax in axes:
        ax.set_xlabel(_AXIS_LABELS[axis])
        _log_y(ax)
    axes[0].set_ylabel("mean response time (h, log scale)")
    hollow = (f"; hollow: the {_levels(rows)} confidence half-width is above "
              f"{RESPONSE_TARGET:.0%} of the mean") if bars else ""
    figure_title(fig, f"Mean response time vs offered load — experiment {experiment}",
                 f"({_bars_note(rows, bars)}{hollow}; {_dodge_note()})")
    return fig


def response_vs_queues(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Multiple Queues: mean response time against the number of queues Q."""
    rows = rows.filter(pl.col("scheduler").is_in(_QUEUED)
                       & pl.col("mean_response_s_mean").is_not_null())
    if rows["queues"].n_unique() < 2:
        return None
    panels = _panels(rows, ["queues", *_QUEUE_VARIANTS])
    columns = ["machine", *_varying(rows, ("scheduler", *_QUEUE_VARIANTS))]
    keys = list(rows.select(columns).unique().sort(columns).iter_rows(named=True))
    bars, _ = _error_bars(rows)
    fig, axes = _figure(len(panels), 4.4, 3.4)
    drawn: dict[int, Line2D] = {}
    styles = _styles(keys)
    for ax, (title, panel) in zip(axes, panels, strict=True):
        ax.set_title(title)
        for i, key in enumerate(keys):
            part = panel.filter(_matches(key)).sort("queues")
            if part.height:
                style = styles[i]
                ax.errorbar(part["queues"].to_list(),
                            (part["mean_response_s_mean"] / HOUR_S).to_list(),
                            yerr=(part["mean_response_s_ci"] / HOUR_S).fill_null(0.0).to_list()
                            if bars else None, capsize=2, markersize=4, **style)
                drawn[i] = Line2D([], [], markersize=5, **style)
        ax.set_xscale("log", base=2)
        ticks = sorted(panel["queues"].unique().to_list())
        ax.set_xticks(ticks, [str(q) for q in ticks])
        ax.minorticks_off()
        ax.set_xlabel("queues Q (log scale)")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel(_RESPONSE_LABEL)
    order = sorted(drawn)
    _legend(fig, [drawn[i] for i in order],
            [", ".join([keys[i]["machine"], *(_value(c, v) for c, v in keys[i].items()
                                             if c != "machine")]) for i in order])
    figure_title(fig, f"Multiple Queues: mean response time vs Q — experiment {experiment}",
                 f"({_bars_note(rows, bars)})")
    return fig


#: The schedulers of Frachtenberg et al.'s dynamic ranking, by their letters in the
#: ranking map; the paper's ranking at offered load 0.8: FCS lowest mean response, EASY
#: (batch with backfilling) highest.
RANKED = {"fcs": "F", "spin-block": "S", "gang": "G", "backfill": "E"}
_RANKED_NAMES = {"fcs": "FCS", "spin-block": "spin-block", "gang": "gang",
                 "backfill": "EASY (backfill)"}
#: The ranking map's cell classes, best match with the paper's ranking first.
RANKING_CLASSES = (("the paper's ranking: FCS first, EASY last", "#55a868"),
                   ("FCS first only", "#f2c45a"), ("FCS not first", "#c44e52"))
_GRANULARITY = ("bsp_granularity_min_s", "bsp_granularity_max_s")


def ranking(responses: dict[str, float]) -> tuple[str, int]:
    """The RANKED schedulers' letters ordered by mean response, e.g. "F < S < G < E"
    (`responses`: by scheduler), and the index of its class in RANKING_CLASSES."""
    order = [RANKED[s] for s in sorted(RANKED, key=lambda s: responses[s])]
    fcs_first = order[0] == RANKED["fcs"]
    return " < ".join(order), 0 if fcs_first and order[-1] == RANKED["backfill"] \
        else 1 if fcs_first else 2


def _duration(seconds: float) -> str:
    """A time of the ranking map's axes: "0", "3.23 ms", "1 s"."""
    if seconds == 0:
        return "0"
    return f"{seconds:g} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def ranking_map(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """For which switch costs and granularity ranges the paper's ranking appears: a cell
    per switch cost (x) and granularity range (y), naming the RANKED schedulers by mean
    response and coloured by RANKING_CLASSES. Drawn where every cell holds one row of each
    (schedulers without a switch cost, null there, count in every column), and there are
    two cells or more."""
    rows = rows.filter(pl.col("scheduler").is_in(list(RANKED))
                       & pl.col("mean_response_s_mean").is_not_null())
    if set(rows["scheduler"]) != set(RANKED):
        return None
    costs = sorted(rows["switch_cost_s"].drop_nulls().unique().to_list())
    ranges = sorted(rows.select(_GRANULARITY).unique().iter_rows())
    if not costs or len(costs) * len(ranges) < 2:
        return None
    cells: dict[tuple[int, int], tuple[str, int]] = {}
    for x, cost in enumerate(costs):
        for y, (low, high) in enumerate(ranges):
            cell = rows.filter((pl.col(_GRANULARITY[0]) == low)
                               & (pl.col(_GRANULARITY[1]) == high)
                               & pl.col("switch_cost_s").eq_missing(cost).or_(
                                   pl.col("switch_cost_s").is_null()))
            if cell.height != len(RANKED) or cell["scheduler"].n_unique() != len(RANKED):
                return None
            cells[x, y] = ranking(dict(zip(cell["scheduler"], cell["mean_response_s_mean"],
                                           strict=True)))
    fig = new_figure(1.5 * len(costs) + 2.0, 0.5 * len(ranges) + 1.8)
    ax = fig.subplots()
    for (x, y), (text, kind) in cells.items():
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=RANKING_CLASSES[kind][1],
                               edgecolor="white", linewidth=2))
        ax.text(x, y, text, ha="center", va="center", family="monospace")
    ax.set_xticks(range(len(costs)), [_duration(c) + (" (default)" if c == SWITCH_COST_S
                                                      else "")
                                      for c in costs])
    ax.set_yticks(range(len(ranges)), [
        (_duration(lo) if lo == hi else f"{_duration(lo)} – {_duration(hi)}")
        + (" (default)" if (lo, hi) == RANDOM_GRANULARITY_S else "") for lo, hi in ranges])
    ax.set_xlim(-0.5, len(costs) - 0.5)
    ax.set_ylim(-0.5, len(ranges) - 0.5)
    ax.grid(False)
    ax.set_xlabel("global context switch cost (switch_cost_s; gang and FCS)")
    ax.set_ylabel("compute per iteration, log-uniform over")
    _legend(fig, [Patch(facecolor=color) for _, color in RANKING_CLASSES],
            [label for label, _ in RANKING_CLASSES])
    loads = rows["offered_load"].drop_nulls().unique().to_list()
    at = f" at offered load {loads[0]:g}" if len(loads) == 1 else ""
    figure_title(fig, f"Ranking by mean response{at} — experiment {experiment}",
                 "(lowest first; " + ", ".join(f"{RANKED[s]} = {_RANKED_NAMES[s]}"
                                               for s in RANKED)
                 + f"; means over runs, {runs_note(rows)})")
    return fig


class FigureDefinition(NamedTuple):
    """A figure: the table it is drawn from, how (`draw(experiment, rows)`, None where the
    rows do not support it) and its caption in the workflow's report (reStructuredText,
    `captions`)."""

    table: str
    draw: Callable[[str, pl.DataFrame], Figure | None]
    caption: str


_PLACES = ("One colour and marker per machine and policy; a panel per workload and per value "
           "of any other parameter that varies (slim or fat shapes, the torus probability).")
#: Figure names, in drawing order, with the table each is drawn from, how, and its caption;
#: `{axis}` is the slug of the figure's x axis (AXIS_SLUGS), so that a file is named after
#: what it plots.
FIGURES: dict[str, FigureDefinition] = {
    "utilization-vs-{axis}": FigureDefinition("utilization", utilization_vs_load, (
        "Capacity utilized (Krevat's eq. 4.1: units requested x run time over the machine's "
        "capacity) against the experiment's load axis, the offered load or the runtime scale "
        f"c (the file name says which). {_PLACES} Error bars are 95% confidence intervals "
        "(Student t) when every point rests on three runs or more, and are left out "
        "otherwise; the subtitle says which and the runs per point (n). Series are offset "
        "sideways by up to 2.5% of the axis so that curves that coincide stay visible, and "
        "curves equal in a panel are drawn once and named there.")),
    "carried-vs-load": FigureDefinition("wait_slowdown", carried_vs_load, (
        "Mean carried load (what the machine ran) against the offered load (what the job "
        "stream asks), one curve per machine and policy, "
        "with the diagonal where the two are equal and each curve's knee marked (the "
        "saturation table's): the whole curve behind a saturation point, drawn for sweeps "
        "of at least four offered loads.")),
    "wait-vs-utilization": FigureDefinition("wait_slowdown", wait_vs_utilization, (
        "Mean job wait (hours, log scale) against utilization, one point per load value, "
        "each curve traced in load order: how much waiting a scheduler and machine pay for "
        "the utilization they reach. Colours, markers and panels as in the utilization "
        "figure.")),
    "bsld-vs-utilization": FigureDefinition("wait_slowdown", bsld_vs_utilization, (
        "Mean bounded slowdown (response over run time, both at least 10 s; log scale) "
        "against utilization, one point per load value. Colours, markers and panels as in "
        "the utilization figure.")),
    "migrations-vs-{axis}": FigureDefinition("migrations", migrations_vs_load, (
        "Migrations per run of the migrating schedulers against the load axis (log scale): "
        "attempted (solid) and successful, i.e. the largest free partition grew (dashed). "
        "Krevat's maximum successful is the successful curve of the policy that migrates "
        "whenever the head job blocks (the subtitle names it). Below: the mean time between "
        "successful migrations (hours).")),
    "capacity": FigureDefinition("capacity", capacity, (
        "Capacity utilized, unused (free units no waiting job asked for, eq. 4.2) and lost "
        "(the rest, eq. 4.3: fragmentation, rounding and growth, start delays) for each "
        "machine and policy, at up to six load values.")),
    "response-vs-{axis}": FigureDefinition("response", response_vs_load, (
        "Mean and median response time (hours, log scales) against the load axis, one curve "
        "per machine and policy, as in Frachtenberg et al.'s Figure 7: where a scheduler "
        "saturates its response time turns sharply upward.")),
    "response-ci-vs-{axis}": FigureDefinition("response", response_ci_vs_load, (
        "Mean response time (hours, log scale: series an order of magnitude below the "
        "slowest stay apart) against the offered load with confidence intervals: 90% "
        "for Chu's queue disciplines (Chu's level), 95% otherwise, drawn, as the tables print "
        "them, where every point rests on three runs or more; with them, hollow markers where "
        "the half-width is above 5% of the mean (more runs are needed).")),
    "response-vs-queues": FigureDefinition("response", response_vs_queues, (
        "Multiple Queues: mean response time (hours) against the number of queues Q.")),
    "ranking-map": FigureDefinition("response", ranking_map, (
        "For which settings the dynamic ranking of Frachtenberg et al. appears: a cell per "
        "global context switch cost and range of the random BSP model's compute per "
        "iteration, naming FCS (F), spin-block (S), gang (G) and EASY (E) from the lowest "
        "mean response to the highest, green where FCS is first and EASY last (the "
        "paper's ranking), yellow where FCS is first only, red where FCS is not first. "
        "EASY and spin-block pay no switch cost: their runs count in every column.")),
}


def captions() -> dict[str, str]:
    """The report caption of every file name a figure can take (`figure_name`, each x axis
    filled in): what the workflow's report shows under each figure."""
    return {name.format(axis=slug): figure.caption for name, figure in FIGURES.items()
            for slug in AXIS_SLUGS.values()}


def figure_name(figure: str, rows: pl.DataFrame) -> str:
    """The file name of FIGURES entry `figure` drawn from `rows`: its x axis filled in
    (utilization-vs-load, utilization-vs-runtime-scale)."""
    return figure.format(axis=AXIS_SLUGS[_load_axis(rows)])


def _save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext, metadata in (("png", None), ("svg", {"Date": None})):
        path = out_dir / f"{name}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=DPI, metadata=metadata)
        fig.set_layout_engine("none")  # keep the first layout: the second save reuses it
        paths.append(path)
    return paths


def write_figures(tables_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                  jobs: int = 1) -> list[Path]:
    """Draw every figure each experiment's tables support into `out_dir` as
    <experiment>/<figure>.png (DPI dots per inch) and .svg (`figure_name`); returns the
    paths, ordered by experiment, then FIGURES, then png before svg. The tables are
    verified against their checksums before they are drawn. `jobs` processes draw
    experiments side by side (the same files as one). The paths are stamped
    (`simcore.base.stamps`) once all are drawn; the files an earlier call stamped there are
    removed first, so no figure of it survives beside these."""
    tables: dict[str, pl.DataFrame] = {}
    for table in sorted({figure.table for figure in FIGURES.values()}):
        path = Path(tables_dir) / f"{table}.parquet"
        if not path.is_file():
            raise SimcoreError(f"missing result table {path}; write it with "
                               "simcore.report.tables.write_tables")
        frame = pl.from_arrow(read_verified(path).replace_schema_metadata(None))
        assert isinstance(frame, pl.DataFrame)  # from a table
        tables[table] = frame
    out = Path(out_dir)
    remove_stamped(out)
    experiments = sorted(set().union(*(t["experiment"].to_list() for t in tables.values())))
    work = [(experiment, {name: t.filter(pl.col("experiment") == experiment)
                          for name, t in tables.items()}, out / experiment)
            for experiment in experiments]
    if jobs > 1 and len(work) > 1:  # spawned: a forked child of polars' threads can hang
        with ProcessPoolExecutor(min(jobs, len(work)),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            drawn = list(pool.map(_experiment_figures, *zip(*work, strict=True)))
    else:
        drawn = [_experiment_figures(*item) for item in work]
    made = [path for paths in drawn for path in paths]
    write_stamp(out, made)
    return made


def _experiment_figures(experiment: str, tables: dict[str, pl.DataFrame],
                        out: Path) -> list[Path]:
    """One experiment's figures (`write_figures`)."""
    paths: list[Path] = []
    with matplotlib.style.context(STYLE, after_reset=True):
        for name, figure in FIGURES.items():
            rows = tables[figure.table]
            fig = figure.draw(experiment, rows) if rows.height else None
            if fig is not None:
                paths += _save(fig, out, figure_name(name, rows))
    return paths


#: Leung et al. (2002) analogues (simcore.tools.leung2002): allocators by colour, orderings by
#: line style, in the paper's order from the Cplant 1.9 baseline on.
_ALLOCATOR_COLORS = {"free-list": "#c44e52", "first-fit": "#55a868", "best-fit": "#4c72b0",
                     "sum-of-squares": "#8172b2"}
_ORDERING_LINES: dict[str, LineStyleType] = {"row-major": ":", "snake": "--", "hilbert": "-"}


def locality_vs_work_multiple(rows: pl.DataFrame) -> Figure | None:
    """Leung et al.'s Figure 1 from `simcore.tools.leung2002.figure1_rows`: above, the mean
    bounding cube over the smallest cube; below, the mean (ring) span; both against the
    work multiple, one curve per ordering x allocator, a column per workload x policy."""
    rows = rows.filter(pl.col("replication") == 1)
    if not rows.height:
        return None
    panels = rows.select("workload", "policy").unique().sort(["workload", "policy"])
    fig = new_figure(4.6 * panels.height, 6.4)
    grid = fig.subplots(2, panels.height, squeeze=False, sharex="col")
    handles, labels = [], []
    for col, (workload, policy) in enumerate(panels.iter_rows()):
        part = rows.filter((pl.col("workload") == workload) & (pl.col("policy") == policy))
        top, bottom = grid[0][col], grid[1][col]
        for ordering, line in _ORDERING_LINES.items():
            for allocator, color in _ALLOCATOR_COLORS.items():
                curve = part.filter((pl.col("ordering") == ordering)
                                    & (pl.col("allocator") == allocator)).sort("runtime_scale")
                if not curve.height:
                    continue
                x = curve["runtime_scale"].to_list()
                style = _Curve(color=color, marker="o", linestyle=line, markersize=3)
                top.plot(x, curve["bcube_ratio_mean"].to_list(), **style)
                bottom.plot(x, curve["span_ring_mean"].to_list(), **style)
                if col == 0:
                    handles.append(Line2D([], [], **style))
                    labels.append(f"{allocator}, {ordering}")
        top.set_title(f"{workload}, {policy}")
        top.set_ylabel("mean bounding cube / smallest cube")
        bottom.set_ylabel("mean span (processors)")
        bottom.set_xlabel("work multiple (× trace run times)")
        top.set_ylim(bottom=1)
        bottom.set_ylim(bottom=0)
    _legend(fig, handles, labels)
    figure_title(fig, "Locality vs work multiple (Leung et al. 2002, Figure 1)",
                 "span depends on the allocator only: orderings of one allocator coincide below")
    return fig


def table1_makespans(summary: pl.DataFrame) -> Figure | None:
    """Leung et al.'s Table 1 from `simcore.tools.leung2002.summarize_table1`: the mean makespan
    (SD bars) of each strategy per dilation, the paper's measured values on the left."""
    if not summary.height:
        return None
    strategies = list(dict.fromkeys(summary["strategy"].to_list()))
    groups = ["paper", *(f"dilation {d:g}" for d in sorted(set(summary["dilation"])))]
    fig = new_figure(1.1 * len(groups) + 2.0, 3.8)
    ax = fig.subplots()
    width = 0.8 / len(strategies)
    palette = mpl.colormaps["tab10"]
    for i, strategy in enumerate(strategies):
        part = summary.filter(pl.col("strategy") == strategy).sort("dilation")
        paper = part.row(0, named=True)
        means = [paper["paper_makespan_s"], *part["makespan_mean_s"].to_list()]
        stds = [paper["paper_std_s"], *part["makespan_std_s"].fill_null(0.0).to_list()]
        x = [g + (i - (len(strategies) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(x, [m / 3600 for m in means], width, yerr=[s / 3600 for s in stds],
               capsize=1.5, color=palette(i), label=strategy)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("makespan (h)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="x", visible=False)
    handles, labels = ax.get_legend_handles_labels()
    _legend(fig, handles, labels)
    figure_title(fig, "Makespan of the test stream by allocation strategy (Leung et al. 2002, "
                 "Table 1): the paper's Cplant runs and the dilation model")
    return fig


def write_figure(draw: Callable[[], Figure | None], out_dir: str | os.PathLike[str],
                 name: str) -> list[Path]:
    """Draw a figure (e.g. `lambda: table1_makespans(summary)`) in this module's style and
    save it as <name>.png and .svg, deterministically; nothing if there is no figure."""
    with matplotlib.style.context(STYLE, after_reset=True):
        fig = draw()
        return [] if fig is None else _save(fig, Path(out_dir), name)
