"""An export directory read back (`simcore.schedules.export` wrote it): the run, its jobs,
each job's segments, the machine's states and the unit coordinates."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from simcore.base.errors import SpecError
from simcore.schedules import fields
from simcore.schedules.export import (
    BATSIM_JOB_COLUMNS,
    COMPLETED,
    FILES,
    KILLED,
    OWN_JOB_COLUMNS,
    PLACEMENT_COLUMNS,
    REJECTED,
)
from simcore.schedules.fields import shown
from simcore.schedules.segments import MIGRATION, REQUEUE, START, Segment
from simcore.schedules.states import BATSIM_STATES, QUEUE_COLUMNS
from simcore.schedules.units import AXES


@dataclass(frozen=True, eq=False)
class Exported:
    """What `simcore show` draws: `run` (run.json), the jobs that ran (`jobs`: columns by
    name, rejected jobs left out), each job's segments by job id, the machine states
    (`states`: columns by name, `time` first) and the units' coordinates (`units`: columns
    of resources.csv by name)."""

    directory: Path
    run: dict[str, Any]
    jobs: dict[str, np.ndarray]
    segments: dict[int, list[Segment]]
    states: dict[str, np.ndarray]
    units: dict[str, np.ndarray]

    @property
    def label(self) -> str:
        """The machine and the scheduler, for titles."""
        return f"{self.run['policy']['scheduler']} on {self.run['machine']}"

    @property
    def axes(self) -> list[str]:
        return list(self.run["units"]["axes"])


def read_exported(directory: str | Path) -> Exported:
    """The files of an export directory, each checked before anything is drawn (every
    column's type, ids within the machine run.json gives, times finite and in order);
    a SpecError names the file, line and column of the first fault."""
    directory = Path(directory)
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise SpecError(f"{directory}: no {', '.join(missing)}; expected a directory written "
                        "by simcore run --export or simcore export")
    run = _run(directory / "run.json")
    count = run["units"]["count"]
    units = _units(directory / "resources.csv", run["units"])
    jobs, ran, requested = _jobs(directory / "jobs.csv", count)
    segments = _segments(directory / "placements.csv", ran, count)
    for job, row in ran.items():
        runs = segments.setdefault(job, [Segment(
            row.time("allocation_time"), row.time("finish_time"),
            row.units("allocated_resources", count), START)])
        moves = sum(s.cause == MIGRATION for s in runs)
        if row.integer("migrations") != moves:
            row.fail("migrations", f"{moves} (the job's migration segments in placements.csv)")
    states = _states(directory / "machine_states.csv", count, len(ran), requested)
    return Exported(directory, run, jobs, segments, states, units)


def _run(path: Path) -> dict[str, Any]:
    """run.json, with the fields `show` reads checked."""
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SpecError(f"{path}: not JSON ({exc}); expected the run.json simcore export "
                        "writes") from None

    def fail(key: str, value: Any, expected: str) -> NoReturn:
        raise SpecError(f"{path}: {key} {shown(json.dumps(value))}; expected {expected}")

    if not isinstance(run, dict):
        fail("the top level", run, "an object")
    for key in ("machine", "policy", "units"):
        if not isinstance(run.get(key), str if key == "machine" else dict):
            fail(key, run.get(key), "a string" if key == "machine" else "an object")
    if not isinstance(run["policy"].get("scheduler"), str):
        fail("policy.scheduler", run["policy"].get("scheduler"), "a string")
    units = run["units"]
    count, axes, sides = units.get("count"), units.get("axes"), units.get("sides")
    if not _is_int(count) or count < 1:
        fail("units.count", count, "an integer >= 1")
    if not isinstance(axes, list) or list(axes) != list(_axes(len(axes))) or not axes:
        fail("units.axes", axes, "x, y, z, d3, ... (one name per dimension)")
    if (not isinstance(sides, list) or len(sides) != len(axes)
            or not all(_is_int(s) and s >= 1 for s in sides) or math.prod(sides) > count):
        fail("units.sides", sides, f"{len(axes)} integers >= 1 whose product is at most "
                                   f"units.count ({count})")
    for key in ("packing", "wraps", "curve_rank"):
        if not isinstance(units.get(key), bool):
            fail(f"units.{key}", units.get(key), "true or false")
    return run


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _axes(dims: int) -> tuple[str, ...]:
    return tuple(AXES[d] if d < len(AXES) else f"d{d}" for d in range(dims))


def _units(path: Path, units: dict[str, Any]) -> dict[str, np.ndarray]:
    """resources.csv: ids 0 to count - 1 in order, coordinates within the sides."""
    count, axes, sides = units["count"], units["axes"], units["sides"]
    with path.open(encoding="utf-8", errors="replace") as handle:
        has_torus = ",torus" in handle.readline()
    header = ("id", *axes, *(("torus",) if has_torus else ()),
              *(("curve_rank",) if units["curve_rank"] else ()))
    columns: dict[str, list] = {name: [] for name in header}
    for k, row in enumerate(fields.rows(path, header)):
        if k >= count:
            raise SpecError(f"{path}:{row.line}: more units than the {count} of run.json's "
                            "units.count")
        columns["id"].append(row.integer("id", k, k))
        for axis, side in zip(axes, sides, strict=True):
            columns[axis].append(row.integer(axis, 0, side - 1))
        if has_torus:
            columns["torus"].append(row.cells["torus"] or row.fail("torus", "a torus name"))
        if units["curve_rank"]:
            columns["curve_rank"].append(row.integer("curve_rank", 0, count - 1))
    if len(columns["id"]) != count:
        raise SpecError(f"{path}: {len(columns['id'])} units; expected run.json's units.count "
                        f"({count})")
    return {name: np.array(values) if name == "torus" else np.array(values, dtype=np.int64)
            for name, values in columns.items()}


def _jobs(path: Path, count: int
          ) -> tuple[dict[str, np.ndarray], dict[int, fields.Row], int]:
    """jobs.csv: the columns `show` reads of the jobs that ran, their rows by job id and
    the units all jobs requested."""
    floats = {"submission_time": "submit", "allocation_time": "allocated",
              "starting_time": "start", "finish_time": "finish", "waiting_time": "wait",
              "bounded_slowdown": "bsld", "start_delay": "delay"}
    ints = {"job_id": "job_id", "requested_number_of_resources": "size",
            "allocated_number_of_resources": "alloc", "warmup": "warmup",
            "migrations": "migrations"}
    line_of: dict[int, int] = {}
    requested = 0
    ran: dict[int, fields.Row] = {}
    for row in fields.rows(path, BATSIM_JOB_COLUMNS + OWN_JOB_COLUMNS):
        job = row.integer("job_id")
        if job in line_of:
            row.fail("job_id", f"a job id not used before (line {line_of[job]})")
        line_of[job] = row.line
        submit = row.time("submission_time")
        asked = row.integer("requested_number_of_resources", 1)
        requested += asked
        row.time("requested_time")
        row.integer("success", 0, 1)
        if row.choice("final_state", (COMPLETED, KILLED, REJECTED)) == REJECTED:
            continue
        if asked > count:
            row.fail("requested_number_of_resources", f"at most the machine's {count} units "
                                                      "(the job ran)")
        allocated = row.time("allocation_time", submit, "submission_time")
        start = row.time("starting_time", allocated, "allocation_time")
        finish = row.time("finish_time", start, "starting_time")
        for name, value, rule in (
                ("execution_time", finish - start, "finish_time - starting_time"),
                ("waiting_time", start - submit, "starting_time - submission_time"),
                ("turnaround_time", finish - submit, "finish_time - submission_time"),
                ("start_delay", start - allocated, "starting_time - allocation_time")):
            if row.time(name) != value:
                row.fail(name, f"{value!r} ({rule})")
        stretch = (finish - submit) / (finish - start) if finish > start else None
        if (row.time("stretch") if row.cells["stretch"] else None) != stretch:
            row.fail("stretch", f"{stretch!r} (turnaround_time / execution_time)"
                     if stretch is not None else "nothing (no execution_time)")
        row.time("bounded_slowdown", 0.0)
        size = row.integer("allocated_number_of_resources", 1, count)
        if row.units("allocated_resources", count).size != size:
            row.fail("allocated_resources", f"{size} units (allocated_number_of_resources)")
        row.integer("warmup", 0, 1)
        row.integer("migrations")
        row.integer("runs_cut_short")
        ran[job] = row
    if not ran:
        raise SpecError(f"{path}: no job ran; expected a schedule with at least one job to draw")
    jobs = {short: np.array([row.time(name) for row in ran.values()])
            for name, short in floats.items()}
    jobs |= {short: np.array([row.integer(name) for row in ran.values()], dtype=np.int64)
             for name, short in ints.items()}
    return jobs, ran, requested


def _segments(path: Path, ran: dict[int, fields.Row], count: int) -> dict[int, list[Segment]]:
    """placements.csv: each listed job's segments, numbered from 0, in time order within
    the job's allocation and finish."""
    segments: dict[int, list[Segment]] = {}
    for row in fields.rows(path, PLACEMENT_COLUMNS):
        job = row.integer("job_id")
        if job not in ran:
            row.fail("job_id", "a job of jobs.csv that ran")
        runs = segments.setdefault(job, [])
        row.integer("segment", len(runs), len(runs))
        begin = runs[-1].until_s if runs else ran[job].time("submission_time")
        since = "the previous segment's until_time" if runs else "the job's submission_time"
        from_s = row.time("from_time", begin, since)
        until_s = row.time("until_time", from_s, "from_time")
        if until_s > ran[job].time("finish_time"):
            row.fail("until_time", f"a time <= the job's finish_time "
                                   f"({ran[job].time('finish_time')!r})")
        cause = row.choice("cause", (MIGRATION, REQUEUE) if runs else (START,))
        units = row.units("allocated_resources", count)
        if not units.size:
            row.fail("allocated_resources", "the units the job held")
        runs.append(Segment(from_s, until_s, units, cause))
    return segments


def _states(path: Path, count: int, jobs: int, requested: int) -> dict[str, np.ndarray]:
    """machine_states.csv: increasing finite times, unit counts that sum to the machine's."""
    header = ("time", *BATSIM_STATES, *QUEUE_COLUMNS)
    columns: dict[str, list] = {name: [] for name in header}
    for row in fields.rows(path, header):
        after = columns["time"][-1] if columns["time"] else -math.inf
        time = row.time("time", after, "the previous row's time")
        if time == after:
            row.fail("time", f"a time after the previous row's ({after!r})")
        columns["time"].append(time)
        for name in BATSIM_STATES:
            columns[name].append(row.integer(name, 0, count))
        if sum(columns[name][-1] for name in BATSIM_STATES) != count:
            raise SpecError(f"{path}:{row.line}: {', '.join(BATSIM_STATES)} "
                            f"{','.join(row.cells[n] for n in BATSIM_STATES)}; expected counts "
                            f"that sum to the machine's {count} units")
        columns["waiting_jobs"].append(row.integer("waiting_jobs", 0, jobs))
        columns["waiting_units"].append(row.integer("waiting_units", 0, requested))
    if not columns["time"]:
        raise SpecError(f"{path}: no rows; expected the machine's states over the run")
    return {name: np.array(values, dtype=np.float64) for name, values in columns.items()}
