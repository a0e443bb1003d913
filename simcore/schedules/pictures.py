"""Pictures of exported schedules (`simcore show DIR [DIR2]`), each as PNG and SVG, drawn in
the style and with the deterministic output of `simcore.report.plots`.

- `gantt`: time x unit, one colour per job (the same in every picture of a run), a start
  delay hatched (where it is MIN_HATCH of the time axis), a migration's move a black line
  from the old units to the new (from MANY_MIGRATIONS on, a tick above the chart, so that
  lines do not hide the jobs).
  Units are ordered so that partitions stay together: along the allocator's ordering
  (curve rank) where there is one, else by the coordinate order (which axis runs fastest)
  that splits the run's segments into the fewest runs of rows. Past RASTER_FROM bars the
  bars are drawn as an image (in the SVG too), unoutlined. A 2D machine gets none: its
  submeshes would be stripes of rows; its snapshots draw each job's rectangle;
- `snapshots`: who holds which unit at chosen moments: for each moment the z-planes of the
  machine side by side (a 2D mesh: one panel, each job's rectangle outlined and numbered);
  on a torus a faded copy of the opposite edge borders each plane, so that a partition
  wrapping around shows on both sides. Moments: the times given, else the largest queue,
  the moment the head job waits longest while at least as many units as it asks for are
  idle (it is blocked by their shape), and just before and after the first migration;
- `series`: waiting jobs, utilization (units held / units) and failed units over time,
  migrations marked (ticks on top of the utilization panel), the warm-up shaded;
- `by-size`: wait and bounded slowdown of each job against its size, the warm-up left out,
  and the mean per size class (sizes 2^(k-1) + 1 to 2^k) where the class has MIN_MEAN jobs.

A `Window` restricts every picture to a stretch of time: the Gantt chart and series to
its span, the snapshots' automatic moments and the by-size jobs to those within it.

With two directories (two policies on one machine and workload), the Gantt charts and
snapshots are side by side and the series and by-size panels overlay both runs.
A flat machine's unit ids are a packing, so it gets no snapshots; nor do placement menus,
whose units lie on several tori.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from simcore.base.errors import SpecError
from simcore.base.stamps import made_files, write_stamp
from simcore.jobs.describe import size_classes
from simcore.report.plots import figure_title, new_figure, write_figure
from simcore.schedules.export import PICTURES, directory_path
from simcore.schedules.exported import Exported, read_exported
from simcore.schedules.segments import MIGRATION, Segment

#: Moments the snapshots show at most.
MAX_MOMENTS = 4
FREE = (1.0, 1.0, 1.0, 1.0)
GHOST = 0.35  # opacity of a torus plane's wrapped-around border
RUN_COLORS = ("#4c72b0", "#dd8452")
#: Bars of a Gantt chart from which it is drawn as an image, not vector shapes.
RASTER_FROM = 1000
#: Share of a Gantt chart's time axis a start delay needs to be hatched.
MIN_HATCH = 0.002
#: Migrations of a Gantt chart from which they are ticks above it, not lines across it.
MANY_MIGRATIONS = 200
#: Jobs a size class needs for its mean on the by-size picture.
MIN_MEAN = 5
#: Units of a time given on the command line, seconds each: those the time axes show.
TIME_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Window:
    """A stretch of time in seconds since a run's first arrival (the time axes' zero);
    None: open on that side."""

    start: float | None = None
    end: float | None = None

    def bounds(self, span: float) -> tuple[float, float]:
        """(start, end), open sides closed at 0 and `span` (a run's last end); an open
        side that would not lie beyond the given one is `span` away from it."""
        room = max(span, 1.0)
        if self.start is None:
            return (0.0 if self.end is None or self.end > 0 else self.end - room,
                    span if self.end is None else self.end)
        return self.start, (self.end if self.end is not None
                            else span if span > self.start else self.start + room)

    def overlaps(self, begin: float, end: float) -> bool:
        """Whether [begin, end] (seconds since the first arrival) meets the window."""
        return ((self.start is None or end >= self.start)
                and (self.end is None or begin <= self.end))


def format_time(seconds: float) -> str:
    """A time in the largest unit of TIME_UNITS it fills, as the command line takes it."""
    unit = next(u for u, s in reversed(TIME_UNITS.items()) if abs(seconds) >= s or u == "s")
    return f"{seconds / TIME_UNITS[unit]:.6g}{unit}"


def _palette() -> tuple[tuple[float, ...], ...]:
    """47 qualitative colours: tab20's dark shades, then the darkest of tab20b's and
    tab20c's hues (greys left out), then lighter shades of each in turn."""
    tab20, b, c = (colormaps[name] for name in ("tab20", "tab20b", "tab20c"))
    shades = [tab20(k) for k in range(0, 20, 2)]
    for shade in range(3):
        shades += [b(4 * hue + shade) for hue in range(5)]
        shades += [c(4 * hue + shade) for hue in range(4)]
        if shade == 0:
            shades += [tab20(k) for k in range(1, 20, 2)]
    return tuple(shades)


PALETTE = _palette()


def job_colors(exported: Exported) -> dict[int, tuple[float, ...]]:
    """A colour per job id, in job order along PALETTE (jobs close in time differ)."""
    return {int(j): PALETTE[k % len(PALETTE)] for k, j in enumerate(exported.jobs["job_id"])}


def _time_unit(span_s: float) -> tuple[float, str]:
    """Seconds per unit of the time axis and its name, for a span of `span_s`."""
    if span_s > 5 * 3600:
        return 3600.0, "h"
    if span_s > 300:
        return 60.0, "min"
    return 1.0, "s"


def _origin(exported: Exported) -> float:
    return float(exported.jobs["submit"].min())


def run_span(exported: Exported) -> float:
    """Seconds from the first arrival to the last end."""
    return max(s.until_s for r in exported.segments.values() for s in r) - _origin(exported)


def is_2d(exported: Exported) -> bool:
    """Whether the machine is a 2D grid of placed units (its jobs are rectangles)."""
    return (len(exported.run["units"]["sides"]) == 2 and not exported.run["units"]["packing"]
            and "torus" not in exported.units)


def row_order(runs: Sequence[Exported]) -> tuple[np.ndarray, str]:
    """Each unit id's row on the Gantt chart and how rows are ordered (module docstring),
    one order for runs on one machine."""
    exported = runs[0]
    units = exported.units
    n = units["id"].shape[0]
    candidates: list[tuple[str, np.ndarray]] = []
    if "curve_rank" in units:
        candidates.append(("rank along the ordering", units["curve_rank"]))
    axes = [a for a in exported.axes if a in units]
    lead = [units["torus"]] if "torus" in units else []
    for perm in itertools.permutations(range(len(axes))):
        keys = [units[axes[d]] for d in perm]  # last key fastest
        order = np.lexsort(tuple(reversed([*lead, *keys])))
        rows = np.empty(n, dtype=np.int64)
        rows[order] = np.arange(n)
        fastest = [axes[d] for d in reversed(perm)]
        candidates.append((f"{fastest[0]} fastest, then {', '.join(fastest[1:])}"
                           if len(axes) > 1 else "id", rows))
    held = [s.units for e in runs for jobs in e.segments.values() for s in jobs
            if s.units.size]
    ids = np.concatenate(held) if held else np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(held)), [h.size for h in held])  # each id's segment

    def pieces(rows: np.ndarray) -> int:
        """Runs of consecutive rows the segments make, summed over the segments."""
        order = np.lexsort((rows[ids], owner))
        cut = (np.diff(rows[ids][order]) != 1) & (np.diff(owner[order]) == 0)
        return len(held) + int(np.count_nonzero(cut))

    best = min(range(len(candidates)), key=lambda k: (pieces(candidates[k][1]), k))
    name, rows = candidates[best]
    return rows, name


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """(first row, count) of each run of consecutive rows."""
    rows = np.sort(rows)
    breaks = np.flatnonzero(np.diff(rows) != 1)
    starts = np.r_[rows[0], rows[breaks + 1]]
    ends = np.r_[rows[breaks], rows[-1]]
    return [(int(a), int(b - a + 1)) for a, b in zip(starts, ends, strict=True)]


