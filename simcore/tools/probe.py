"""One 2D-mesh allocator outside a simulation: placements in occupancies given from Python,
and the replay of a simulated run's placements with the time each allocation takes.

`Probe` holds an allocator's machine struct and a simulation state whose running jobs,
waiting queue and clock are set by hand (`occupy`, `wait`, `now`), so a test can ask where
the allocator puts a job in a drawn occupancy. `replay` rebuilds, placement by placement,
the occupancy, queue and clock a run's allocator saw (from its placement log), asks the
allocator again, checks that it answers as it did in the run, and measures the call:
numba kernels have no clock, so the time is taken around a kernel that repeats the
placement, less the same kernel repeating nothing. The times are measurements of this
machine, never part of a run's results.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.base.errors import SimcoreError
from simcore.base.jit import kernel
from simcore.core.allocate import place
from simcore.core.engine import KernelJobs
from simcore.core.result import SimulationResult
from simcore.core.state import N_ACTIVE, NOW, QLEN, finish_jobs, new_state, start_job
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.grid import assign
from simcore.machines.spec import MachineSpec

Rect = tuple[int, int, int, int]  # x, y, w, h


@kernel
def _place_repeatedly(m, st, j, units, forbidden, out, repeat):
    """Place job j in the current occupancy `repeat` times; the last answer."""
    alloc = -1
    for _ in range(repeat):
        alloc = place(m, st, j, units, st.run.occ, 0, forbidden, out)
    return alloc


@kernel
def _hold(m, st, jobs, j, t, x, y, w, h, out):
    """Job j runs in <x, y, x + w - 1, y + h - 1> from t (as if the allocator put it there)."""
    start_job(st, jobs, 0.0, j, t, assign(m.mesh, j, x, y, w, h, out), out)


class Probe:
    """An allocator on a 2D mesh (`allocator` on `machine`, e.g. "bl", "mesh:8x8") for jobs
    asking for `shapes` (w, h); `estimates` are their estimated run times (EET), run times
    `runs` (default: 1 s each); `options` the allocator's options (`--machine-param`)."""

    def __init__(self, allocator: str, machine: str, shapes: Sequence[tuple[int, int]],
                 estimates: Sequence[float] | None = None,
                 runs: Sequence[float] | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        n = len(shapes)
        sides = np.array(shapes, dtype=np.int64).reshape(n, 2)
        run = np.ones(n) if runs is None else np.asarray(runs, dtype=np.float64)
        estimate = run if estimates is None else np.asarray(estimates, dtype=np.float64)
        self.jobs = Jobs.create(np.arange(n), np.zeros(n), run, estimate,
                                sides.prod(axis=1),
                                shape=np.column_stack([sides, np.ones(n, dtype=np.int64)]),
                                torus=np.zeros(n, dtype=bool))
        self.spec = MachineSpec.parse(machine, allocator, options=options)
        self.machine, self.size, _ = self.spec.implementation.build(self.spec, self.jobs)
        self.kernel_jobs = KernelJobs(self.jobs.submit_s, self.jobs.run_s, estimate, self.size,
                                      self.jobs.size, np.zeros(n, dtype=np.int64), 1,
                                      self.jobs.submit_s)
        self.state = new_state(n, self.spec.units, self.machine.words, 1)
        self.mask = np.zeros(self.machine.words, dtype=np.uint64)

    def occupy(self, running: Sequence[tuple[int, Rect, float]]) -> None:
        """Make the running jobs exactly `running`: (job, (x, y, w, h), allocation time)."""
        self.state = new_state(len(self.jobs), self.spec.units, self.machine.words, 1)
        for j, (x, y, w, h), t in running:
            _hold(self.machine, self.state, self.kernel_jobs, j, t, x, y, w, h, self.mask)

    def wait(self, queue: Sequence[int]) -> None:
        """Make `queue` the waiting jobs, in queue order."""
        st = self.state
        st.queue.waiting[:] = False
        st.queue.jobs[: len(queue)] = queue
        st.queue.waiting[list(queue)] = True
        st.ctr[QLEN] = len(queue)

    def place(self, j: int, now: float = 0.0,
              forbidden: np.ndarray | None = None) -> Rect | None:
        """Where the allocator puts job j now, avoiding the `forbidden` units (a bitset):
        (x, y, w, h), or None if it finds no room."""
        st = self.state
        st.acc[NOW] = now
        avoid = st.scratch.nothing if forbidden is None else forbidden
        if _place_repeatedly(self.machine, st, j, self.size[j], avoid, self.mask, 1) < 0:
            return None
        x, y, width, height = (int(v) for v in self.machine.mesh.rect[j])
        return x, y, width, height


@dataclass(frozen=True)
class Replayed:
    """Per placement of a replayed run: running jobs before it and seconds per call."""

    running: np.ndarray  # (placements,) int64: N_A
    seconds: np.ndarray  # (placements,) float64


def replay(jobs: Jobs, machine: MachineSpec, result: SimulationResult, repeat: int = 20
           ) -> Replayed:
    """Replay the placements of `result` (a simulation of `jobs` on `machine` with no
    start delay) through the allocator, timing each; a
    placement the allocator now makes differently is an error (it is deterministic)."""
    struct, size, _ = machine.implementation.build(machine, jobs)
    n = len(jobs)
    kernel_jobs = KernelJobs(jobs.submit_s, jobs.run_s, jobs.run_s, size, jobs.size,
                             np.zeros(n, dtype=np.int64), 1, jobs.submit_s)
    st = new_state(n, machine.units, struct.words, 1)
    index = {int(job): i for i, job in enumerate(jobs.job_id)}
    log = result.placements
    if log is None:
        raise SimcoreError("the run kept no placement log to replay: its scheduler shares "
                           "processors in time")
    out = np.zeros(struct.words, dtype=np.uint64)
    ends: list[float] = []
    waiting: list[int] = []
    arrived = 0
    running, seconds = [], []
    for t, job, mask in zip(log.time_s, log.job_id, log.masks, strict=True):
        j = index[int(job)]
        while ends and ends[0] <= t:
            end = heapq.heappop(ends)
            finish_jobs(st, end)
        while arrived < n and jobs.submit_s[arrived] <= t:
            waiting.append(arrived)
            arrived += 1
        st.queue.jobs[: len(waiting)] = waiting
        st.queue.waiting[:] = False
        st.queue.waiting[waiting] = True
        st.ctr[QLEN] = len(waiting)
        st.acc[NOW] = t
        began = time.perf_counter()
        alloc = _place_repeatedly(struct, st, j, size[j], st.scratch.nothing, out, repeat)
        elapsed = time.perf_counter() - began
        began = time.perf_counter()
        _place_repeatedly(struct, st, j, size[j], st.scratch.nothing, out, 0)
        overhead = time.perf_counter() - began
        if alloc < 0 or not np.array_equal(out, mask):
            raise AssertionError(f"replay of job {job} at {t}: the allocator answers "
                                 "differently than in the run")
        running.append(int(st.ctr[N_ACTIVE]))
        seconds.append(max(elapsed - overhead, 0.0) / repeat)
        start_job(st, kernel_jobs, 0.0, j, t, alloc, out)
        heapq.heappush(ends, float(st.out.end_s[j]))
        waiting.remove(j)
    return Replayed(np.array(running, dtype=np.int64), np.array(seconds))
