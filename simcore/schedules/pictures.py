"""Pictures of exported schedules (`simcore show DIR [DIR2]`), each as PNG and SVG, drawn in
the style and with the deterministic output of `simcore.report.plots`.

- `gantt`: time x unit, one colour per job (the same in every picture of a run), a start
  delay hatched, a migration's move a black line from the old units to the new. Units are
  ordered so that partitions stay together: along the allocator's ordering (curve rank)
  where there is one, else by the coordinate order (which axis runs fastest) that splits
  the run's segments into the fewest runs of rows;
- `snapshots`: who holds which unit at chosen moments: for each moment the z-planes of the
  machine side by side (a 2D mesh: one panel, each job's rectangle outlined and numbered);
  on a torus a faded copy of the opposite edge borders each plane, so that a partition
  wrapping around shows on both sides. Moments: the times given, else the largest queue,
  the moment the head job waits longest while at least as many units as it asks for are
  idle (it is blocked by their shape), and just before and after the first migration;
- `series`: waiting jobs, utilization (units held / units) and failed units over time,
  migrations marked (ticks on top of the utilization panel), the warm-up shaded;
- `by-size`: wait and bounded slowdown of each job against its size, the warm-up left out.

With two directories (two policies on one machine and workload), the Gantt charts and
snapshots are side by side and the series and by-size panels overlay both runs.
A flat machine's unit ids are a packing, so it gets no snapshots; nor do placement menus,
whose units lie on several tori.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from simcore.base.errors import SpecError
from simcore.report.plots import figure_title, new_figure, write_figure
from simcore.schedules.export import PICTURES, directory_path
from simcore.schedules.exported import Exported, read_exported
from simcore.schedules.segments import MIGRATION, Segment

#: Moments the snapshots show at most.
MAX_MOMENTS = 4
FREE = (1.0, 1.0, 1.0, 1.0)
GHOST = 0.35  # opacity of a torus plane's wrapped-around border
RUN_COLORS = ("#4c72b0", "#dd8452")


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

    def pieces(rows: np.ndarray) -> int:
        return sum(int(np.count_nonzero(np.diff(np.sort(rows[ids])) != 1)) + 1
                   for ids in held)

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
               scale: float, order: tuple[np.ndarray, str]) -> None:
    """The Gantt chart of one run on `ax` (time in units of `scale` seconds, units on the
    rows of `order`)."""
    rows, how = order
    t0 = _origin(exported)
    delay = dict(zip(exported.jobs["job_id"].tolist(), exported.jobs["delay"].tolist(),
                     strict=True))
    boxes, faces, hatched, links = [], [], [], []
    end = max(s.until_s for runs in exported.segments.values() for s in runs)
    labels = []
    for job, runs in exported.segments.items():
        previous: Segment | None = None
        for segment in runs:
            x0, x1 = (segment.from_s - t0) / scale, (segment.until_s - t0) / scale
            pieces = _runs(rows[segment.units]) if segment.units.size else []
            for first, count in pieces:
                boxes.append(_box(x0, x1, first, count))
                if count >= rows.shape[0] / 25 and x1 - x0 >= (end - t0) / scale / 15:
                    labels.append(((x0 + x1) / 2, first + count / 2, str(job)))
                faces.append(colors[job])
                if segment.cause != MIGRATION and delay.get(job, 0.0) > 0:
                    hatched.append(_box(x0, x0 + delay[job] / scale, first, count))
            if segment.cause == MIGRATION and previous is not None:
                links.append([(x0, float(rows[previous.units].mean()) + 0.5),
                              (x0, float(rows[segment.units].mean()) + 0.5)])
            previous = segment
    ax.add_collection(PolyCollection(boxes, facecolors=faces, edgecolors="white",
                                     linewidths=0.3))
    if hatched:
        ax.add_collection(PolyCollection(hatched, facecolors="none", edgecolors="0.15",
                                         hatch="////", linewidths=0))
    if links:
        ax.add_collection(LineCollection(links, colors="black", linewidths=0.8))
        ax.plot([p[0] for link in links for p in link], [p[1] for link in links for p in link],
                "k.", markersize=2)
    for x, y, text in labels:
        ax.text(x, y, text, ha="center", va="center", fontsize=6, clip_on=True)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, rows.shape[0])
    ax.set_ylabel(f"unit ({how})")
    ax.grid(False)


def gantt(runs: Sequence[Exported]) -> Figure:
    """Time x unit for each run, side by side."""
    span = max(max(s.until_s for r in e.segments.values() for s in r) - _origin(e)
               for e in runs)
    scale, unit = _time_unit(span)
    units = max(e.units["id"].shape[0] for e in runs)
    height = min(9.0, 2.5 + units / 40)
    fig = new_figure(6.5 * len(runs), height)
    axes = fig.subplots(1, len(runs), squeeze=False, sharex=True).ravel()
    same = len({e.run["machine"] for e in runs}) == 1
    for ax, exported in zip(axes, runs, strict=True):
        order = row_order(runs if same else [exported])
        draw_gantt(ax, exported, job_colors(exported), scale, order)
        ax.set_xlim(0, span / scale)
        ax.set_title(exported.label)
        ax.set_xlabel(f"time since the first arrival ({unit})")
    figure_title(fig, "Where and when each job ran: a colour per job; hatched: start delay; "
                      "black lines: migrations")
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


def moments(exported: Exported) -> list[tuple[str, float]]:
    """The automatic snapshot moments (module docstring), each with what it shows."""
    states = exported.states
    times, waiting = states["time"], states["waiting_jobs"]
    found: list[tuple[str, float]] = []
    if waiting.size and waiting.max() > 0:
        found.append((f"largest queue ({int(waiting.max())} jobs)",
                      float(times[int(np.argmax(waiting))])))
    jobs = exported.jobs
    blocked, worst = None, 0.0
    for k, t in enumerate(times.tolist()):
        waits = np.flatnonzero((jobs["submit"] <= t) & (jobs["allocated"] > t))
        if not waits.size:
            continue
        head = waits[np.lexsort((jobs["job_id"][waits], jobs["submit"][waits]))[0]]
        idle = states["nb_idle"][k]
        if jobs["size"][head] <= idle and t - jobs["submit"][head] >= worst:
            blocked, worst = (int(jobs["job_id"][head]), int(jobs["size"][head]), t), \
                t - jobs["submit"][head]
    if blocked is not None:
        found.append((f"head job {blocked[0]} ({blocked[1]} units) blocked with enough "
                      "units idle", blocked[2]))
    moves = sorted({s.from_s for runs in exported.segments.values() for s in runs
                    if s.cause == MIGRATION})
    if moves:
        before = times[times < moves[0]]
        if before.size:
            found.append(("just before the first migration", float(before[-1])))
        found.append(("just after the first migration", moves[0]))
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
    """Outline and number each job's cells on a 2D panel (its bounding rectangle)."""
    units = exported.units
    by_job: dict[int, list[int]] = {}
    for unit, job in held.items():
        by_job.setdefault(job, []).append(unit)
    index = {int(u): k for k, u in enumerate(units["id"])}
    for job, ids in by_job.items():
        rows = [index[u] for u in ids]
        xs, ys = units["x"][rows], units["y"][rows] if "y" in units else np.zeros(len(rows))
        x0, y0 = xs.min(), ys.min()
        ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), xs.max() - x0 + 1, ys.max() - y0 + 1,
                               fill=False, edgecolor="black", linewidth=0.8))
        if len(ids) >= 4:
            ax.text(xs.mean(), ys.mean(), str(job), ha="center", va="center", fontsize=6)