def _box(x0: float, x1: float, y0: float, height: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x1, y0), (x1, y0 + height), (x0, y0 + height)]


def draw_gantt(ax: Axes, exported: Exported, colors: dict[int, tuple[float, ...]],
               scale: float, order: tuple[np.ndarray, str], window: Window = Window()
               ) -> tuple[bool, int]:
    """The Gantt chart of one run on `ax` (time in units of `scale` seconds, units on the
    rows of `order`), the segments that meet `window` only; whether a start delay is
    hatched and the migrations drawn."""
    rows, how = order
    t0 = _origin(exported)
    delay = dict(zip(exported.jobs["job_id"].tolist(), exported.jobs["delay"].tolist(),
                     strict=True))
    boxes, faces, hatched, links = [], [], [], []
    lo, hi = window.bounds(run_span(exported))
    shown = min(hi, run_span(exported)) - max(lo, 0.0)  # the run's part of the axis
    visible = (hi - lo) * MIN_HATCH  # a narrower delay would be no hatch
    labels = []
    for job, runs in exported.segments.items():
        previous: Segment | None = None
        for segment in runs:
            if not window.overlaps(segment.from_s - t0, segment.until_s - t0):
                previous = segment
                continue
            x0, x1 = (segment.from_s - t0) / scale, (segment.until_s - t0) / scale
            pieces = _runs(rows[segment.units]) if segment.units.size else []
            for first, count in pieces:
                boxes.append(_box(x0, x1, first, count))
                if count >= rows.shape[0] / 25 and x1 - x0 >= shown / scale / 15:
                    labels.append(((max(x0, lo / scale) + min(x1, hi / scale)) / 2,
                                   first + count / 2, str(job)))
                faces.append(colors[job])
                if segment.cause != MIGRATION and 0 < visible <= delay.get(job, 0.0):
                    hatched.append(_box(x0, x0 + delay[job] / scale, first, count))
            moved = segment.cause == MIGRATION and lo <= segment.from_s - t0 <= hi
            if moved and previous is not None:
                links.append([(x0, float(rows[previous.units].mean()) + 0.5),
                              (x0, float(rows[segment.units].mean()) + 0.5)])
            previous = segment
    many = len(boxes) >= RASTER_FROM
    ax.add_collection(PolyCollection(boxes, facecolors=faces, edgecolors="white",
                                     linewidths=0 if many else 0.3, rasterized=many))
    if hatched:
        ax.add_collection(PolyCollection(hatched, facecolors="none", edgecolors="0.15",
                                         hatch="////", linewidths=0, rasterized=many))
    if len(links) >= MANY_MIGRATIONS:  # lines would hide the jobs: ticks above instead
        ax.plot([link[0][0] for link in links], np.full(len(links), rows.shape[0] * 1.02),
                "|", color="black", markersize=4, markeredgewidth=0.5, clip_on=False)
    elif links:
        ax.add_collection(LineCollection(links, colors="black", linewidths=0.8))
        ax.plot([p[0] for link in links for p in link], [p[1] for link in links for p in link],
                "k.", markersize=2)
    for x, y, text in labels:
        ax.text(x, y, text, ha="center", va="center", fontsize=6, clip_on=True)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(lo / scale, hi / scale)
    ax.set_ylim(0, rows.shape[0])
    ax.set_ylabel(f"unit ({how})")
    ax.grid(False)
    return bool(hatched), len(links)


