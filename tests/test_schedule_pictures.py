"""Pictures of an exported schedule: a known placement drawn where it belongs in the job's
colour, deterministic files, `simcore show`'s refusals, time windows and warnings, many
migrations, size classes, a 2D mesh's rectangles and the stamp of a drawn export."""

from __future__ import annotations

import shutil

import matplotlib.style
import numpy as np
import pytest
from matplotlib.collections import LineCollection

from simcore.base.stamps import stamp_path, stamp_problems
from simcore.cli.main import main
from simcore.jobs.describe import size_classes
from simcore.machines.spec import MachineSpec
from simcore.report.plots import STYLE
from simcore.schedules import pictures
from simcore.schedules.export import Schedule, write_exports
from simcore.schedules.exported import read_exported
from simcore.schedules.pictures import (
    MANY_MIGRATIONS,
    MIN_MEAN,
    PICTURES,
    Window,
    by_size,
    class_means,
    gantt,
    job_colors,
    occupancy,
    outside,
    row_order,
    snapshots,
    write_pictures,
)
from simcore.simulate import simulate
from tests.test_schedules import golden_jobs, run

JOB = 5  # the golden run's job on units 0 and 3 (a 2x1x1 box wrapping from x = 3 to 0)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """The golden torus:4x2x2 run, exported."""
    out = tmp_path_factory.mktemp("golden")
    spec = MachineSpec.parse("torus:4x2x2")
    jobs = golden_jobs()
    result = simulate(jobs, spec, "fcfs")
    write_exports(Schedule.of(result, jobs, spec, {"source": "golden"}), out)
    return out


def pixel(fig, ax, x: float, y: float) -> np.ndarray:
    """The RGB of the pixel at data point (x, y) of `ax`."""
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())
    px, py = ax.transData.transform((x, y))
    return image[int(image.shape[0] - py), int(px), :3] / 255.0


def test_the_gantt_chart_draws_a_job_on_its_units(golden):
    exported = read_exported(golden)
    segment = exported.segments[JOB][0]
    assert segment.units.tolist() == [0, 3]
    with matplotlib.style.context(STYLE, after_reset=True):
        fig = gantt([exported])
        ax = fig.axes[0]
        rows, _ = row_order([exported])
        colour = np.array(job_colors(exported)[JOB][:3])
        middle = (3 * segment.from_s + segment.until_s) / 4 - exported.jobs["submit"].min()
        # a quarter in: the job's number is written at the middle
        for unit in segment.units:
            assert np.abs(pixel(fig, ax, middle, rows[unit] + 0.5) - colour).max() < 0.02
        others = [u for u in range(16) if u not in (0, 3, 1)]  # job 4 holds unit 1
        busy = [np.abs(pixel(fig, ax, middle, rows[u] + 0.5) - colour).max() < 0.02
                for u in others]
        assert not any(busy)


def test_a_snapshot_shows_the_wrapping_box_on_both_edges(golden):
    exported = read_exported(golden)
    with matplotlib.style.context(STYLE, after_reset=True):
        fig = snapshots([exported], at=[90.0])  # 100 s: the first arrival is at 10 s
        plane = fig.subfigs[0].axes[0]  # z = 0
        colour = np.array(job_colors(exported)[JOB][:3])
        for x in (0, 3):
            assert np.abs(pixel(fig, plane, x, 0) - colour).max() < 0.02
        assert np.abs(pixel(fig, plane, 2, 0) - colour).max() > 0.1  # job 2's unit
        ghost = pixel(fig, plane, 4, 0)  # x = 0 seen past the wrap, faded
        assert np.abs(ghost - (1 - 0.35 * (1 - colour))).max() < 0.02


