"""The event loop: arrivals, allocations ("schedule" events), starts and completions.

Jobs are sorted by (submit time, job id) before the loop, which is also the queue's
priority order. The loop jumps from one event time to the next. At one timestamp it
first completes every job ending then, then enqueues every job arriving then, then invokes
the scheduler once. A job allocated at t starts at t + start delay (Krevat's simulator
uses 1 s) and holds its units from t, so the delay counts as lost capacity; it completes
at start + run time. Between events the loop integrates Krevat's unused capacity
max(0, f(t) - q(t)) and whatever the machine kind integrates itself (wired machines: busy
cables). After a decision that started jobs, the machine may stretch their run times by
where they were placed (`dilate`; by default it does not).

Machines that fail (`simcore.core.failures`) add outage events: at one timestamp they come
after the completions and before the arrivals, and between events the loop integrates the
units out of service. A requeued job can wait on a machine with nothing running while
units are out of service; the loop then waits for the repairs. It stops at the end of the
outages drawn so far (`OUTAGE_HORIZON`), and its caller draws further and resumes.

Every start and every migration move is logged (`state.log_placement`). The loop also
stops once half the log's room is used, and its caller grows the log and resumes.

The loop knows machines and schedulers only through their operations
(`simcore.core.allocate`, `simcore.core.decide`), so it is compiled once per
machine kind and scheduler struct it meets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.base.jit import kernel
from simcore.core.allocate import dilate, integrate, place, wake
from simcore.core.decide import decide
from simcore.core.failures import apply_outages
from simcore.core.state import (
    ARRIVED,
    DOWN_UNITS,
    EPOCH,
    FAILED_AREA,
    FREE_UNITS,
    LOG_CODE_LEN,
    LOG_LEN,
    N_ACTIVE,
    NOW,
    OUTAGE_HORIZON,
    OUTAGE_POS,
    QLEN,
    QUEUED_UNITS,
    STARTS,
    STATUS,
    STATUS_STUCK,
    T_PREV,
    UNUSED_AREA,
    enqueue,
    finish_jobs,
)


class KernelJobs(NamedTuple):
    """Per-job arrays in priority order, as the kernels read them."""

    submit: np.ndarray  # float64 s
    run: np.ndarray  # float64 s
    estimate: np.ndarray  # float64 s, what the scheduler believes the run time is
    size: np.ndarray  # int64 units the job needs at least on this machine (rounded, shaped)
    request: np.ndarray  # int64 units requested (s_j of the capacity metrics)
    placement_class: np.ndarray  # int64 in 0..n_classes-1: jobs of one class place alike
    n_classes: int
    rank: np.ndarray  # float64 s, submit time less the job's priority head start (Jobs)


@kernel
def run_events(policy, m, st, jobs, budget):
    """Simulate until every job is done, or for at most `budget` event times; return
    whether the run is over (done, or stuck: see state.STATUS). The loop's position lives
    in `st`, so calling again resumes exactly where it stopped; results are left in `st`.

    Hot loops read arrays through locals: every `st.x` access inside a loop costs a load
    numba does not hoist.
    """
    submit, request = jobs.submit, jobs.request
    ctr, acc = st.ctr, st.acc
    active, slot_end = st.run.active, st.run.slot_end
    outage_time, outage_domain = st.outages.time, st.outages.domain
    log_capacity, log_room = st.out.log_s.shape[0], st.out.log_code.shape[0]
    n = submit.shape[0]
    arrived = ctr[ARRIVED]
    t_prev = acc[T_PREV]
    if np.isnan(t_prev):
        t_prev = submit[0] if n else 0.0
    while (arrived < n or ctr[N_ACTIVE] > 0 or ctr[QLEN] > 0) and budget > 0:
        budget -= 1
        t = submit[arrived] if arrived < n else np.inf
        for i in range(ctr[N_ACTIVE]):
            t = min(t, slot_end[active[i]])
        woken = wake(m, st)
        t = min(t, woken)
        pos = ctr[OUTAGE_POS]
        if pos < outage_time.shape[0] and outage_time[pos] <= t:
            if outage_domain[pos] < 0:  # the end of the outages drawn so far
                ctr[OUTAGE_HORIZON] = 1
                break
            t = outage_time[pos]
        if t == np.inf:  # jobs wait and nothing can ever change
            ctr[STATUS] = STATUS_STUCK
            break
        dt = t - t_prev
        if dt > 0:
            idle = ctr[FREE_UNITS] - ctr[QUEUED_UNITS]
            if idle > 0:
                acc[UNUSED_AREA] += idle * dt
            acc[FAILED_AREA] += ctr[DOWN_UNITS] * dt
            integrate(m, st, dt)
        t_prev = t
        acc[NOW] = t
        if t == woken:
            ctr[EPOCH] += 1  # the machine's answers changed: no failed placement holds
        free = ctr[FREE_UNITS]
        finish_jobs(st, t)
        apply_outages(st, jobs, t, ctr[FREE_UNITS] - free)
        while arrived < n and submit[arrived] == t:
            enqueue(st, arrived, request[arrived])
            arrived += 1
        starts = ctr[STARTS]
        decide(policy, m, st, jobs, t)
        if ctr[STARTS] != starts:
            dilate(m, st, jobs, t)
        if ctr[QLEN] > 0 and ctr[N_ACTIVE] == 0 and arrived == n and ctr[DOWN_UNITS] == 0 \
                and wake(m, st) == np.inf:
            ctr[STATUS] = STATUS_STUCK
            break
        if 2 * ctr[LOG_LEN] > log_capacity or 2 * ctr[LOG_CODE_LEN] > log_room:
            break  # the caller grows the placement log
    ctr[ARRIVED] = arrived
    acc[T_PREV] = t_prev
    return ctr[STATUS] == STATUS_STUCK or (
        arrived == n and ctr[N_ACTIVE] == 0 and ctr[QLEN] == 0)


@kernel
def unplaceable(m, st, jobs, size, in_service, down, out, never):
    """never[i]: job jobs[i] (of size[i] units) finds no place on the idle machine whose
    resources `down` (`in_service` units left) are out of service (`out`: scratch)."""
    empty = down[:0]
    for i in range(jobs.shape[0]):
        never[i] = size[i] > in_service or \
            place(m, st, jobs[i], size[i], down, 0, empty, out) < 0
