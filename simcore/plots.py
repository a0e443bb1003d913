"""Figures of the result tables, one set per experiment (Krevat 2003 ch. 5, Aridor 2005).

`write_figures` reads the Parquet tables of `simcore.tables.write_tables` and draws, for
each experiment, the figures its data supports:

- utilization-vs-load: mean utilization with 95% CI bars against the load axis (the
  offered load when the experiment sets one, else the runtime scale c);
- wait-vs-utilization, bsld-vs-utilization: mean wait (hours) and mean bounded slowdown,
  both on log scales, against mean utilization, each curve traced in load order;
- migrations-vs-utilization: migrations attempted, successful and the always-migrate
  maximum against utilization, and the mean time between migrations (migration data only);
- capacity: stacked horizontal bars of capacity utilized, unused and lost, one panel per
  load value (at most MAX_LOADS, evenly spaced);
- response-vs-load: mean and median response time and bounded slowdown against the load
  axis (log scales), a row of panels per workload (Frachtenberg et al.'s Figure 7).

A curve (or bar) is one machine x policy, split further by every other configuration
column that varies within one machine x policy (e.g. p_torus) and is not an axis or a
panel. Figures are drawn on `Figure` objects with an Agg canvas, never through pyplot, so
importing this module selects no backend; rcParams change only inside a style context,
reset to matplotlib's defaults, while `write_figures` runs (a user's matplotlibrc does not
leak in). Output is deterministic: fixed `svg.hashsalt`, glyphs as paths, no date in the
SVG metadata, and PNG metadata carries no date.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.style
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import Formatter

from simcore.atomic import atomic_path
from simcore.errors import SimcoreError
from simcore.tables import CONFIG_KEYS

FIGURES = ("utilization-vs-load", "wait-vs-utilization", "bsld-vs-utilization",
           "migrations-vs-utilization", "capacity", "response-vs-load")
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
_UTILIZATION = "utilization (fraction of capacity)"
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_CAPACITY = (("utilized_mean", "utilized", "#4c72b0"), ("unused_mean", "unused", "#c7c7c7"),
             ("lost_mean", "lost", "#dd8452"))
_RESPONSE = (("mean_response_s_mean", "mean response (h)", 3600.0),
             ("mean_bsld_mean", "mean bounded slowdown", 1.0),
             ("median_response_s_mean", "median response (h)", 3600.0),
             ("median_bsld_mean", "median bounded slowdown", 1.0))
_METRICS = (("migrations_attempted_mean", "attempted", "-", "o"),
            ("migrations_successful_mean", "successful", "--", "s"),
            ("max_successful_mean", "max successful (always migrate)", ":", "^"))

Row = dict[str, object]


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


def _panels(rows: pl.DataFrame, extra: Sequence[str] = ()) -> list[tuple[str, pl.DataFrame]]:
    """(title, rows) per workload and per value of each `extra` column that varies. Rows
    with a null there belong to every panel of that workload: the parameter does not apply
    to them (a machine without shapes ignores p_fat), so they are the shared reference."""
    split = _varying(rows, extra)
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


def _series(rows: pl.DataFrame, exclude: Sequence[str]) -> list[Row]:
    """The curves: value combinations, sorted (nulls first), of machine, policy and every
    other configuration column outside `exclude` that takes several values within one
    workload x machine x policy (p_torus may; fn_tor, fixed by the policy, does not, nor
    does processors_per_unit when only workloads differ in it, as panels split those)."""
    columns = ["machine", "policy"]
    for column in CONFIG_KEYS:
        if column in (*columns, "experiment", "workload", *exclude):
            continue
        spread = rows.group_by(["workload", *columns]).agg(
            pl.col(column).n_unique())[column].max()
        if spread > 1:
            columns.append(column)
    return list(rows.select(columns).unique().sort(columns).iter_rows(named=True))


def _label(key: Row) -> str:
    extra = [_value(c, v) for c, v in key.items() if c not in ("machine", "policy")]
    return ", ".join([f"{key['machine']} / {key['policy']}", *extra])


def _style(index: int, count: int) -> dict[str, object]:
    palette = mpl.colormaps["tab10" if count <= 10 else "tab20"]
    return {"color": palette(index % palette.N), "marker": _MARKERS[index % len(_MARKERS)]}


def _new(width: float, height: float) -> Figure:
    """A constrained-layout figure on an Agg canvas, at least MIN_WIDTH_IN wide so that
    titles and legends fit."""
    fig = Figure(figsize=(max(width, MIN_WIDTH_IN), height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _title(fig: Figure, *lines: str) -> None:
    """The figure title, each line wrapped to the figure's width."""
    chars = int(fig.get_figwidth() * 10)
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in lines))


