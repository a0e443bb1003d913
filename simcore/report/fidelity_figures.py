"""Figures of a fidelity comparison, drawn from its per-job residuals alone (`compare`'s
`Fidelity.residuals`, or `residuals.parquet` read back), in the style and with the
deterministic output of `simcore.report.plots`:

- `simulated-vs-recorded-wait`: each compared job's simulated wait against its recorded
  one, as hexagons coloured by their jobs (log scale), on log axes of wait + 1 s so that
  the many waits of 0 show (at the axes' origin), the line y = x dashed and the bounds of
  `within_10_min` dotted (a simulated wait 10 minutes from the recorded one);
- `wait-cdfs`: the share of jobs waiting at most x, recorded and simulated, on the same
  log axis;
- `start-error-over-time`: the start error (simulated - recorded start) of the jobs
  submitted in each hour, day or week (the longest giving MIN_BINS bins over the log),
  their median and the 25-75% and 10-90% bands, on a symlog axis linear within 10
  minutes (dotted: the bounds of `within_10_min`); below, the jobs compared per bin;
  a line marks the first job of the second half.

Only compared jobs are drawn (a known recorded wait and a simulated start); the titles
give the trace, machine and policy and how many jobs were compared. With none, each
figure says so instead of showing empty axes.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from simcore.base.arrays import numpy_array
from simcore.base.errors import SpecError
from simcore.fidelity.compare import FIGURES, RESIDUALS, WITHIN_S
from simcore.report.plots import figure_title, new_figure, write_figure

#: Durations the wait and error axes mark, seconds each.
DURATIONS = {"10 s": 10.0, "1 min": 60.0, "10 min": 600.0, "1 h": 3600.0, "1 d": 86400.0,
             "1 w": 604800.0, "4 w": 2419200.0}
#: Bins of the error over time: the longest of these widths giving MIN_BINS bins or more.
BIN_WIDTHS = {"week": 604800.0, "day": 86400.0, "hour": 3600.0}
MIN_BINS = 20
#: Points a CDF is drawn through at most (log-spaced beyond that: a pixel's width apart).
MAX_CDF_POINTS = 2000
#: Hexagons across the simulated-against-recorded picture.
HEXAGONS = 40
RECORDED_COLOR, SIMULATED_COLOR = "#4c72b0", "#dd8452"


class Compared:
    """The compared jobs of a residuals table: waits, start errors and submit times in
    seconds, the first submit time of the second half, and how many jobs were left out."""

    def __init__(self, residuals: pa.Table) -> None:
        lacking = [c.name for c in RESIDUALS if c.name not in residuals.column_names]
        if lacking:
            raise SpecError(f"residuals: no column {lacking[0]} ({len(lacking)} lacking); "
                            "expected the columns of simcore.fidelity.compare.RESIDUALS")

        def column(name: str) -> np.ndarray:
            return np.asarray(numpy_array(residuals.column(name)), dtype=np.float64)

        error = column("start_error_s")
        kept = ~np.isnan(error)
        self.error = error[kept]
        self.recorded = column("recorded_wait_s")[kept]
        self.simulated = column("simulated_wait_s")[kept]
        submit = column("submit_s")
        self.submit = submit[kept]
        second = submit[numpy_array(residuals.column("half")) == 2]
        self.second_half = float(second.min()) if second.size else None
        self.left_out = residuals.num_rows - int(kept.sum())

    def __len__(self) -> int:
        return len(self.error)

    def count(self) -> str:
        """How many jobs the figure shows, and how many of the cleaned log it leaves out."""
        text = f"{len(self):,} {'job' if len(self) == 1 else 'jobs'} compared"
        if self.left_out:
            text += (f"; {self.left_out:,} of the cleaned log left out (unknown recorded wait "
                     "or not simulated)")
        return text


def _wait_axis(ax: Axes, which: str, upper: float, lower: float = 1.0) -> None:
    """A log axis of wait + 1 s from `lower` (1: a wait of 0) to `upper`, marked in
    durations."""
    ticks = {"0": 1.0, **{k: s + 1.0 for k, s in DURATIONS.items() if s + 1.0 <= upper}}
    ax.set(**{f"{which}scale": "log", f"{which}lim": (lower, upper)})
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(FixedLocator(list(ticks.values())))
    axis.set_ticklabels(list(ticks))
    axis.set_minor_locator(NullLocator())


def _wait_upper(*waits: np.ndarray) -> float:
    """The end of a wait axis: past the longest wait, and at least an hour."""
    longest = max((float(w.max()) for w in waits if w.size), default=0.0)
    return max(longest + 1.0, DURATIONS["1 h"]) * 1.5


def _none_compared(fig: Figure, compared: Compared) -> None:
    """In place of the axes: a sentence saying that no job was compared."""
    ax = fig.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"no job compared: all {compared.left_out:,} jobs of the cleaned log "
            "have an unknown recorded wait or were not simulated", ha="center", va="center",
            wrap=True, transform=ax.transAxes)


def _figure(size: tuple[float, float], what: str, about: str, compared: Compared
            ) -> tuple[Figure, bool]:
    """A titled figure, and whether it has jobs to draw (else it already says so)."""
    fig = new_figure(*size)
    figure_title(fig, f"{what}: {about}", compared.count())
    if not len(compared):
        _none_compared(fig, compared)
    return fig, bool(len(compared))


def simulated_vs_recorded(compared: Compared, about: str) -> Figure:
    """Simulated against recorded wait, hexagons on log axes of wait + 1 s."""
    fig, drawn = _figure((6.0, 5.6), "Simulated against recorded wait", about, compared)
    if not drawn:
        return fig
    ax = fig.subplots()
    upper = _wait_upper(compared.recorded, compared.simulated)
    end = float(np.log10(upper))
    cells = ax.hexbin(compared.recorded + 1.0, compared.simulated + 1.0, xscale="log",
                      yscale="log", bins="log", mincnt=1, gridsize=HEXAGONS, cmap="viridis",
                      extent=(0.0, end, 0.0, end), linewidths=0.2)
    ax.plot([1.0, upper], [1.0, upper], color="0.2", linestyle="--", linewidth=0.8,
            label="simulated = recorded")
    within = WITHIN_S["within_10_min"]
    shifted = np.geomspace(within + 1.0, upper, 200)
    ax.plot(np.r_[1.0, shifted - within], np.r_[within + 1.0, shifted], color="0.2",
            linestyle=":", linewidth=0.8, label="simulated within 10 min of recorded")
    ax.plot(shifted, shifted - within, color="0.2", linestyle=":", linewidth=0.8)
    below = 10 ** (-end / HEXAGONS)  # room for the whole hexagons of the waits of 0
    _wait_axis(ax, "x", upper, below)
    _wait_axis(ax, "y", upper, below)
    ax.set_aspect("equal")
    ax.set_xlabel("recorded wait (log scale of wait + 1 s: 0 at the origin)")
    ax.set_ylabel("simulated wait (log scale of wait + 1 s)")
    ax.legend(loc="upper left")
    counts = cells.get_array()
    assert counts is not None  # hexbin's jobs per hexagon
    cells.set_clim(1.0, max(10.0, float(counts.max())))
    fig.colorbar(cells, ax=ax, label="jobs per hexagon (log scale)", format="%g")
    return fig


def _cdf(values: np.ndarray, upper: float) -> tuple[np.ndarray, np.ndarray]:
    """(wait + 1 s, share of jobs waiting at most that), a step at each distinct wait,
    through MAX_CDF_POINTS log-spaced points where there are more, out to `upper`."""
    ordered = np.sort(values)
    points = np.unique(ordered)
    if points.size > MAX_CDF_POINTS:
        points = np.geomspace(1.0, ordered[-1] + 1.0, MAX_CDF_POINTS) - 1.0
    share = np.searchsorted(ordered, points, side="right") / ordered.size
    return np.r_[points + 1.0, upper], np.r_[share, 1.0]


def wait_cdfs(compared: Compared, about: str) -> Figure:
    """The recorded and simulated waits' CDFs on one log axis of wait + 1 s."""
    fig, drawn = _figure((6.0, 3.8), "Waits, recorded and simulated", about, compared)
    if not drawn:
        return fig
    ax = fig.subplots()
    upper = _wait_upper(compared.recorded, compared.simulated)
    for name, waits, color in (("recorded", compared.recorded, RECORDED_COLOR),
                               ("simulated", compared.simulated, SIMULATED_COLOR)):
        x, share = _cdf(waits, upper)
        ax.step(x, share, where="post", color=color, linewidth=1.1,
                label=f"{name} (mean {np.mean(waits) / 3600:.2f} h; "
                      f"{np.mean(waits == 0):.1%} wait 0)")
    _wait_axis(ax, "x", upper)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("wait (log scale of wait + 1 s: 0 at the left edge)")
    ax.set_ylabel("share of jobs waiting at most x")
    ax.legend(loc="lower right")
    return fig


