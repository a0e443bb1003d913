"""Where and when each job ran: per job, its segments (from, until, units, cause).

This is the one interface the exports and pictures read; `from_placements` derives it
from a run's placement log (`simcore.core.placements`). A segment is a time span during
which a job held one set of units (export ids, `simcore.schedules.units`), from its
allocation on (so a start delay is inside its first segment). Its cause says how it began:

- `start`: the job's first allocation;
- `migration`: a migration moved the running job (a move that leaves it on the same
  units is no new segment);
- `requeue`: an allocation after a failure cut an earlier run short (the earlier segment
  ends at that failure; the job waited in between).

The log is replayed in the engine's order at each event time: completions, then outage
events, then the decision's allocations and moves. A failure cuts short the runs holding
one of its domain's resources; on a flat machine, whose units have no bits, the run
holding in-service unit floor(draw x in-service units), busy units counted first, run by
run in job order (as `simcore.core.failures` draws it). A flat machine's units get ids by
packing: each segment takes the lowest ids free when it begins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.base.errors import SimcoreError
from simcore.core.result import SimulationResult
from simcore.schedules.units import Numbering

START, MIGRATION, REQUEUE = "start", "migration", "requeue"


@dataclass(frozen=True, eq=False)
class Segment:
    """A job held `units` (sorted export ids) from `from_s` until `until_s`."""

    from_s: float
    until_s: float
    units: np.ndarray
    cause: str


def from_placements(result: SimulationResult, numbering: Numbering) -> dict[int, list[Segment]]:
    """Each job's segments in time order, by job id, from the run's placement log."""
    log = result.placements
    if log is None:
        raise SimcoreError("the run kept no placement log: its scheduler shares processors "
                           "in time, which schedules do not show")
    if log.outages is not None and log.outages.drain:
        raise SimcoreError("the run drained units (on_failure: drain), which went out of "
                           "service when runs freed them, at times its placement log does "
                           "not record; expected a run whose failures requeue or kill")
    jobs = result.jobs
    job_ids = jobs.column("job_id").to_numpy()
    if np.unique(job_ids).size != job_ids.size:
        raise SimcoreError("job ids repeat in the run; a schedule names each job by its id")
    replay = _Replay(numbering, job_ids, jobs.column("end_s").to_numpy(),
                     jobs.column("alloc_size").to_numpy(),
                     jobs.column("killed").to_numpy() if "killed" in jobs.column_names
                     else np.zeros(job_ids.size, dtype=bool))
    replay.count(log.job_id)
    outages = log.outages
    times = np.unique(np.concatenate([log.time_s, replay.end_s,
                                      outages.time_s if outages is not None else []]))
    entry = event = 0
    for t in times:
        replay.complete(t)
        while outages is not None and event < outages.time_s.shape[0] \
                and outages.time_s[event] == t:
            replay.outage(t, bool(outages.repair[event]), float(outages.draw[event]),
                          outages.masks[event], int(outages.units[event]))
            event += 1
        while entry < log.time_s.shape[0] and log.time_s[entry] == t:
            replay.place(t, int(log.job_id[entry]), log.resource_bits(entry)[: numbering.units])
            entry += 1
    if replay.running:
        raise SimcoreError(f"jobs {sorted(replay.running)[:5]} never end in the placement log")
    return replay.segments


class _Replay:
    """The running set and the segments so far, while the log is replayed."""

    def __init__(self, numbering: Numbering, job_ids: np.ndarray, end_s: np.ndarray,
                 alloc: np.ndarray, killed: np.ndarray) -> None:
        self.numbering = numbering
        self.row = {int(j): i for i, j in enumerate(job_ids)}
        self.end_s, self.alloc, self.killed = end_s, alloc, killed
        self.entries_left = {int(j): 0 for j in job_ids}
        self.segments: dict[int, list[Segment]] = {int(j): [] for j in job_ids}
        self.running: dict[int, tuple[float, np.ndarray, str, np.ndarray]] = {}
        self.free = np.ones(numbering.units, dtype=bool)  # packing of flat machines
        self.down = 0

    def count(self, job_ids: np.ndarray) -> None:
        """Note the log's entries of each job (a job's last one ends with the job)."""
        for j in job_ids.tolist():
            self.entries_left[j] += 1

    def complete(self, t: float) -> None:
        """Runs whose last placement ends at t (killed runs end at their failure)."""
        for job in [j for j in self.running if self._last(j) and self._ends(j, t)]:
            self._close(job, t)

    def outage(self, t: float, repair: bool, draw: float, mask: np.ndarray,
               units: int) -> None:
        if repair:
            self.down -= units
            return
        for job in self._hit(mask, draw):
            self._close(job, t)
        self.down += units

    def place(self, t: float, job: int, bits: np.ndarray) -> None:
        if job not in self.entries_left:
            raise SimcoreError(f"job {job} of the placement log is not in the run")
        self.entries_left[job] -= 1
        if job in self.running:
            if not self.numbering.packing and np.array_equal(self.running[job][3], bits):
                return  # moved nowhere
            self._close(job, t)
            cause = MIGRATION
        else:
            cause = REQUEUE if self.segments[job] else START
        units = self._take(job) if self.numbering.packing else self.numbering.ids(bits)
        self.running[job] = (t, units, cause, bits)
        if self._last(job) and self._ends(job, t):
            self._close(job, t)

    def _last(self, job: int) -> bool:
        return self.entries_left[job] == 0

    def _ends(self, job: int, t: float) -> bool:
        i = self.row[job]
        return bool(self.end_s[i] == t and not self.killed[i])

    def _close(self, job: int, t: float) -> None:
        start, units, cause, _ = self.running.pop(job)
        self.segments[job].append(Segment(start, t, units, cause))
        if self.numbering.packing:
            self.free[units] = True

    def _take(self, job: int) -> np.ndarray:
        units = np.flatnonzero(self.free)[: int(self.alloc[self.row[job]])]
        self.free[units] = False
        return units

    def _hit(self, mask: np.ndarray, draw: float) -> list[int]:
        """The runs a failure of a domain with resources `mask` cuts short."""
        if mask.any():
            return [j for j, run in self.running.items() if _intersects(run[3], mask)]
        busy = sum(int(self.alloc[self.row[j]]) for j in self.running)
        unit = int(draw * (self.numbering.units - self.down))
        before = 0
        for job in sorted(self.running, key=self.row.__getitem__):
            size = int(self.alloc[self.row[job]])
            if before <= unit < before + size:
                return [job]
            before += size
        assert unit >= busy
        return []


def _intersects(bits: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the unit bits `bits` (bool) and the domain's resource words share a unit."""
    little = mask.astype("<u8").view(np.uint8)
    domain = np.unpackbits(little, bitorder="little")[: bits.shape[0]].astype(bool)
    return bool((bits & domain).any())
