"""A run's schedule as files (docs/schedules.md documents every column).

- `jobs.csv`: one row per job in Batsim's column order (`BATSIM_JOB_COLUMNS`), then ours
  (`OWN_JOB_COLUMNS`); `allocated_resources` is the set of units the job finished on, as
  an interval set (`simcore.schedules.intervals`): Batsim gives one set per job for its
  whole execution, and tools multiply its size by the execution time, so a job that moved
  lists its last allocation, not the union (placements.csv has every segment);
- `placements.csv`: one row per segment of every job that moved or ran more than once;
- `machine_states.csv`: Batsim's five state counts over time, and the queue
  (`simcore.schedules.states`);
- `schedule.swf`: the simulated schedule in the Standard Workload Format;
- `resources.csv`: each unit id's coordinates (`simcore.schedules.units`);
- `run.json`: the machine, policy, workload, seed, numbering and the run's summary.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.base.atomic import atomic_directory
from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.stamps import stamp_path
from simcore.core.placements import PlacementLog
from simcore.core.result import SimulationResult
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import SWFHeader, format_swf, from_columns
from simcore.machines.spec import MachineSpec
from simcore.schedules.intervals import interval_text
from simcore.schedules.segments import MIGRATION, Segment, from_placements
from simcore.schedules.states import BATSIM_STATES, QUEUE_COLUMNS, MachineStates, machine_states
from simcore.schedules.units import Numbering, numbering

if TYPE_CHECKING:
    from simcore.policy import PolicySpec

#: Batsim's jobs.csv columns, in its order.
BATSIM_JOB_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time",
    "finish_time", "waiting_time", "turnaround_time", "stretch", "allocated_resources",
    "consumed_energy", "metadata")
#: Our columns after Batsim's.
OWN_JOB_COLUMNS = (
    "allocation_time", "start_delay", "allocated_number_of_resources", "partition",
    "migrations", "runs_cut_short", "warmup", "bounded_slowdown")
PLACEMENT_COLUMNS = ("job_id", "segment", "from_time", "until_time", "allocated_resources",
                     "cause")
COMPLETED, KILLED, REJECTED = "COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "REJECTED"
#: The files `write_exports` writes, in its order.
FILES = ("jobs.csv", "placements.csv", "machine_states.csv", "schedule.swf",
         "resources.csv", "run.json")
#: The pictures `simcore show` draws (`simcore.schedules.pictures`), each as .png and .svg,
#: by default into the export directory.
PICTURES = ("gantt", "snapshots", "series", "by-size")
#: SWF status codes: completed, failed (killed), cancelled (rejected).
SWF_STATUS = {COMPLETED: 1, KILLED: 0, REJECTED: 5}


@dataclass(frozen=True, eq=False)
class Schedule:
    """A run's schedule: the result (recorded with its placement log), the jobs given to
    the simulation (refused ones included), the machine, the workload (its `source` and
    transforms), the unit numbering and each job's segments by job id."""

    result: SimulationResult
    jobs: Jobs
    machine: MachineSpec
    workload: dict[str, Any]
    numbering: Numbering
    segments: dict[int, list[Segment]]

    @classmethod
    def of(cls, result: SimulationResult, jobs: Jobs, machine: MachineSpec,
           workload: dict[str, Any]) -> Schedule:
        units = numbering(machine)
        return cls(result, jobs, machine, workload, units, from_placements(result, units))

    @property
    def placements(self) -> PlacementLog:
        """The run's placement log, which `from_placements` made the segments of."""
        assert self.result.placements is not None  # `from_placements` refuses a run without
        return self.result.placements

    def states(self) -> MachineStates:
        """The machine's state and the queue over time."""
        return machine_states(self.segments, dict(zip(self.jobs.job_id.tolist(),
                                                      self.jobs.submit_s.tolist(), strict=True)),
                              dict(zip(self.jobs.job_id.tolist(), self.jobs.size.tolist(),
                                       strict=True)),
                              self.numbering.units, self.placements.outages)

    def final_states(self) -> dict[int, str]:
        """Each job's Batsim final state by job id."""
        table = self.result.jobs
        killed = (table.column("killed").to_pylist() if "killed" in table.column_names
                  else [False] * table.num_rows)
        ran = {j: KILLED if k else COMPLETED
               for j, k in zip(table.column("job_id").to_pylist(), killed, strict=True)}
        return {j: ran.get(j, REJECTED) for j in self.jobs.job_id.tolist()}


