"""The machine's state over time, as Batsim counts it, and the queue beside it.

From each event time on: `nb_computing` units held by a job (from its allocation, so a
start delay counts, to its end or the failure that cut its run short), `nb_sleeping` units
out of service (failed, not yet repaired), `nb_idle` the rest; nothing switches on or off
(`nb_switching_on`, `nb_switching_off` are 0). The five sum to the machine's units in every
row. `waiting_jobs` and `waiting_units` are the jobs waiting for an allocation (from their
arrival, and again from a failure that requeued them) and the units they requested.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.core.placements import OutageEvents
from simcore.schedules.segments import MIGRATION, Segment

#: Batsim's machine_states.csv columns, in its order.
BATSIM_STATES = ("nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle",
                 "nb_computing")
QUEUE_COLUMNS = ("waiting_jobs", "waiting_units")


@dataclass(frozen=True, eq=False)
class MachineStates:
    """One row per distinct event time: the counts from that time on."""

    time_s: np.ndarray
    columns: dict[str, np.ndarray]

    def busy_unit_seconds(self) -> float:
        """The integral of nb_computing over the rows' span."""
        return float((self.columns["nb_computing"][:-1] * np.diff(self.time_s)).sum())


def machine_states(segments: dict[int, list[Segment]], submit_s: dict[int, float],
                   size: dict[int, int], units: int,
                   outages: OutageEvents | None) -> MachineStates:
    """The series of a run: its jobs' `segments`, arrivals and requested units by job id,
    the machine's `units` and the outage events it applied."""
    times, computing, sleeping, jobs, queued = [], [], [], [], []

    def change(t: float, held: int = 0, down: int = 0, waiting: int = 0, req: int = 0
               ) -> None:
        times.append(t)
        computing.append(held)
        sleeping.append(down)
        jobs.append(waiting)
        queued.append(req)

    for job, runs in segments.items():
        wait_from = submit_s[job]
        for segment in runs:
            if segment.cause != MIGRATION:
                change(wait_from, waiting=1, req=size[job])
                change(segment.from_s, waiting=-1, req=-size[job])
            change(segment.from_s, held=segment.units.size)
            change(segment.until_s, held=-segment.units.size)
            wait_from = segment.until_s
    if outages is not None:
        for t, repair, n in zip(outages.time_s.tolist(), outages.repair.tolist(),
                                outages.units.tolist(), strict=True):
            change(t, down=-n if repair else n)
    t = np.asarray(times, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    last = np.r_[t[1:] != t[:-1], True]
    series = {name: np.cumsum(np.asarray(values, dtype=np.int64)[order])[last]
              for name, values in (("nb_computing", computing), ("nb_sleeping", sleeping),
                                   ("waiting_jobs", jobs), ("waiting_units", queued))}
    zero = np.zeros(int(last.sum()), dtype=np.int64)
    columns = {"nb_sleeping": series["nb_sleeping"], "nb_switching_on": zero,
               "nb_switching_off": zero,
               "nb_idle": units - series["nb_sleeping"] - series["nb_computing"],
               "nb_computing": series["nb_computing"],
               "waiting_jobs": series["waiting_jobs"], "waiting_units": series["waiting_units"]}
    return MachineStates(t[last], columns)
