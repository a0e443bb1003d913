"""An export directory read back (`simcore.schedules.export` wrote it): the run, its jobs,
each job's segments, the machine's states and the unit coordinates."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simcore.base.errors import SpecError
from simcore.schedules.export import FILES, REJECTED
from simcore.schedules.segments import START, Segment


def parse_intervals(text: str) -> np.ndarray:
    """The ids of an interval set such as `0-3 8`."""
    ids: list[int] = []
    for part in text.split():
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return np.array(ids, dtype=np.int64)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


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
    """The files of an export directory; a SpecError names a missing one."""
    directory = Path(directory)
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise SpecError(f"{directory}: no {', '.join(missing)}; expected a directory written "
                        "by simcore run --export or simcore export")
    run = json.loads((directory / "run.json").read_text())
    rows = [r for r in _rows(directory / "jobs.csv") if r["final_state"] != REJECTED]
    floats = {"submission_time": "submit", "allocation_time": "allocated",
              "starting_time": "start", "finish_time": "finish", "waiting_time": "wait",
              "bounded_slowdown": "bsld", "start_delay": "delay"}
    ints = {"job_id": "job_id", "requested_number_of_resources": "size",
            "allocated_number_of_resources": "alloc", "warmup": "warmup",
            "migrations": "migrations"}
    jobs = {short: np.array([float(r[name]) for r in rows]) for name, short in floats.items()}
    jobs |= {short: np.array([int(r[name]) for r in rows], dtype=np.int64)
             for name, short in ints.items()}
    segments: dict[int, list[Segment]] = {}
    for r in _rows(directory / "placements.csv"):
        segments.setdefault(int(r["job_id"]), []).append(Segment(
            float(r["from_time"]), float(r["until_time"]),
            parse_intervals(r["allocated_resources"]), r["cause"]))
    for r in rows:
        job = int(r["job_id"])
        if job not in segments:
            segments[job] = [Segment(float(r["allocation_time"]), float(r["finish_time"]),
                                     parse_intervals(r["allocated_resources"]), START)]
    state_rows = _rows(directory / "machine_states.csv")
    states = {name: np.array([float(r[name]) for r in state_rows])
              for name in (state_rows[0].keys() if state_rows else ())}
    resource_rows = _rows(directory / "resources.csv")
    units = {name: np.array([r[name] if name == "torus" else int(r[name])
                             for r in resource_rows])
             for name in (resource_rows[0].keys() if resource_rows else ())}
    return Exported(directory, run, jobs, segments, states, units)