def time_shared(policy: PolicySpec, what: str) -> None:
    """Refuse the schedule of a scheduler that time-shares the machine: its units hold
    several jobs at once, which no export file can say."""
    if policy.implementation.engine:
        raise SpecError(f"{what}: scheduler {policy.scheduler} time-shares the machine, so "
                        "its units hold several jobs at once and it has no schedule to "
                        "export (its per-job rows give each job's matrix_row and processors, "
                        "placed_code); expected a space-sharing scheduler")


def directory_path(path: str | Path, option: str) -> Path:
    """`path` as a directory to write in; a SpecError if it or a part of it is a file."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise SpecError(f"{option} {path}: is a file; expected a directory")
    if any(p.exists() and not p.is_dir() for p in target.parents):
        raise SpecError(f"{option} {path}: a part of the path is a file; expected a "
                        "directory")
    return target


def check_directory(path: str | Path, option: str) -> Path:
    """An export directory: missing (made when written), empty or a previous export
    (`written_by_export`, replaced whole when written); a SpecError otherwise."""
    target = directory_path(path, option)
    names = sorted(os.listdir(target)) if target.is_dir() else []
    foreign = [n for n in names if not written_by_export(n)]
    if foreign or (names and "run.json" not in names):
        what = f"holds {foreign[0]}, which no export writes" if foreign else "holds no run.json"
        raise SpecError(f"{option} {path}: {what}; expected a new or empty directory, or a "
                        "previous export (replaced whole, pictures included)")
    return target


def written_by_export(name: str) -> bool:
    """Whether an export directory's entry `name` is one of FILES, a picture or an
    interrupted atomic write of one."""
    ours = {*FILES, *(f"{p}.{e}" for p in PICTURES for e in ("png", "svg"))}
    return name in ours or (name.startswith(".") and name.endswith(".tmp")
                            and name[1:].split("~", 1)[0] in ours)


def write_exports(schedule: Schedule, directory: str | Path) -> list[Path]:
    """Write FILES as the directory `directory` (`check_directory`), replacing a previous
    export there whole, so that none of its files or pictures survives; their paths."""
    out = Path(directory)
    texts = {"jobs.csv": jobs_csv(schedule), "placements.csv": placements_csv(schedule),
             "machine_states.csv": states_csv(schedule.states()),
             "schedule.swf": swf_text(schedule), "resources.csv": resources_csv(schedule),
             "run.json": json_text(run_json(schedule)) + "\n"}
    stamp_path(out.resolve()).unlink(missing_ok=True)  # `write_pictures` stamps the drawn export
    with atomic_directory(out) as tmp:
        for name in FILES:
            (tmp / name).write_bytes(texts[name].encode())
    return [out / name for name in FILES]


def _csv(header: tuple[str, ...], rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _time(value: float) -> str:
    """A time as the shortest text that reads back to the same float."""
    return repr(float(value))


def jobs_csv(schedule: Schedule) -> str:
    """jobs.csv: every job in submission order, rejected ones with no times or units."""
    table = schedule.result.jobs
    row_of = {j: i for i, j in enumerate(table.column("job_id").to_pylist())}
    columns = {name: table.column(name).to_numpy() for name in (
        "submit_s", "sched_s", "start_s", "end_s", "alloc_size", "bsld")}
    hits = (table.column("failures_hit").to_numpy() if "failures_hit" in table.column_names
            else np.zeros(table.num_rows, dtype=np.int64))
    warmup = set(schedule.jobs.job_id[: schedule.jobs.warmup_jobs].tolist())
    states = schedule.final_states()
    source = str(schedule.workload.get("source", ""))
    rows = []
    for k, job in enumerate(schedule.jobs.job_id.tolist()):
        head = [job, source, "", _time(schedule.jobs.submit_s[k]), int(schedule.jobs.size[k]),
                _time(schedule.jobs.requested_s[k]), int(states[job] == COMPLETED),
                states[job]]
        i = row_of.get(job)
        if i is None:
            rows.append([*head, "", "", "", "", "", "", "", "", "", *[""] * 8])
            continue
        start, end, submit = columns["start_s"][i], columns["end_s"][i], columns["submit_s"][i]
        runs = schedule.segments[job]
        final = runs[-1].units
        execution = end - start
        rows.append([
            *head, _time(start), _time(execution), _time(end), _time(start - submit),
            _time(end - submit), _time((end - submit) / execution) if execution > 0 else "",
            interval_text(final), "", "",
            _time(columns["sched_s"][i]), _time(start - columns["sched_s"][i]),
            int(columns["alloc_size"][i]), schedule.numbering.box(final),
            sum(1 for s in runs if s.cause == MIGRATION),
            int(hits[i]), int(job in warmup), _time(columns["bsld"][i])])
    return _csv(BATSIM_JOB_COLUMNS + OWN_JOB_COLUMNS, rows)


def placements_csv(schedule: Schedule) -> str:
    """placements.csv: the segments of every job that has more than one."""
    rows = [[job, k, _time(s.from_s), _time(s.until_s), interval_text(s.units), s.cause]
            for job, runs in schedule.segments.items() if len(runs) > 1
            for k, s in enumerate(runs)]
    return _csv(PLACEMENT_COLUMNS, rows)


def states_csv(states: MachineStates) -> str:
    """machine_states.csv: time, Batsim's five counts, then the queue."""
    names = (*BATSIM_STATES, *QUEUE_COLUMNS)
    rows = [[_time(t), *(int(states.columns[n][i]) for n in names)]
            for i, t in enumerate(states.time_s.tolist())]
    return _csv(("time", *names), rows)