def gantt(runs: Sequence[Exported], window: Window = Window()) -> Figure | None:
    """Time x unit for each run, side by side, within `window`; None on a 2D machine."""
    if all(is_2d(e) for e in runs):
        return None
    lo, hi = window.bounds(max(run_span(e) for e in runs))
    scale, unit = _time_unit(hi - lo)
    units = max(e.units["id"].shape[0] for e in runs)
    height = min(9.0, 2.5 + units / 40)
    fig = new_figure(6.5 * len(runs), height)
    axes = fig.subplots(1, len(runs), squeeze=False, sharex=True).ravel()
    same = len({e.run["machine"] for e in runs}) == 1
    drawn = []
    for ax, exported in zip(axes, runs, strict=True):
        order = row_order(runs if same else [exported])
        drawn.append(draw_gantt(ax, exported, job_colors(exported), scale, order,
                                Window(lo, hi)))
        ax.set_title(exported.label, **({"pad": 10} if drawn[-1][1] >= MANY_MIGRATIONS
                                         else {}))  # room for the ticks
        ax.set_xlabel(f"time since the first arrival ({unit})")
    moves = max(m for _, m in drawn)
    notes = ["a colour per job"] + ["hatched: start delay"] * any(h for h, _ in drawn) + (
        [f"ticks above: migrations (too many for lines, {MANY_MIGRATIONS}+)"]
        if moves >= MANY_MIGRATIONS else ["black lines: migrations"] * bool(moves))
    figure_title(fig, "Where and when each job ran: " + "; ".join(notes))
    return fig