def snapshots(runs: Sequence[Exported], at: Sequence[float] = ()) -> Figure | None:
    """Who holds which unit at the moments `at` (seconds since the first arrival, as on
    the time axes), else at the automatic moments of the first run; None where no run has
    unit places."""
    drawable = [e for e in runs if not e.run["units"]["packing"] and "torus" not in e.units]
    if not drawable:
        return None
    origin = _origin(drawable[0])
    chosen = [("", origin + float(t)) for t in at] if at else moments(drawable[0])[:MAX_MOMENTS]
    if not chosen:
        chosen = [("first allocation", min(s.from_s for r in drawable[0].segments.values()
                                           for s in r))]
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


def series(runs: Sequence[Exported]) -> Figure:
    """Waiting jobs, utilization and failed units over time, migrations marked, the
    warm-up shaded."""
    t0 = min(_origin(e) for e in runs)
    span = max(e.states["time"].max() for e in runs) - t0
    scale, unit = _time_unit(span)
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
                        if s.cause == MIGRATION})
        if moves:
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
    axes[-1].set_xlabel(f"time since the first arrival ({unit})")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)),
               frameon=False, fontsize=7)
    figure_title(fig, "Queue" + (", utilization and failed units" if failed
                                 else " and utilization") + " over time" + (
        "; shaded: the warm-up's arrivals" if any(
            (e.jobs["warmup"] == 1).any() for e in runs) else ""))
    return fig


def by_size(runs: Sequence[Exported]) -> Figure:
    """Wait and bounded slowdown against job size (measured jobs), each job a dot, the
    mean per size a line."""
    fig = new_figure(8.0, 3.4)
    axes = fig.subplots(1, 2)
    longest = max(float(e.jobs["wait"].max()) for e in runs)
    scale, unit = _time_unit(longest)
    for exported, color in zip(runs, RUN_COLORS, strict=False):
        measured = exported.jobs["warmup"] == 0
        size = exported.jobs["size"][measured]
        for ax, values in ((axes[0], exported.jobs["wait"][measured] / scale),
                           (axes[1], exported.jobs["bsld"][measured])):
            ax.scatter(size, values, s=6, alpha=0.35, color=color, linewidths=0)
            sizes = np.unique(size)
            ax.plot(sizes, [values[size == s].mean() for s in sizes], color=color,
                    linewidth=1.0, label=f"{exported.label} (mean per size)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("job size (units requested)")
    axes[0].set_yscale("symlog", linthresh=max(1e-3, 1.0 / scale))
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel(f"wait ({unit})")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("bounded slowdown")
    axes[1].legend(fontsize=7)
    figure_title(fig, "Wait and bounded slowdown by job size (warm-up left out)")
    return fig


def write_pictures(directories: Sequence[str | Path], out: str | Path,
                   at: Sequence[float] = ()) -> list[Path]:
    """Draw PICTURES of the export directories (one run, or two side by side) into `out`
    (made once they are read) as <picture>.png and .svg; their paths."""
    runs = [read_exported(d) for d in directories]
    first = runs[0]
    for other in runs[1:]:
        same = other.run["machine"] == first.run["machine"]
        if same and other.run["units"] != first.run["units"]:
            raise SpecError(f"{other.directory / 'run.json'}: units of {other.run['machine']} "
                            f"unlike those of {first.directory / 'run.json'}; expected one "
                            "numbering of one machine's units")
    directory_path(out, "--out").mkdir(parents=True, exist_ok=True)
    draw = {"gantt": lambda: gantt(runs), "snapshots": lambda: snapshots(runs, at),
            "series": lambda: series(runs), "by-size": lambda: by_size(runs)}
    paths: list[Path] = []
    for name in PICTURES:
        paths += write_figure(draw[name], out, name)
    return paths
