"""A run's schedule exported: jobs.csv in Batsim's format, placements.csv, machine_states.csv,
the SWF schedule and the unit numbering, read back here with the csv module and an
interval-set parser of the test's own, on every machine kind."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.schedules.export import Schedule, write_exports
from simcore.schedules.units import numbering
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare

GOLDEN = Path(__file__).parent / "data" / "schedules" / "torus-4x2x2-jobs.csv"
BATSIM = ["job_id", "workload_name", "profile", "submission_time",
          "requested_number_of_resources", "requested_time", "success", "final_state",
          "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
          "stretch", "allocated_resources", "consumed_energy", "metadata"]
FAILING = {"unit_mtbf_s": 2e6, "repair_s": 7200.0}

#: (machine, allocator, scheduler, machine options)
CASES = [
    ("torus:4x4x8", None, "fcfs", {}),
    ("torus:4x4x8", None, "bm", {}),
    ("mesh:16x16", "ff", "scan-all", {}),
    ("mesh:16x16", "bf-rot", "fcfs", {}),
    ("mesh:16x16", "as", "mq", {}),
    ("mesh:8x8x2", "first-fit", "fcfs", {"ordering": "hilbert"}),
    ("slurm-torus3d:example-8x4x4.yaml", None, "backfill", {}),
    ("cubes:2x2x2:2", None, "fcfs", {}),
    ("bgl:8x4x4", None, "backfill", {}),
    ("torus:4x4x8", None, "backfill", FAILING),
    ("torus:4x4x8", None, "fcfs", {**FAILING, "on_failure": "kill"}),
    ("flat:128", None, "fcfs", FAILING),
]


def parse_intervals(text: str) -> list[tuple[int, int]]:
    """`0-3 8` -> [(0, 3), (8, 8)]."""
    out = []
    for part in text.split(" ") if text else []:
        low, _, high = part.partition("-")
        out.append((int(low), int(high or low)))
    return out


def canonical(intervals: list[tuple[int, int]]) -> bool:
    """Ascending, disjoint and maximal (a gap of at least one id between intervals)."""
    return all(a <= b for a, b in intervals) and all(
        b1 + 1 < a2 for (_, b1), (a2, _) in itertools.pairwise(intervals))


def ids(text: str) -> set[int]:
    return {i for a, b in parse_intervals(text) for i in range(a, b + 1)}


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def run(trace_excerpt, text: str, allocator: str | None, scheduler: str, options: dict,
        jobs: int = 300):
    options = dict(options)
    ordering = options.pop("ordering", None)
    spec = MachineSpec.parse(text, allocator, ordering=ordering, options=options)
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    work = prepare(table, WorkloadSpec(first_jobs=jobs, fit_to_machine=True, p_torus=1.0),
                   spec, seed=2)
    result = simulate(work, spec, scheduler, seed=2)
    return spec, work, result, Schedule.of(result, work, spec, {"source": "sdsc"})


def held_spans(directory: Path) -> list[tuple[int, float, float, set[int]]]:
    """(job, from, until, units) of every span a job held units: placements.csv's segments
    for jobs listed there, else the allocation to the finish of jobs.csv."""
    _, moves = read_csv(directory / "placements.csv")
    _, rows = read_csv(directory / "jobs.csv")
    moved = {row["job_id"] for row in moves}
    spans = [(int(r["job_id"]), float(r["from_time"]), float(r["until_time"]),
              ids(r["allocated_resources"])) for r in moves]
    spans += [(int(r["job_id"]), float(r["allocation_time"]), float(r["finish_time"]),
               ids(r["allocated_resources"])) for r in rows
              if r["job_id"] not in moved and r["final_state"] != "REJECTED"]
    return spans


@pytest.mark.parametrize(("text", "allocator", "scheduler", "options"), CASES)
def test_exports_read_back(tmp_path, trace_excerpt, text, allocator, scheduler, options):
    spec, work, result, schedule = run(trace_excerpt, text, allocator, scheduler, options)
    write_exports(schedule, tmp_path)
    header, rows = read_csv(tmp_path / "jobs.csv")
    assert header[:17] == BATSIM
    assert len(rows) == len(work)
    units = spec.units
    for row in rows:
        intervals = parse_intervals(row["allocated_resources"])
        assert canonical(intervals), row["allocated_resources"]
        assert all(part != f"{a}-{a}" for part, (a, _) in zip(
            row["allocated_resources"].split(), intervals, strict=True))
        if row["final_state"] == "REJECTED":
            assert not intervals and row["starting_time"] == ""
            continue
        found = ids(row["allocated_resources"])
        assert all(0 <= i < units for i in found)
        assert len(found) == int(row["allocated_number_of_resources"])
        assert row["final_state"] in ("COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED")
        assert row["success"] == str(int(row["final_state"] == "COMPLETED_SUCCESSFULLY"))
    by_unit: dict[int, list[tuple[float, float, int]]] = {}
    for job, start, until, held in held_spans(tmp_path):
        assert start <= until
        for unit in held:
            by_unit.setdefault(unit, []).append((start, until, job))
    for spans in by_unit.values():
        spans.sort()
        for (_, until, job), (start, _, other) in itertools.pairwise(spans):
            assert until <= start, f"jobs {job} and {other} share a unit"
    check_states(tmp_path, units)
    check_swf(tmp_path, rows)
    _, moves = read_csv(tmp_path / "placements.csv")
    causes = {row["cause"] for row in moves}
    if scheduler == "bm":
        assert "migration" in causes and result.summary["migrations_successful"] > 0
    if "unit_mtbf_s" in options and options.get("on_failure", "requeue") == "requeue":
        requeued = sum(row["cause"] == "requeue" for row in moves)
        assert requeued == result.summary["runs_cut_short"] > 0
    if options.get("on_failure") == "kill":
        assert any(row["final_state"] == "COMPLETED_KILLED" for row in rows)
    resources_header, resources = read_csv(tmp_path / "resources.csv")
    assert resources_header[:2] == ["id", "x"] and len(resources) == units
    assert [int(r["id"]) for r in resources] == list(range(units))


def check_states(directory: Path, units: int) -> None:
    """Every row sums to the machine's units; busy unit-seconds are the held spans'."""
    header, rows = read_csv(directory / "machine_states.csv")
    assert header == ["time", "nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle",
                      "nb_computing", "waiting_jobs", "waiting_units"]
    states = header[1:6]
    assert all(sum(int(r[s]) for s in states) == units for r in rows)
    assert all(int(r[s]) >= 0 for r in rows for s in header[1:])
    times = [float(r["time"]) for r in rows]
    busy = sum(int(r["nb_computing"]) * (t1 - t0)
               for r, t0, t1 in zip(rows, times, times[1:], strict=False))
    held = sum(len(units_) * (until - start) for _, start, until, units_ in held_spans(directory))
    assert busy == pytest.approx(held, rel=1e-12)
    assert rows[-1]["nb_computing"] == "0" and rows[-1]["waiting_jobs"] == "0"


def check_swf(directory: Path, rows: list[dict[str, str]]) -> None:
    """The SWF schedule reads back with simcore's reader and matches jobs.csv."""
    table = read_swf(directory / "schedule.swf")
    assert table.num_rows == len(rows)
    status = {"COMPLETED_SUCCESSFULLY": 1, "COMPLETED_KILLED": 0, "REJECTED": 5}
    for row, number, wait, run_s, alloc, code in zip(
            rows, *(table.column(c).to_pylist() for c in (
                "job_number", "wait_time", "run_time", "allocated_processors", "status")),
            strict=True):
        assert number == int(row["job_id"]) and code == status[row["final_state"]]
        if row["final_state"] != "REJECTED":
            assert wait == float(row["waiting_time"]) and run_s == float(row["execution_time"])
            assert alloc == int(row["allocated_number_of_resources"])