def run_names(runs: Sequence[Exported]) -> list[str]:
    """Short names that tell the runs apart: their schedulers, else their machines."""
    for names in ([e.run["policy"]["scheduler"] for e in runs], [e.run["machine"] for e in runs]):
        if len(set(names)) == len(names):
            return names
    return [e.label for e in runs]


def occupancy(exported: Exported, t: float) -> dict[int, int]:
    """Unit id -> the job holding it from time t on."""
    held = {}
    for job, runs in exported.segments.items():
        for segment in runs:
            if segment.from_s <= t < segment.until_s:
                held.update(dict.fromkeys(segment.units.tolist(), job))
    return held


def moments(exported: Exported, window: Window = Window()) -> list[tuple[str, float]]:
    """The automatic snapshot moments (module docstring) within `window`, each with what it
    shows."""
    states = exported.states
    t0 = _origin(exported)
    inside = np.array([window.overlaps(t - t0, t - t0) for t in states["time"].tolist()],
                      dtype=bool)
    times, waiting = states["time"][inside], states["waiting_jobs"][inside]
    idle = states["nb_idle"][inside]
    found: list[tuple[str, float]] = []
    if waiting.size and waiting.max() > 0:
        found.append((f"largest queue ({int(waiting.max())} jobs)",
                      float(times[int(np.argmax(waiting))])))
    jobs = exported.jobs
    queue = np.lexsort((jobs["job_id"], jobs["submit"])).tolist()  # arrival order
    submit, allocated = jobs["submit"].tolist(), jobs["allocated"].tolist()
    blocked, worst, first = None, 0.0, 0
    for k, t in enumerate(times.tolist()):
        while first < len(queue) and allocated[queue[first]] <= t:
            first += 1  # allocated by t, so never the head again
        if first == len(queue) or submit[queue[first]] > t:
            continue  # nobody waits
        head = queue[first]
        if jobs["size"][head] <= idle[k] and t - submit[head] >= worst:
            blocked, worst = (int(jobs["job_id"][head]), int(jobs["size"][head]), t), \
                t - submit[head]
    if blocked is not None:
        found.append((f"head job {blocked[0]} ({blocked[1]} units) blocked with enough "
                      "units idle", blocked[2]))
    moves = sorted({s.from_s for runs in exported.segments.values() for s in runs
                    if s.cause == MIGRATION and window.overlaps(s.from_s - t0, s.from_s - t0)})
    if moves:
        which = "the first migration" + (" of the window" if window.start is not None else "")
        before = times[times < moves[0]]
        if before.size:
            found.append((f"just before {which}", float(before[-1])))
        found.append((f"just after {which}", moves[0]))
    return found


