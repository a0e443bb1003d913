"""Pictures of an exported schedule: a known placement drawn where it belongs in the job's
colour, deterministic files, and `simcore show`'s refusals."""

from __future__ import annotations

import matplotlib.style
import numpy as np
import pytest

from simcore.cli.main import main
from simcore.machines.spec import MachineSpec
from simcore.report.plots import STYLE
from simcore.schedules.export import Schedule, write_exports
from simcore.schedules.exported import read_exported
from simcore.schedules.pictures import (
    PICTURES,
    gantt,
    job_colors,
    row_order,
    snapshots,
    write_pictures,
)
from simcore.simulate import simulate
from tests.test_schedules import golden_jobs

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


def test_pictures_are_deterministic(golden, tmp_path):
    first = write_pictures([golden], tmp_path / "a")
    again = write_pictures([golden], tmp_path / "b")
    assert [p.name for p in first] == [f"{n}.{e}" for n in PICTURES for e in ("png", "svg")]
    for a, b in zip(first, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


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
