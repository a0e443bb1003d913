"""Conservative backfilling (Mu'alem and Feitelson 2001) where only counts matter.

Every job gets a reservation when it arrives: the earliest start in the estimate-based
availability profile that conflicts with no running job and no earlier reservation; it
starts when its reservation comes. The profile is a step function of free units over time:
running jobs hold their units until their estimated end, reserved jobs from their
reservation for start delay + estimate.

At one time t, in this order:
1. a running job that has passed its estimated end (it runs longer than estimated) is
   assumed to end just after t (the next event at the earliest: `nextafter(t)`), and the
   plan is compressed, since reservations relying on its units no longer hold;
2. the jobs ending at t complete in start order (ties: queue order); after each one that
   ends earlier than its estimate the plan is compressed;
3. the jobs arriving at t are reserved in queue order;
4. every job whose reservation is t starts on the units the allocator chooses (a job that
   does not fit yet, which only zero-length jobs ending at t can cause, starts when the
   engine calls again at t).

Compressing takes every waiting job out of the plan and re-inserts them one at a time in
order of their current reservation (ties: queue order), each at its earliest feasible time
>= t. With estimates that are never exceeded no job's reservation ever moves later; where
jobs overrun, a compression may move a reservation later, and `reservations_delayed`
counts each such move. Each job's first reservation is kept in the per-job `reserved_s`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.core.decide import decide
from simcore.core.state import DECISIONS, FREE_UNITS, QLEN, STARTS, compact_queue, start_job

if TYPE_CHECKING:
    from simcore.schedulers.contract import Policy


class ConservativePolicy(NamedTuple):
    start_delay: float
    res_s: np.ndarray  # (jobs,) float64: current reservation of each waiting job (nan: none)
    est_end: np.ndarray  # (jobs,) float64: estimated end of each started job (extended)
    running: np.ndarray  # (jobs,) int64: started jobs not yet seen complete, in start order
    prof_t: np.ndarray  # (2 jobs + 2,) float64: profile breakpoints, ascending
    prof_free: np.ndarray  # (2 jobs + 2,) int64: free units from prof_t[k] to prof_t[k + 1]
    order: np.ndarray  # (jobs,) int64 scratch: waiting jobs in reservation order
    spare: np.ndarray  # (jobs,) int64 scratch for sorting
    count: np.ndarray  # (3,) int64: RUNNING jobs listed, PROFILE segments, DELAYED moves


RUNNING = 0
PROFILE = 1
DELAYED = 2


def kernel_policy(policy: Policy, n_jobs: int) -> ConservativePolicy:
    """A fresh plan for `n_jobs` jobs."""
    return ConservativePolicy(
        policy.start_delay_s, np.full(n_jobs, np.nan), np.zeros(n_jobs),
        np.zeros(n_jobs, dtype=np.int64), np.zeros(2 * n_jobs + 2),
        np.zeros(2 * n_jobs + 2, dtype=np.int64), np.zeros(n_jobs, dtype=np.int64),
        np.zeros(n_jobs, dtype=np.int64), np.zeros(3, dtype=np.int64))


def observables(policy: ConservativePolicy) -> dict[str, int]:
    """Run metrics of the plan: reservations moved later because jobs overran."""
    return {"reservations_delayed": int(policy.count[DELAYED])}


@implements(decide, ConservativePolicy)
@kernel
def decide_conservative(policy, m, st, jobs, t):
    """One decision at time t (see the module docstring)."""
    ctr, queue, waiting, end_s = st.ctr, st.queue.jobs, st.queue.waiting, st.out.end_s
    ctr[DECISIONS] += 1
    running, count, est_end, res_s = policy.running, policy.count, policy.est_end, policy.res_s
    if count[PROFILE] == 0:  # the first decision: an idle machine
        policy.prof_t[0] = t
        policy.prof_free[0] = m.units
        count[PROFILE] = 1
    _prune(policy, t)
    stale = False
    for i in range(count[RUNNING]):
        j = running[i]
        if est_end[j] <= t < end_s[j]:  # overran: assume it ends just after t
            est_end[j] = np.nextafter(t, np.inf)
            stale = True
    for i in range(ctr[QLEN]):
        j = queue[i]
        if waiting[j] and res_s[j] < t:  # a reservation passed while its units were held
            stale = True
    if stale:
        _compress(policy, st, jobs, m.units, t)
    i = 0
    while i < count[RUNNING]:  # complete in start order, compressing after early ends
        j = running[i]
        if end_s[j] > t:
            i += 1
            continue
        for k in range(i, count[RUNNING] - 1):
            running[k] = running[k + 1]
        count[RUNNING] -= 1
        if end_s[j] < est_end[j]:
            _compress(policy, st, jobs, m.units, t)
    delay, size, estimate = policy.start_delay, jobs.size, jobs.estimate
    for i in range(ctr[QLEN]):  # reserve arrivals in queue order
        j = queue[i]
        if waiting[j] and np.isnan(res_s[j]):
            res_s[j] = _reserve(policy, size[j], delay, estimate[j], t)
            st.out.reserved_s[j] = res_s[j]
    starts = ctr[STARTS]
    for i in range(ctr[QLEN]):
        j = queue[i]
        if waiting[j] and res_s[j] <= t and size[j] <= ctr[FREE_UNITS]:
            alloc = place(m, st, j, size[j], st.run.occ, 0, st.scratch.nothing, st.scratch.mask)
            start_job(st, jobs, delay, j, t, alloc, st.scratch.mask)
            est_end[j] = (t + delay) + estimate[j]
            running[count[RUNNING]] = j
            count[RUNNING] += 1
    if ctr[STARTS] != starts:
        compact_queue(st)


@kernel
def _compress(policy, st, jobs, units, t):
    """Rebuild the profile from the running jobs and re-insert every waiting job in order
    of its current reservation (ties: queue order) at its earliest feasible time >= t."""
    res_s, order, count = policy.res_s, policy.order, policy.count
    queue, waiting = st.queue.jobs, st.queue.waiting
    n = 0
    for i in range(st.ctr[QLEN]):
        j = queue[i]
        if waiting[j] and not np.isnan(res_s[j]):
            order[n] = j
            n += 1
    _sort_by_reservation(order, policy.spare, n, res_s)
    _running_profile(policy, st, units, t)
    delay, size, estimate = policy.start_delay, jobs.size, jobs.estimate
    for k in range(n):
        j = order[k]
        when = _reserve(policy, size[j], delay, estimate[j], t)
        if when > res_s[j]:
            count[DELAYED] += 1
        res_s[j] = when


@kernel
def _running_profile(policy, st, units, t):
    """The profile from t on with only the running jobs, each holding its units until its
    estimated end."""
    prof_t, prof_free, running, est_end = policy.prof_t, policy.prof_free, policy.running, \
        policy.est_end
    alloc = st.out.alloc
    n_running = policy.count[RUNNING]
    free = units
    for i in range(n_running):
        if est_end[running[i]] > t:
            free -= alloc[running[i]]
    prof_t[0] = t
    prof_free[0] = free
    policy.count[PROFILE] = 1
    for i in range(n_running):
        j = running[i]
        if est_end[j] > t:
            for k in range(_split(policy, est_end[j]), policy.count[PROFILE]):
                prof_free[k] += alloc[j]


@kernel
def _prune(policy, t):
    """Drop the profile's segments that ended by t (the plan only looks forward)."""
    prof_t, prof_free = policy.prof_t, policy.prof_free
    n = policy.count[PROFILE]
    k = _segment(prof_t, n, t)
    if k > 0:
        for q in range(k, n):
            prof_t[q - k] = prof_t[q]
            prof_free[q - k] = prof_free[q]
        policy.count[PROFILE] = n - k
    if prof_t[0] < t:
        prof_t[0] = t


