"""The placement log of a simulation, and resource usage over time derived from it.

With `simulate(..., record_placements=True)` every start and every migration move is
logged: from `time_s` on, job `job_id` holds the resources of that row of `masks` (a
bitset: unit bits, then on wired machines each line's cable slot), until its next entry
or its end. On a machine that fails, a run a failure cuts short ends at that failure
instead; the log keeps the outage events the run applied (`OutageEvents`), so that a
replay finds which run each failure cut short. Usage over time needs no extra work in the
kernel: it is a replay of the log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class OutageEvents:
    """The outage events a run applied, in the order it applied them (`simcore.core.failures`):
    at `time_s` a failure domain fails or, where `repair`, comes back; `masks` and `units`
    are that domain's resources and units, `draw` the uniform number that picks the run a
    failure hits where units have no bits (flat machines)."""

    time_s: np.ndarray  # (events,) float64
    repair: np.ndarray  # (events,) bool
    draw: np.ndarray  # (events,) float64
    masks: np.ndarray  # (events, words) uint64
    units: np.ndarray  # (events,) int64


@dataclass(frozen=True, eq=False)
class PlacementLog:
    time_s: np.ndarray  # (entries,) float64
    job_id: np.ndarray  # (entries,) int64
    masks: np.ndarray  # (entries, words) uint64
    outages: OutageEvents | None = None  # None: the machine never fails

    def held_until(self, job_ids: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """When each entry's resources are released: the job's next entry, else its end."""
        end_of = dict(zip(job_ids.tolist(), end_s.tolist(), strict=True))
        until = np.empty(self.time_s.shape[0])
        following: dict[int, float] = {}
        for i in range(self.time_s.shape[0] - 1, -1, -1):
            job = int(self.job_id[i])
            until[i] = following.get(job, end_of[job])
            following[job] = float(self.time_s[i])
        return until

    def bits(self) -> np.ndarray:
        """(entries, 64 * words) bool: bit b of a mask is column b."""
        little = self.masks.astype("<u8").view(np.uint8).reshape(self.masks.shape[0], -1)
        return np.unpackbits(little, axis=1, bitorder="little").astype(bool)


def usage_series(log: PlacementLog, job_ids: np.ndarray, end_s: np.ndarray,
                 resources: slice) -> tuple[np.ndarray, np.ndarray]:
    """(times, busy): how many of the bits in `resources` are held from each time on."""
    held = log.bits()[:, resources].sum(axis=1)
    until = log.held_until(job_ids, end_s)
    times = np.concatenate([log.time_s, until])
    delta = np.concatenate([held, -held])
    order = np.argsort(times, kind="stable")
    times, busy = times[order], np.cumsum(delta[order])
    last = np.r_[times[1:] != times[:-1], True]  # one value per distinct time
    return times[last], busy[last]