def _plane(exported: Exported, held: dict[int, int], colors: dict[int, tuple[float, ...]],
           z: int, wraps: bool) -> np.ndarray:
    """RGBA image of plane z (rows y, columns x), bordered by the opposite edges (faded) on
    a torus."""
    sides = exported.run["units"]["sides"]
    nx, ny = sides[0], sides[1] if len(sides) > 1 else 1
    image = np.ones((ny, nx, 4))
    units = exported.units
    zs = units["z"] if "z" in units else np.zeros_like(units["id"])
    ys = units["y"] if "y" in units else np.zeros_like(units["id"])
    for i in np.flatnonzero(zs == z):
        job = held.get(int(units["id"][i]))
        image[ys[i], units["x"][i]] = colors[job] if job is not None else FREE
    if not wraps:
        return image
    framed = np.ones((ny + 2, nx + 2, 4))
    framed[1:-1, 1:-1] = image
    framed[1:-1, 0], framed[1:-1, -1] = image[:, -1], image[:, 0]
    framed[0, 1:-1], framed[-1, 1:-1] = image[-1], image[0]
    border = np.zeros(framed.shape[:2], dtype=bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    framed[border, :3] = 1 - GHOST * (1 - framed[border, :3])
    framed[0, 0] = framed[0, -1] = framed[-1, 0] = framed[-1, -1] = FREE
    return framed


def _outline_jobs(ax: Axes, exported: Exported, held: dict[int, int]) -> None:
    """Number each job's cells on a 2D panel, and outline them where they fill their
    bounding rectangle (a submesh; not a job spread over rows, as on block machines)."""
    units = exported.units
    by_job: dict[int, list[int]] = {}
    for unit, job in held.items():
        by_job.setdefault(job, []).append(unit)
    index = {int(u): k for k, u in enumerate(units["id"])}
    for job, ids in by_job.items():
        rows = [index[u] for u in ids]
        xs, ys = units["x"][rows], units["y"][rows] if "y" in units else np.zeros(len(rows))
        x0, y0 = xs.min(), ys.min()
        if (xs.max() - x0 + 1) * (ys.max() - y0 + 1) == len(ids):
            ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), xs.max() - x0 + 1, ys.max() - y0 + 1,
                                   fill=False, edgecolor="black", linewidth=0.8))
        if len(ids) >= 4:
            ax.text(xs.mean(), ys.mean(), str(job), ha="center", va="center", fontsize=6)


def snapshots(runs: Sequence[Exported], at: Sequence[float] = (),
              window: Window = Window()) -> Figure | None:
    """Who holds which unit at the moments `at` (seconds since the first arrival, as on
    the time axes), else at the automatic moments of the first run within `window`; None
    where no run has unit places."""
    drawable = [e for e in runs if not e.run["units"]["packing"] and "torus" not in e.units]
    if not drawable:
        return None
    origin = _origin(drawable[0])
    chosen = ([("", origin + float(t)) for t in at] if at
              else moments(drawable[0], window)[:MAX_MOMENTS])
    if not chosen:
        start = origin + window.bounds(0.0)[0]
        chosen = [("first allocation", min((s.from_s for r in drawable[0].segments.values()
                                            for s in r if s.until_s > start), default=start))]
    chosen.sort(key=lambda moment: moment[1])
    sides = drawable[0].run["units"]["sides"]
    planes = sides[2] if len(sides) > 2 else 1
    ratio = (sides[1] if len(sides) > 1 else 1) / sides[0]
    names = run_names(drawable)
    flat = planes == 1  # a 2D machine: the runs side by side, else a row of planes each
    across, down = (len(drawable), 1) if flat else (planes, len(drawable))
    panel = max(0.9, min(3.2 if flat else 2.2, 9.0 / across))
    fig = new_figure(panel * across + 0.4,
                     ((panel * ratio + 0.3) * down + 0.3) * len(chosen) + 0.8)
    for row, (what, t) in zip(fig.subfigures(len(chosen), 1, squeeze=False).ravel(), chosen,
                              strict=True):
        grid = row.subplots(down, across, squeeze=False)
        axes = grid.T if flat else grid  # axes[run, plane]
        for k, exported in enumerate(drawable):
            held = occupancy(exported, t)
            colors = job_colors(exported)
            wraps = bool(exported.run["units"].get("wraps", False))
            for z in range(planes):
                ax = axes[k, z]
                image = _plane(exported, held, colors, z, wraps)
                pad = 1 if wraps else 0
                ax.imshow(image, origin="lower", interpolation="nearest",
                          extent=(-0.5 - pad, image.shape[1] - 0.5 - pad,
                                  -0.5 - pad, image.shape[0] - 0.5 - pad))
                if wraps:
                    ax.add_patch(Rectangle((-0.5, -0.5), image.shape[1] - 2,
                                           image.shape[0] - 2, fill=False,
                                           edgecolor="0.3", linewidth=0.8))
                if planes == 1:
                    _outline_jobs(ax, exported, held)
                ax.set_xticks([])
                ax.set_yticks([])
                ax.grid(False)
                if k == 0 and planes > 1:
                    ax.set_title(f"z = {z}", fontsize=7)
            if flat:
                axes[k, 0].set_title(names[k], fontsize=7)
            elif len(drawable) > 1:
                axes[k, 0].set_ylabel(names[k], fontsize=7)
        scale, unit = _time_unit(t - _origin(drawable[0]))
        moment = f"t = {(t - _origin(drawable[0])) / scale:.4g} {unit}"
        row.suptitle(f"{moment}: {what}" if what else moment, fontsize=8)
    figure_title(fig, "Units held at chosen moments: planes x (right) by y (up), a colour "
                      "per job, white free" + ("; faded borders: the opposite edge "
                                               "(wrap-around)" if any(
                                                   e.run["units"].get("wraps") for e in
                                                   drawable) else ""))
    return fig


