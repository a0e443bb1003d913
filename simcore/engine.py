"""The event loop: arrivals, allocations ("schedule" events), starts and completions.

Jobs are sorted by (submit time, job id) before the loop, which is also the queue's
priority order. The loop jumps from one event time to the next. At one timestamp it
first completes every job ending then, then enqueues every job arriving then, then invokes
the scheduler once. A job allocated at t starts at t + start delay (Krevat's simulator
uses 1 s) and holds its units from t, so the delay counts as lost capacity; it completes
at start + run time. Between events the loop integrates Krevat's unused capacity
max(0, f(t) - q(t)) and, on wired machines, the number of busy cables.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.bitset import popcount64
from simcore.jit import kernel
from simcore.machines.allocate import BOX, FLAT, LINKS
from simcore.machines.links import place_links
from simcore.schedulers.backfill import backfill_pass
from simcore.schedulers.fcfs import fcfs_pass
from simcore.schedulers.migration import migrate
from simcore.state import (
    BLOCKED_LINKS,
    BLOCKED_NO_BOX,
    CABLE_AREA,
    DECISIONS,
    FREE_UNITS,
    N_ACTIVE,
    QLEN,
    QUEUED_UNITS,
    STARTS,
    STATUS,
    STATUS_STUCK,
    UNUSED_AREA,
    compact_queue,
    finish_jobs,
)

FCFS = 0
BACKFILL = 1
MIGRATION = 2
BM = 3


class KernelJobs(NamedTuple):
    """Per-job arrays in priority order, as the kernels read them."""

    submit: np.ndarray  # float64 s
    run: np.ndarray  # float64 s
    estimate: np.ndarray  # float64 s, what the scheduler believes the run time is
    size: np.ndarray  # int64 units the job needs at least (feasible size, shape volume)
    request: np.ndarray  # int64 units requested (s_j of the capacity metrics)
    rotations: np.ndarray  # (jobs, 6, 3) int64: distinct orientations of a fixed shape
    n_rotations: np.ndarray  # int64
    torus: np.ndarray  # bool: the job wants a torus (wired machines)
    placement_class: np.ndarray  # int64 in 0..n_classes-1: jobs of one class place alike
    n_classes: int


class KernelPolicy(NamedTuple):
    scheduler: int
    reservation: bool
    max_growth: int
    fn_tor: float
    fn_max: float
    start_delay: float


@kernel
def run_events(m, st, jobs, policy):
    """Simulate every job; results are left in `st`.

    Hot loops read arrays through locals: every `st.x` access inside a loop would cost
    numba an atomic reference count increment and decrement.
    """
    submit, request = jobs.submit, jobs.request
    ctr, acc, occ, active, slot_end = st.ctr, st.acc, st.occ, st.active, st.slot_end
    queue, waiting = st.queue, st.waiting
    n = submit.shape[0]
    arrived = 0
    t_prev = submit[0] if n else 0.0
    while arrived < n or ctr[N_ACTIVE] > 0:
        t = submit[arrived] if arrived < n else np.inf
        for i in range(ctr[N_ACTIVE]):
            t = min(t, slot_end[active[i]])
        dt = t - t_prev
        if dt > 0:
            idle = ctr[FREE_UNITS] - ctr[QUEUED_UNITS]
            if idle > 0:
                acc[UNUSED_AREA] += idle * dt
            if m.kind == LINKS:
                busy = 0
                for w in range(m.links.unit_words, occ.shape[0]):
                    busy += popcount64(occ[w])
                acc[CABLE_AREA] += busy * dt
        t_prev = t
        finish_jobs(st, t)
        while arrived < n and submit[arrived] == t:
            queue[ctr[QLEN]] = arrived
            ctr[QLEN] += 1
            waiting[arrived] = True
            ctr[QUEUED_UNITS] += request[arrived]
            arrived += 1
        decide(m, st, jobs, policy, t)
        if ctr[QLEN] > 0 and ctr[N_ACTIVE] == 0 and arrived == n:
            ctr[STATUS] = STATUS_STUCK
            return


@kernel
def decide(m, st, jobs, policy, t):
    """One scheduler invocation: FCFS, then migration and/or backfilling if the head blocks."""
    st.ctr[DECISIONS] += 1
    if st.ctr[QLEN] == 0:
        return
    starts = st.ctr[STARTS]
    head_pos = fcfs_pass(m, st, jobs, policy.start_delay, t)
    if head_pos < st.ctr[QLEN] and m.kind != FLAT:
        head = st.queue[head_pos]
        if m.kind == LINKS and place_links(
            m.links, st.occ, jobs.rotations[head], jobs.n_rotations[head], jobs.torus[head],
            st.mask, True
        ) >= 0:
            st.ctr[BLOCKED_LINKS] += 1
        else:
            st.ctr[BLOCKED_NO_BOX] += 1
    if (
        head_pos < st.ctr[QLEN]
        and m.kind == BOX
        and (policy.scheduler == MIGRATION or policy.scheduler == BM)
        and migrate(m, st, policy.fn_tor, policy.fn_max, t)
    ):
        head_pos = fcfs_pass(m, st, jobs, policy.start_delay, t)
    if head_pos < st.ctr[QLEN] and (policy.scheduler == BACKFILL or policy.scheduler == BM):
        backfill_pass(m, st, jobs, policy.start_delay, policy.max_growth, policy.reservation,
                      t, head_pos)
    if st.ctr[STARTS] != starts:
        compact_queue(st)