def _figure(n_panels: int, width: float, height: float, ncols: int = 3,
            sharey: bool = False) -> tuple[Figure, list[Axes]]:
    """A figure with n_panels axes of width x height inches each, ncols to a row."""
    ncols = min(ncols, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig = _new(width * ncols, height * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _legend(fig: Figure, handles: Sequence[object], labels: Sequence[str]) -> None:
    """One legend below the panels, as many columns as fit the figure's width."""
    longest = max(len(label) for label in labels)
    entry_in = 0.5 + 0.065 * longest
    ncols = max(1, min(len(labels), int(fig.get_figwidth() * 0.95 // entry_in)))
    fig.set_figheight(fig.get_figheight() + 0.22 * math.ceil(len(labels) / ncols) + 0.1)
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, frameon=False)


def _draw_lines(fig: Figure, axes: Sequence[Axes], panels: Sequence[tuple[str, pl.DataFrame]],
                keys: Sequence[Row], axis: str,
                plot: Callable[[Axes, pl.DataFrame, dict[str, object]], None]) -> None:
    """Per panel, one curve per series key (rows sorted along the load axis); a shared
    legend of the curves that were drawn."""
    drawn: dict[int, Line2D] = {}
    for ax, (title, rows) in zip(axes, panels, strict=True):
        ax.set_title(title)
        for i, key in enumerate(keys):
            part = rows.filter(_matches(key)).sort(axis)
            if part.height:
                style = _style(i, len(keys))
                plot(ax, part, style)
                drawn[i] = Line2D([], [], markersize=5, **style)
    order = sorted(drawn)
    _legend(fig, [drawn[i] for i in order], [_label(keys[i]) for i in order])


def utilization_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean utilization (95% CI bars) against the load axis."""
    rows = rows.filter(pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows, ["p_fat"])
    keys = _series(rows, [axis, "workload", "p_fat"])
    fig, axes = _figure(len(panels), 4.4, 3.4, sharey=True)

    def plot(ax: Axes, part: pl.DataFrame, style: dict[str, object]) -> None:
        ax.errorbar(part[axis].to_list(), part["utilization_mean"].to_list(),
                    yerr=part["utilization_ci95"].fill_null(0.0).to_list(), capsize=2,
                    markersize=4, **style)

    _draw_lines(fig, axes, panels, keys, axis, plot)
    for ax in axes:
        ax.set_xlabel(_AXIS_LABELS[axis])
        ax.set_ylim(0.0, 1.0)
    axes[0].set_ylabel(_UTILIZATION)
    _title(fig, f"Utilization vs {_AXIS_NAMES[axis]} — experiment {experiment}")
    return fig


class _LogLabels(Formatter):
    """Plain numbers (0.5, 10, 200) on a log axis, quicker to read and to draw than
    mathtext powers. Minor ticks are labelled on short axes, which would otherwise show
    one label or none: all of them under one decade, 2 and 5 under two decades."""

    def __init__(self, minor: bool) -> None:
        self.minor = minor

    def __call__(self, x: float, pos: int | None = None) -> str:
        if self.minor:
            lo, hi = sorted(self.axis.get_view_interval())
            mantissa = round(x / 10 ** math.floor(math.log10(x)))
            if hi >= 100 * lo or (hi >= 10 * lo and mantissa not in (2, 5)):
                return ""
        return f"{x:g}"


def _vs_utilization(experiment: str, rows: pl.DataFrame, column: str, scale: float,
                    ylabel: str, what: str) -> Figure | None:
    """A positive per-configuration mean (log scale) against mean utilization."""
    rows = rows.filter((pl.col(column) > 0) & pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows)
    keys = _series(rows, [axis, "workload"])
    fig, axes = _figure(len(panels), 4.4, 3.4)

    def plot(ax: Axes, part: pl.DataFrame, style: dict[str, object]) -> None:
        ax.plot(part["utilization_mean"].to_list(), (part[column] / scale).to_list(),
                markersize=4, **style)

    _draw_lines(fig, axes, panels, keys, axis, plot)
    for ax in axes:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_LogLabels(minor=False))
        ax.yaxis.set_minor_formatter(_LogLabels(minor=True))
        ax.set_xlabel(_UTILIZATION)
    axes[0].set_ylabel(ylabel)
    _title(fig, f"{what} vs utilization — experiment {experiment}",
           f"(one point per {_AXIS_NAMES[axis]})")
    return fig


def wait_vs_utilization(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean job wait in hours (log) against mean utilization."""
    return _vs_utilization(experiment, rows, "mean_wait_s_mean", 3600.0,
                           "mean job wait (h, log scale)", "Mean wait")


def bsld_vs_utilization(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean bounded slowdown (log) against mean utilization."""
    return _vs_utilization(experiment, rows, "mean_bsld_mean", 1.0,
                           "mean bounded slowdown (τ = 10 s, log scale)", "Bounded slowdown")


def migrations_vs_utilization(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Migrations attempted, successful and the always-migrate maximum per run against
    utilization; below, the mean time between migrations (when any run has one)."""
    rows = rows.filter(pl.col("utilization_mean").is_not_null())
    if not rows.height:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows)
    keys = _series(rows, [axis, "workload"])
    gaps = rows["mean_time_between_migrations_s_mean"].drop_nulls().len() > 0
    ncols = len(panels)
    fig = _new(4.4 * ncols, 3.4 * (1 + gaps))
    grid = fig.subplots(1 + gaps, ncols, squeeze=False, sharex="col")
    drawn: dict[int, object] = {}  # series index: colour
    metrics: set[str] = set()
    for col, (title, panel) in enumerate(panels):
        counts = grid[0][col]
        counts.set_title(title)
        for i, key in enumerate(keys):
            part = panel.filter(_matches(key)).sort(axis)
            if not part.height:
                continue
            color = drawn[i] = _style(i, len(keys))["color"]
            always = bool((part["fn_tor"] == 0.0).all() and (part["fn_max"] == 1.0).all())
            x = part["utilization_mean"].to_list()
            for metric, _, line, marker in _METRICS:
                if metric == "max_successful_mean" and always:
                    continue  # an always-migrate curve is its own maximum
                if part[metric].drop_nulls().len():
                    counts.plot(x, part[metric].to_list(), linestyle=line, marker=marker,
                                markersize=4, color=color)
                    metrics.add(metric)
            if gaps:
                grid[1][col].plot(x, (part["mean_time_between_migrations_s_mean"] / 3600.0)
                                  .to_list(), marker="o", markersize=4, color=color)
        counts.set_ylabel("migrations per run (count)")
        counts.set_ylim(bottom=0)
        grid[-1][col].set_xlabel(_UTILIZATION)
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
    _title(fig, f"Migrations vs utilization — experiment {experiment}",
           f"(one point per {_AXIS_NAMES[axis]})")
    return fig


def _pick(values: Sequence[float], limit: int = MAX_LOADS) -> list[float]:
    """At most `limit` values, evenly spaced by index, always the first and the last."""
    if len(values) <= limit:
        return list(values)
    last = len(values) - 1
    return [values[round(i * last / (limit - 1))] for i in range(limit)]


def capacity(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Capacity utilized, unused and lost per series: a row of panels per workload (and
    p_fat), one panel per load value."""
    rows = rows.filter(pl.all_horizontal(pl.col(c).is_not_null() for c, _, _ in _CAPACITY))
    if not rows.height:
        return None
    axis = _load_axis(rows)
    loads = _pick(sorted(rows[axis].unique().to_list()))
    panels = _panels(rows, ["p_fat"])
    keys = _series(rows, [axis, "workload", "p_fat"])
    labels = [_label(k) for k in keys]
    height = 0.9 + 0.28 * len(keys)
    label_in = 0.07 * max(len(label) for label in labels)
    fig = _new(label_in + 2.3 * len(loads), height * len(panels))
    grid = fig.subplots(len(panels), len(loads), squeeze=False, sharex=True, sharey=True)
    fig.get_layout_engine().set(wspace=0.06)
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
                for column, _, color in _CAPACITY:
                    width = part[column].item()
                    ax.barh(positions[i], width, left=left, color=color, height=0.7)
                    left += width
            ax.set_title(f"{title}\n{_AXIS_SHORT[axis]} = {load:g}")
            ax.grid(axis="y", visible=False)
            ax.grid(axis="x", which="both")
            if r == len(panels) - 1:
                ax.set_xlabel("fraction of capacity")
    _legend(fig, [Patch(color=color) for _, _, color in _CAPACITY],
            [label for _, label, _ in _CAPACITY])
    _title(fig, f"Capacity utilized, unused and lost — experiment {experiment}")
    return fig


def response_vs_load(experiment: str, rows: pl.DataFrame) -> Figure | None:
    """Mean and median response time and bounded slowdown (log scales) against the load
    axis, one curve per series: Frachtenberg et al.'s Figure 7. Metrics without data (a
    store from before they were recorded) are left out."""
    metrics = [m for m in _RESPONSE if rows.filter(pl.col(m[0]) > 0).height]
    if not metrics:
        return None
    axis = _load_axis(rows)
    panels = _panels(rows)
    keys = _series(rows, [axis, "workload"])
    fig = _new(3.6 * len(metrics), 3.2 * len(panels))
    grid = fig.subplots(len(panels), len(metrics), squeeze=False)
    drawn: dict[int, Line2D] = {}
    for r, (title, panel) in enumerate(panels):
        for c, (column, label, scale) in enumerate(metrics):
            ax = grid[r][c]
            for i, key in enumerate(keys):
                part = panel.filter(_matches(key) & (pl.col(column) > 0)).sort(axis)
                if part.height:
                    style = _style(i, len(keys))
                    ax.plot(part[axis].to_list(), (part[column] / scale).to_list(),
                            markersize=4, **style)
                    drawn[i] = Line2D([], [], markersize=5, **style)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(_LogLabels(minor=False))
            ax.yaxis.set_minor_formatter(_LogLabels(minor=True))
            ax.set_title(title)
            ax.set_ylabel(label)
            ax.set_xlabel(_AXIS_LABELS[axis])
    order = sorted(drawn)
    _legend(fig, [drawn[i] for i in order], [_label(keys[i]) for i in order])
    _title(fig, f"Response and bounded slowdown vs {_AXIS_NAMES[axis]} — experiment "
                f"{experiment}")
    return fig


_SOURCES: dict[str, tuple[str, Callable[[str, pl.DataFrame], Figure | None]]] = {
    "utilization-vs-load": ("utilization", utilization_vs_load),
    "wait-vs-utilization": ("wait_slowdown", wait_vs_utilization),
    "bsld-vs-utilization": ("wait_slowdown", bsld_vs_utilization),
    "migrations-vs-utilization": ("migrations", migrations_vs_utilization),
    "capacity": ("capacity", capacity),
    "response-vs-load": ("wait_slowdown", response_vs_load),
}


def _save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext, metadata in (("png", None), ("svg", {"Date": None})):
        path = out_dir / f"{name}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=DPI, metadata=metadata)
        fig.set_layout_engine("none")  # keep the first layout: the second save reuses it
        paths.append(path)
    return paths


def write_figures(tables_dir: str | os.PathLike[str],
                  out_dir: str | os.PathLike[str]) -> list[Path]:
    """Draw every figure each experiment's tables support into `out_dir` as
    <figure>-<experiment>.png (DPI dots per inch) and .svg; returns the paths, ordered by
    experiment, then FIGURES, then png before svg."""
    tables = {}
    for table in sorted({source for source, _ in _SOURCES.values()}):
        path = Path(tables_dir) / f"{table}.parquet"
        if not path.is_file():
            raise SimcoreError(f"missing result table {path}; write it with "
                               "simcore.tables.write_tables")
        tables[table] = pl.read_parquet(path)
    out = Path(out_dir)
    experiments = sorted(set().union(*(t["experiment"].to_list() for t in tables.values())))
    paths: list[Path] = []
    with matplotlib.style.context(STYLE, after_reset=True):
        for experiment in experiments:
            for name in FIGURES:
                table, draw = _SOURCES[name]
                rows = tables[table].filter(pl.col("experiment") == experiment)
                fig = draw(experiment, rows) if rows.height else None
                if fig is not None:
                    paths += _save(fig, out, f"{name}-{experiment}")
    return paths