def _step(ax: Axes, times: np.ndarray, values: np.ndarray, color: str, label: str) -> None:
    ax.step(times, values, where="post", color=color, linewidth=0.9, label=label)


def series(runs: Sequence[Exported], window: Window = Window()) -> Figure:
    """Waiting jobs, utilization and failed units over time within `window`, migrations
    marked, the warm-up shaded."""
    t0 = min(_origin(e) for e in runs)
    lo, hi = window.bounds(max(e.states["time"].max() for e in runs) - t0)
    scale, unit = _time_unit(hi - lo)
    failed = any(e.states["nb_sleeping"].any() for e in runs)
    fig = new_figure(8.0, 6.0 if failed else 4.4)
    axes = list(fig.subplots(3 if failed else 2, 1, sharex=True))
    for exported, color in zip(runs, RUN_COLORS, strict=False):
        times = (exported.states["time"] - t0) / scale
        units = exported.run["units"]["count"]
        label = exported.label
        _step(axes[0], times, exported.states["waiting_jobs"], color, label)
        _step(axes[1], times, exported.states["nb_computing"] / units, color, label)
        if failed:
            _step(axes[2], times, exported.states["nb_sleeping"], color, label)
        moves = sorted({s.from_s for r in exported.segments.values() for s in r
                        if s.cause == MIGRATION and lo <= s.from_s - t0 <= hi})
        if moves:  # ticks outside the axes: only those within the window
            axes[1].plot((np.array(moves) - t0) / scale, np.full(len(moves), 1.04),
                         "|", color=color, markersize=6, clip_on=False,
                         label=f"migrations ({len(moves)})")
        warm = exported.jobs["submit"][exported.jobs["warmup"] == 1]
        if warm.size:
            for ax in axes:
                ax.axvspan(0, (warm.max() - t0) / scale, color=color, alpha=0.08, lw=0)
    axes[0].set_ylabel("waiting jobs")
    axes[1].set_ylabel("utilization\n(units held / units)")
    axes[1].set_ylim(0, 1.08)
    if failed:
        axes[2].set_ylabel("failed units")
    axes[-1].set_xlim(lo / scale, hi / scale)
    axes[-1].set_xlabel(f"time since the first arrival ({unit})")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)),
               frameon=False, fontsize=7)
    figure_title(fig, "Queue" + (", utilization and failed units" if failed
                                 else " and utilization") + " over time" + (
        "; shaded: the warm-up's arrivals" if any(
            (e.jobs["warmup"] == 1).any() for e in runs) else ""))
    return fig