@pytest.mark.parametrize(("text", "allocator", "scheduler", "options"),
                         [c for c in CASES if not c[0].startswith("flat")])
def test_exported_units_are_the_placement_logs(trace_excerpt, text, allocator, scheduler,
                                               options):
    spec, _, result, schedule = run(trace_excerpt, text, allocator, scheduler, options)
    log, units = result.placements, numbering(spec)
    bits = log.bits()
    logged: dict[int, list[list[int]]] = {}
    for i, job in enumerate(log.job_id.tolist()):
        logged.setdefault(job, []).append(units.ids(bits[i]).tolist())

    def distinct(runs: list[list[int]]) -> list[list[int]]:  # a move to the same units
        return [r for k, r in enumerate(runs) if k == 0 or r != runs[k - 1]]

    assert set(logged) == set(schedule.segments)
    for job, runs in schedule.segments.items():
        assert distinct([s.units.tolist() for s in runs]) == distinct(logged[job])


def test_numbering_is_x_fastest_on_every_kind() -> None:
    torus = numbering(MachineSpec.parse("torus:4x2x2"))
    bit = (3 * 2 + 1) * 2 + 0  # unit (3, 1, 0), z fastest in the allocator's masks
    assert torus.id_of_bit[bit] == 3 + 4 * (1 + 2 * 0)
    assert torus.coords[torus.id_of_bit[bit]].tolist() == [3, 1, 0]
    mesh = numbering(MachineSpec.parse("mesh:32x32", "ff"))
    assert mesh.id_of_bit[5 * 32 + 7] == 5 + 32 * 7  # node <5, 7> is bit x*H + y
    curve = numbering(MachineSpec.parse("mesh:8x8", "first-fit", ordering="hilbert"))
    assert sorted(curve.id_of_bit.tolist()) == list(range(64))
    assert (curve.curve_rank[curve.id_of_bit] == np.arange(64)).all()
    cubes = numbering(MachineSpec.parse("cubes:2x1x1:2"))
    assert cubes.coords[cubes.id_of_bit[8 + 1]].tolist() == [2, 0, 1]  # cube 1, chip (0,0,1)
    menu = numbering(MachineSpec.parse("slurm-torus3d:example-8x4x4.yaml"))
    assert (menu.id_of_bit == np.arange(menu.units)).all() and menu.torus is not None
    bgl = numbering(MachineSpec.parse("bgl:8x4x4"))
    assert bgl.units == 128 and bgl.coords[bgl.id_of_bit[(1 * 4 + 2) * 4 + 3]].tolist() == [1, 2, 3]
    assert numbering(MachineSpec.parse("flat:16")).packing