@kernel
def _segment(prof_t, n, at):
    """Index of the segment holding time `at`: the last k with prof_t[k] <= at (0 if none)."""
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if prof_t[mid] <= at:
            lo = mid
        else:
            hi = mid
    return lo


@kernel
def _split(policy, at):
    """Make `at` a breakpoint of the profile; return its index."""
    prof_t, prof_free = policy.prof_t, policy.prof_free
    n = policy.count[PROFILE]
    k = _segment(prof_t, n, at)
    if prof_t[k] == at:
        return k
    for q in range(n, k + 1, -1):
        prof_t[q] = prof_t[q - 1]
        prof_free[q] = prof_free[q - 1]
    prof_t[k + 1] = at
    prof_free[k + 1] = prof_free[k]
    policy.count[PROFILE] = n + 1
    return k + 1


@kernel
def _reserve(policy, size, delay, estimate, t):
    """Reserve `size` units at the earliest time s >= t at which they are free for the
    job's whole estimated stay [s, s + delay + estimate); return s."""
    prof_t, prof_free = policy.prof_t, policy.prof_free
    n = policy.count[PROFILE]
    k = _segment(prof_t, n, t)
    when = np.inf
    while k < n:
        begin = max(t, prof_t[k])
        end = (begin + delay) + estimate
        q = k
        fits = True
        while True:  # every segment the stay touches (at least the one it starts in)
            if prof_free[q] < size:
                fits = False
                break
            q += 1
            if q >= n or prof_t[q] >= end:
                break
        if fits:
            when = begin
            break
        k = q + 1
    if when < np.inf and (when + delay) + estimate > when:
        first = _split(policy, when)
        last = _split(policy, (when + delay) + estimate)
        for q in range(first, last):
            prof_free[q] -= size
    return when


@kernel
def _sort_by_reservation(order, spare, n, res_s):
    """Sort order[:n] by (res_s[j], j), stably, by bottom-up merging through `spare`."""
    width = 1
    src, dst = order, spare
    in_spare = False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, out = lo, mid, lo
            while a < mid and b < hi:
                ja, jb = src[a], src[b]
                if res_s[jb] < res_s[ja] or (res_s[jb] == res_s[ja] and jb < ja):
                    dst[out] = jb
                    b += 1
                else:
                    dst[out] = ja
                    a += 1
                out += 1
            while a < mid:
                dst[out] = src[a]
                a += 1
                out += 1
            while b < hi:
                dst[out] = src[b]
                b += 1
                out += 1
        src, dst = dst, src
        in_spare = not in_spare
        width *= 2
    if in_spare:
        for k in range(n):
            order[k] = spare[k]