def test_pictures_are_deterministic_and_a_drawn_export_is_stamped(golden, tmp_path):
    export = tmp_path / "run"
    shutil.copytree(golden, export)
    first = write_pictures([export], export)
    again = write_pictures([golden], tmp_path / "b")
    assert [p.name for p in first] == [f"{n}.{e}" for n in PICTURES for e in ("png", "svg")]
    for a, b in zip(first, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert stamp_problems(export) == [] and not stamp_path(tmp_path / "b").exists()
    (export / "jobs.csv").write_text((export / "jobs.csv").read_text() + "\n")
    assert stamp_problems(export) == [f"{export / 'jobs.csv'}: edited since it was made"]
    spec = MachineSpec.parse("torus:4x2x2")
    jobs = golden_jobs()
    write_exports(Schedule.of(simulate(jobs, spec, "fcfs"), jobs, spec, {"source": "g"}),
                  export)
    assert not stamp_path(export).exists()  # a new export, not yet drawn


def test_show_draws_two_runs_and_refuses_what_it_cannot(golden, tmp_path, capsys):
    out = tmp_path / "two"
    assert main(["show", str(golden), str(golden), "--out", str(out)]) == 0
    assert (out / "gantt.png").is_file() and (out / "by-size.svg").is_file()
    assert main(["show", str(golden), str(golden), str(golden), "--out", str(out)]) == 2
    assert "expected one, or two" in capsys.readouterr().err
    assert main(["show", str(tmp_path)]) == 2
    assert "no jobs.csv" in capsys.readouterr().err


def test_a_flat_machine_gets_no_snapshots(tmp_path):
    spec = MachineSpec.parse("flat:8")
    jobs = golden_jobs()
    result = simulate(jobs, spec, "fcfs")
    write_exports(Schedule.of(result, jobs, spec, {"source": "golden"}), tmp_path)
    names = [p.name for p in write_pictures([tmp_path], tmp_path)]
    assert "snapshots.png" not in names and "gantt.png" in names


@pytest.fixture(scope="module")
def migrated(tmp_path_factory, trace_excerpt):
    """B+M on torus:4x4x8 (300 SDSC jobs, migrations among them), exported."""
    out = tmp_path_factory.mktemp("bm")
    write_exports(run(trace_excerpt, "torus:4x4x8", None, "bm", {})[3], out)
    return out


def bar_spans(ax) -> list[tuple[float, float]]:
    """(left, right) of each bar of a Gantt chart's axes."""
    return [(p.vertices[:, 0].min(), p.vertices[:, 0].max())
            for p in ax.collections[0].get_paths()]


def test_a_window_draws_only_the_jobs_that_overlap_it(migrated):
    exported = read_exported(migrated)
    start, end = 20 * 3600.0, 30 * 3600.0
    with matplotlib.style.context(STYLE, after_reset=True):
        whole = bar_spans(gantt([exported]).axes[0])
        fig = gantt([exported], Window(start, end))
        ax = fig.axes[0]
        scale = 3600.0 if "(h)" in ax.get_xlabel() else 60.0
        spans = bar_spans(ax)
    assert ax.get_xlim() == (start / scale, end / scale)
    assert 0 < len(spans) < len(whole)
    assert all(b >= start / scale and a <= end / scale for a, b in spans)
    inside = [s for s in whole if s[1] * 3600 >= start and s[0] * 3600 <= end]  # whole: in h
    assert len(spans) == len(inside)


def test_a_window_or_moment_past_the_run_is_warned_of(golden, tmp_path, capsys):
    assert main(["show", str(golden), "--out", str(tmp_path / "a"), "--from", "1h"]) == 0
    err = capsys.readouterr().err
    assert err == ("simcore: warning: --from 1h: outside the run (0s to 2.5min after the "
                   "first arrival); the pictures show no job there\n")
    exported = [read_exported(golden)]
    assert outside(exported, [120.0], Window(end=100.0)) == []  # within 0 to 150 s
    assert outside(exported, [-1.0, 151.0], Window(start=-60.0, end=-30.0)) == [
        f"{given}: outside the run (0s to 2.5min after the first arrival); the pictures "
        "show no job there" for given in ("--at -1s", "--at 2.51667min",
                                          "--from -1min --until -30s")]


def test_many_migrations_are_ticks_above_the_gantt_chart_not_lines_across_it(
        migrated, monkeypatch):
    exported = read_exported(migrated)
    moves = sum(s.cause == "migration" for r in exported.segments.values() for s in r)
    assert moves >= MANY_MIGRATIONS
    with matplotlib.style.context(STYLE, after_reset=True):
        ticks = gantt([exported]).axes[0]
        monkeypatch.setattr(pictures, "MANY_MIGRATIONS", moves + 1)
        lines = gantt([exported]).axes[0]
    assert len(lines.collections[-1].get_segments()) == moves  # a line per move
    assert not any(isinstance(c, LineCollection) for c in ticks.collections)
    [marks] = ticks.lines
    assert marks.get_marker() == "|" and len(marks.get_xdata()) == moves
    assert min(marks.get_ydata()) > ticks.get_ylim()[1]  # above the units' rows


def test_by_size_draws_the_mean_of_each_size_class_with_enough_jobs(migrated):
    sizes = np.array([1, 1, 1, 1, 1, 3, 3, 4, 4, 4, 5])
    x, means = class_means(sizes, sizes * 10.0)
    assert x.tolist() == [1.0, 4.0] and means.tolist() == [10.0, 36.0]  # 5 jobs; 8 gets 1
    exported = read_exported(migrated)
    with matplotlib.style.context(STYLE, after_reset=True):
        wait = by_size([exported]).axes[0]
    [line] = wait.lines
    measured = exported.jobs["size"][exported.jobs["warmup"] == 0]
    classes = size_classes(measured)
    for k in np.log2(line.get_xdata()):
        assert k == int(k) and np.count_nonzero(classes == k) >= MIN_MEAN


def test_a_2d_mesh_has_its_jobs_as_rectangles_and_no_gantt_chart(trace_excerpt, tmp_path):
    write_exports(run(trace_excerpt, "mesh:16x16", "ff", "scan-all", {}, jobs=60)[3], tmp_path)
    names = [p.name for p in write_pictures([tmp_path], tmp_path)]
    assert "gantt.png" not in names and "snapshots.png" in names
    exported = read_exported(tmp_path)
    t = float(np.median(exported.jobs["start"])) - exported.jobs["submit"].min()
    held = occupancy(exported, exported.jobs["submit"].min() + t)
    assert held
    with matplotlib.style.context(STYLE, after_reset=True):
        [panel] = snapshots([exported], at=[t]).subfigs[0].axes
    drawn = {(r.get_x() + 0.5, r.get_y() + 0.5, r.get_width(), r.get_height())
             for r in panel.patches}
    xs, ys = exported.units["x"], exported.units["y"]
    for job in set(held.values()):
        units = [u for u, j in held.items() if j == job]
        x0, y0 = xs[units].min(), ys[units].min()
        assert (x0, y0, xs[units].max() - x0 + 1, ys[units].max() - y0 + 1) in drawn
        assert len(units) == (xs[units].max() - x0 + 1) * (ys[units].max() - y0 + 1)


def test_many_bars_are_drawn_as_an_image_without_outlines(golden, monkeypatch):
    exported = read_exported(golden)
    with matplotlib.style.context(STYLE, after_reset=True):
        few = gantt([exported]).axes[0].collections[0]
        monkeypatch.setattr(pictures, "RASTER_FROM", 1)
        many = gantt([exported]).axes[0].collections[0]
    assert not few.get_rasterized() and few.get_linewidths()[0] > 0
    assert many.get_rasterized() and many.get_linewidths()[0] == 0