def test_box_descriptors_wrap_around_a_torus() -> None:
    torus = numbering(MachineSpec.parse("torus:4x2x2"))
    assert torus.box(np.array([0, 3])) == "3,0,0:2x1x1"
    assert torus.box(np.array([0, 1, 2, 3])) == "0,0,0:4x1x1"
    assert torus.box(np.array([0, 2])) == ""
    mesh = numbering(MachineSpec.parse("mesh:4x2x2"))
    assert mesh.box(np.array([0, 3])) == ""


def golden_jobs() -> Jobs:
    """Five jobs on torus:4x2x2; the last takes a 2x1x1 box at x = 3, wrapping to x = 0."""
    return Jobs.create(np.arange(1, 6), [10.0, 20, 30, 40, 40], [80.0, 90, 30, 70, 70],
                       [80.0, 90, 30, 70, 70], [7, 2, 7, 1, 2])


def test_golden_jobs_csv(tmp_path) -> None:
    spec = MachineSpec.parse("torus:4x2x2")
    jobs = golden_jobs()
    result = simulate(jobs, spec, "fcfs")
    write_exports(Schedule.of(result, jobs, spec, {"source": "golden"}), tmp_path)
    text = (tmp_path / "jobs.csv").read_text()
    assert text == GOLDEN.read_text()
    _, rows = read_csv(tmp_path / "jobs.csv")
    assert rows[-1]["allocated_resources"] == "0 3" and rows[-1]["partition"] == "3,0,0:2x1x1"


def test_rejected_jobs_are_listed(tmp_path) -> None:
    spec = MachineSpec.parse("slurm-torus3d:example-8x4x4.yaml", options={"unlisted": "refuse"})
    jobs = Jobs.create(np.arange(1, 4), [0.0, 1, 2], [10.0, 10, 10], [10.0, 10, 10], [4, 3, 4])
    result = simulate(jobs, spec, "fcfs")
    assert result.summary["refused_jobs"] == 1
    write_exports(Schedule.of(result, jobs, spec, {"source": "three"}), tmp_path)
    _, rows = read_csv(tmp_path / "jobs.csv")
    assert [r["final_state"] for r in rows] == ["COMPLETED_SUCCESSFULLY", "REJECTED",
                                                "COMPLETED_SUCCESSFULLY"]
    assert read_swf(tmp_path / "schedule.swf").column("status").to_pylist() == [1, 5, 1]


def test_batsim_readers_utilisation_is_the_busy_unit_seconds(tmp_path, trace_excerpt):
    """What Batsim's analysis tools (evalys) compute from jobs.csv: each job holds
    len(allocated_resources) units from submission_time + waiting_time for execution_time;
    that load integrated over [first submit, last finish] is the machine_states busy
    integral, on a migrating run without start delays (a start delay holds units before
    starting_time, which jobs.csv cannot show)."""
    _, _, _, schedule = run(trace_excerpt, "torus:4x4x8", None, "bm", {})
    write_exports(schedule, tmp_path)
    _, rows = read_csv(tmp_path / "jobs.csv")
    events: dict[float, int] = {}
    for row in rows:
        held = len(ids(row["allocated_resources"]))
        if not held:
            continue
        start = float(row["submission_time"]) + float(row["waiting_time"])
        finish = start + float(row["execution_time"])
        events[start] = events.get(start, 0) + held
        events[finish] = events.get(finish, 0) - held
    first = min(float(r["submission_time"]) for r in rows)
    last = max(float(r["finish_time"]) for r in rows if r["finish_time"])
    times = sorted({first, last, *events})
    load, area = 0, 0.0
    for t0, t1 in itertools.pairwise(times):
        load += events.get(t0, 0)
        area += load * (t1 - t0)
    busy = schedule.states().busy_unit_seconds()
    assert math.isclose(area, busy, rel_tol=1e-9)