def _bins(submit: np.ndarray) -> tuple[str, np.ndarray]:
    """The bin width's name and the bin edges over the submit times (`BIN_WIDTHS`)."""
    first, last = float(submit.min()), float(submit.max())
    name, width = next(((n, w) for n, w in BIN_WIDTHS.items() if (last - first) / w >= MIN_BINS),
                       list(BIN_WIDTHS.items())[-1])
    start = np.floor(first / width) * width
    return name, start + width * np.arange(int((last - start) // width) + 2)


def _error_axis(ax: Axes, quantiles: np.ndarray) -> None:
    """A symlog axis of start errors past the bands' `quantiles`, linear within 10
    minutes, marked in durations."""
    within = WITHIN_S["within_10_min"]
    ax.set_yscale("symlog", linthresh=within)
    reach = max(float(np.nanmax(np.abs(quantiles))), DURATIONS["1 h"]) * 2.0
    ax.set_ylim(-reach, reach)
    marks = {k: s for k, s in DURATIONS.items() if within <= s <= reach}
    ticks = {**{f"-{k}": -s for k, s in reversed(marks.items())}, "0": 0.0, **marks}
    ax.yaxis.set_major_locator(FixedLocator(list(ticks.values())))
    ax.yaxis.set_ticklabels(list(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    for bound in (-within, within):
        ax.axhline(bound, color="0.2", linestyle=":", linewidth=0.8)


def error_over_time(compared: Compared, about: str) -> Figure:
    """The start error against submit time: per bin the median and the 25-75% and 10-90%
    bands, and below the jobs compared per bin; the second half's first job marked."""
    fig, drawn = _figure((8.0, 5.0), "Start error (simulated - recorded start) over the log",
                         about, compared)
    if not drawn:
        return fig
    ax, count_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    name, edges = _bins(compared.submit)
    which = np.digitize(compared.submit, edges) - 1
    counts = np.bincount(which, minlength=len(edges) - 1)
    order = np.argsort(which, kind="stable")
    groups = np.split(compared.error[order], np.cumsum(counts)[:-1])
    quantiles = np.full((5, len(groups)), np.nan)
    for k, errors in enumerate(groups):
        if errors.size:
            quantiles[:, k] = np.quantile(errors, (0.1, 0.25, 0.5, 0.75, 0.9))
    days = edges / 86400.0
    ax.stairs(quantiles[4], days, baseline=quantiles[0], fill=True, color=RECORDED_COLOR,
              alpha=0.2, linewidth=0, label="10-90% of the jobs")
    ax.stairs(quantiles[3], days, baseline=quantiles[1], fill=True, color=RECORDED_COLOR,
              alpha=0.35, linewidth=0, label="25-75%")
    ax.stairs(quantiles[2], days, color=RECORDED_COLOR, linewidth=1.1, baseline=None,
              label="median")
    _error_axis(ax, quantiles)
    ax.set_ylabel("start error\n(dotted: ±10 min)")
    count_ax.stairs(counts, days, fill=True, color="0.55", linewidth=0)
    count_ax.set_ylabel(f"jobs per {name}")
    count_ax.set_xlabel("submit time (days from the log's time 0)")
    count_ax.set_xlim(days[0], days[-1])
    if compared.second_half is not None and edges[0] <= compared.second_half <= edges[-1]:
        for axis in (ax, count_ax):
            axis.axvline(compared.second_half / 86400.0, color="0.2", linestyle="--",
                         linewidth=0.8)
        ax.text(compared.second_half / 86400.0, 0.98, " second half", va="top", ha="left",
                fontsize=7, transform=ax.get_xaxis_transform())
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False,
               title=f"start errors of the jobs submitted in each {name}", title_fontsize=8)
    return fig


DRAW = dict(zip(FIGURES, (simulated_vs_recorded, wait_cdfs, error_over_time), strict=True))


def write_fidelity_figures(residuals: pa.Table, out: str | os.PathLike[str], trace: str,
                           machine: str, policy: str) -> list[Path]:
    """Draw FIGURES of `residuals` (a table of `RESIDUALS` columns; one lacking is an
    error) into the existing directory `out` as <name>.png and .svg, titled with the
    trace, machine and policy; their paths."""
    compared = Compared(residuals)
    about = f"{trace} on {machine}, {policy}"
    paths: list[Path] = []
    for name, draw in DRAW.items():
        paths += write_figure(functools.partial(draw, compared, about), out, name)
    return paths