def resources_csv(schedule: Schedule) -> str:
    """resources.csv: id, its coordinates, x first, and its torus (menus) or rank along
    the ordering (curve allocators)."""
    units = schedule.numbering
    extra = (("torus",) if units.torus is not None else ()) + (
        ("curve_rank",) if units.curve_rank is not None else ())
    rows = []
    for i in range(units.units):
        row = [i, *units.coords[i].tolist()]
        if units.torus is not None:
            row.append(units.torus_names[int(units.torus[i])])
        if units.curve_rank is not None:
            row.append(int(units.curve_rank[i]))
        rows.append(row)
    return _csv(("id", *units.axes, *extra), rows)


def swf_text(schedule: Schedule) -> str:
    """The simulated schedule as SWF: wait, run, allocated processors (units) and status
    (1 completed, 0 killed, 5 rejected, whose wait, run and allocation are -1)."""
    table, jobs = schedule.result.jobs, schedule.jobs
    row_of = {j: i for i, j in enumerate(table.column("job_id").to_pylist())}
    index = np.array([row_of.get(j, -1) for j in jobs.job_id.tolist()])
    ran = index >= 0
    pick = np.where(ran, index, 0)

    def column(name: str) -> np.ndarray:
        return table.column(name).to_numpy()[pick]

    states = schedule.final_states()
    header = ("; Version: 2.2", f"; Computer: simcore {schedule.machine}",
              f"; MaxNodes: {schedule.numbering.units}",
              f"; MaxProcs: {schedule.numbering.units}",
              "; Note: the schedule simcore simulated; processors are allocation units")
    return format_swf(from_columns({
        "job_number": jobs.job_id,
        "submit_time": jobs.submit_s,
        "wait_time": np.where(ran, column("start_s") - jobs.submit_s, -1.0),
        "run_time": np.where(ran, column("end_s") - column("start_s"), -1.0),
        "allocated_processors": np.where(ran, column("alloc_size"), -1),
        "requested_processors": jobs.size,
        "requested_time": jobs.requested_s,
        "status": np.array([SWF_STATUS[states[j]] for j in jobs.job_id.tolist()]),
    }, SWFHeader(header)))


def run_json(schedule: Schedule) -> dict[str, Any]:
    """run.json: what the run was and how its files number units."""
    summary = schedule.result.summary
    units = schedule.numbering
    return {
        "machine": str(schedule.machine),
        "policy": summary["policy"],
        "workload": schedule.workload,
        "seed": summary["seed"],
        "units": {
            "count": units.units,
            "axes": list(units.axes),
            "sides": list(units.sides),
            "ids": "a packing: units of a flat machine are interchangeable, so each run "
                   "takes the lowest free ids; not a placement" if units.packing
                   else "x fastest: id = x + X*(y + Y*z)" + (
                       ", torus by torus" if units.torus is not None else ""),
            "packing": units.packing,
            "wraps": units.wraps,
            "curve_rank": units.curve_rank is not None,
            "cables": "not units: a wired machine's cables are left out"
            if schedule.machine.row.wired else None,
        },
        "allocated_resources": "the units each job finished on (placements.csv: every "
                               "segment of a job that moved or ran again)",
        "files": list(FILES),
        "summary": summary,
    }