def class_means(size: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2^k, mean of `values`) of each size class with at least MIN_MEAN jobs."""
    classes = size_classes(size)
    kept = [k for k in np.unique(classes) if np.count_nonzero(classes == k) >= MIN_MEAN]
    return (np.array([2.0 ** k for k in kept]),
            np.array([values[classes == k].mean() for k in kept]))


def by_size(runs: Sequence[Exported], window: Window = Window()) -> Figure:
    """Wait and bounded slowdown against job size (measured jobs within `window`), each job
    a dot, the mean per size class (`class_means`) a line."""
    fig = new_figure(8.0, 3.4)
    axes = fig.subplots(1, 2)
    chosen = [_measured(e, window) for e in runs]
    longest = max([float(e.jobs["wait"][m].max()) for e, m in zip(runs, chosen, strict=True)
                   if m.any()] or [0.0])
    scale, unit = _time_unit(longest)
    for exported, measured, color in zip(runs, chosen, RUN_COLORS, strict=False):
        size = exported.jobs["size"][measured]
        for ax, values in ((axes[0], exported.jobs["wait"][measured] / scale),
                           (axes[1], exported.jobs["bsld"][measured])):
            ax.scatter(size, values, s=6, alpha=0.35, color=color, linewidths=0,
                       rasterized=size.size >= RASTER_FROM)
            ax.plot(*class_means(size, values), color=color, linewidth=1.0, marker="o",
                    markersize=3, label=f"{exported.label} (mean per size class)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("job size (units requested)")
    axes[0].set_yscale("symlog", linthresh=max(1e-3, 1.0 / scale))
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel(f"wait ({unit})")
    axes[1].set_yscale("log")
    if not any(m.any() for m in chosen):  # no job in the window: an empty log axis
        axes[1].set_ylim(1, 10)
    axes[1].set_ylabel("bounded slowdown")
    axes[1].legend(fontsize=7)
    figure_title(fig, "Wait and bounded slowdown by job size (warm-up left out); lines: "
                      f"the mean of sizes 2^(k-1)+1 to 2^k, drawn at 2^k where {MIN_MEAN} "
                      "or more jobs have them")
    return fig


def _measured(exported: Exported, window: Window) -> np.ndarray:
    """Which jobs by-size draws: past the warm-up, from arrival to end within `window`."""
    jobs, t0 = exported.jobs, _origin(exported)
    inside = [window.overlaps(a - t0, b - t0)
              for a, b in zip(jobs["submit"].tolist(), jobs["finish"].tolist(), strict=True)]
    return (jobs["warmup"] == 0) & np.array(inside, dtype=bool)


def outside(runs: Sequence[Exported], at: Sequence[float], window: Window) -> list[str]:
    """What of `at` and `window` lies before the first arrival or past the last end of
    every run, each as a warning line."""
    span = max(run_span(e) for e in runs)
    found = [f"--at {format_time(t)}" for t in at if not 0 <= t <= span]
    if not window.overlaps(0.0, span):
        given = [f"--{n} {format_time(t)}" for n, t in (("from", window.start),
                                                          ("until", window.end))
                 if t is not None]
        found.append(" ".join(given))
    return [f"{what}: outside the run (0s to {format_time(span)} after the first "
            "arrival); the pictures show no job there" for what in found]


def write_pictures(directories: Sequence[str | Path], out: str | Path,
                   at: Sequence[float] = (), window: Window = Window()) -> list[Path]:
    """Draw PICTURES of the export directories (one run, or two side by side) into `out`
    (made once they are read) as <picture>.png and .svg, within `window`, snapshots at
    `at` (seconds since the first arrival) if given; their paths. A moment or window
    outside the runs is warned of on stderr (`outside`). Drawn into an export directory,
    its files and pictures are stamped (`simcore.base.stamps`), as the archive reads them."""
    runs = [read_exported(d) for d in directories]
    first = runs[0]
    for other in runs[1:]:
        same = other.run["machine"] == first.run["machine"]
        if same and other.run["units"] != first.run["units"]:
            raise SpecError(f"{other.directory / 'run.json'}: units of {other.run['machine']} "
                            f"unlike those of {first.directory / 'run.json'}; expected one "
                            "numbering of one machine's units")
    directory_path(out, "--out").mkdir(parents=True, exist_ok=True)
    for warning in outside(runs, at, window):
        print(f"simcore: warning: {warning}", file=sys.stderr)
    draw = {"gantt": lambda: gantt(runs, window),
            "snapshots": lambda: snapshots(runs, at, window),
            "series": lambda: series(runs, window), "by-size": lambda: by_size(runs, window)}
    paths: list[Path] = []
    for name in PICTURES:
        paths += write_figure(draw[name], out, name)
    export = Path(out).resolve()
    if (export / "run.json").is_file():  # an export, now drawn: stamped as made
        write_stamp(export, made_files(export))
    return paths
