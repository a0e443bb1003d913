"""Backfilling on partitioned machines: start later jobs early without delaying the head
job's reservation (Krevat's weak backfilling, Aridor's aggressive backfilling).

The head job's reservation is the earliest estimated end of running jobs at which it can
be placed, and the partition it would get then (`shadow_time`). A later job may start now
if it fits now and either ends by that time (by its estimate) or stays clear of the
reserved partition; on a box machine it may grow by at most `max_growth` units. Without a
reservation (`reservation=False`), any job that fits starts (plain skip-ahead). Machines
where only counts matter run EASY instead (`simcore.schedulers.easy`), on the same
reservation and the same memo of the last pass (`resume_pass`, `end_pass`).
"""

from __future__ import annotations

import numpy as np

from simcore.base.bitset import copy_into
from simcore.base.jit import kernel
from simcore.core.allocate import largest_free, place
from simcore.core.state import (
    EPOCH,
    FAIL_BACKFILL,
    FAIL_GUARDED,
    FREE_UNITS,
    N_ACTIVE,
    PASS_EPOCH,
    PASS_EXTRA,
    PASS_HEAD,
    PASS_SCANNED,
    PASS_SHADOW,
    QLEN,
    active_by_estimated_end,
    start_job,
)


@kernel
def shadow_time(m, st, jobs, head):
    """Reservation for the head job: (time, units); st.scratch.reserved gets its partition.

    The reservation is at the first estimated end of running jobs by which enough of them
    have ended for the head to be placed. Where the machine knows its largest free
    partition, the head (placed with unbounded growth) fits exactly when that partition
    holds it, and ending more jobs never makes it smaller, so that first end is found by
    galloping then bisection over the ends: a few partition searches instead of one per
    running job.
    """
    n = active_by_estimated_end(st)
    order, est_end, slot_alloc = st.scratch.order, st.run.slot_est_end, st.run.slot_alloc
    free = st.ctr[FREE_UNITS]
    need = jobs.size[head]
    k = 0
    when = np.inf
    while k < n:  # the first end by which enough units are free
        when = est_end[order[k]]
        while k < n and est_end[order[k]] == when:
            free += slot_alloc[order[k]]
            k += 1
        if free >= need:
            break
    if free < need:
        return np.inf, free
    if m.counts_only:
        return when, free
    tmp = st.scratch.tmp
    _release(st, n, k)
    largest = largest_free(m, st, tmp)
    if largest < 0:  # the kind knows no largest free partition
        return _first_placeable(m, st, jobs, head, n, k, free)
    if largest < need:
        # the head needs a later end: the first k' in (k, n] whose ends hold it
        lo, hi, step = k, k, 1
        while True:
            hi = min(lo + step, n)
            _release(st, n, hi)
            if largest_free(m, st, tmp) >= need:
                break
            if hi == n:
                return np.inf, _free_after(st, n)
            lo, step = hi, 2 * step
        while hi - lo > 1:
            mid = (lo + hi) // 2
            _release(st, n, mid)
            if largest_free(m, st, tmp) >= need:
                hi = mid
            else:
                lo = mid
        k = _group_end(st, n, hi)
        _release(st, n, k)
    place(m, st, head, need, tmp, m.units, st.scratch.nothing, st.scratch.reserved)
    return est_end[order[k - 1]], _free_after(st, k)


@kernel
def _group_end(st, n, k):
    """k extended to the end of the group of running jobs sharing the estimated end of
    the k-th in order (k >= 1)."""
    order, est_end = st.scratch.order, st.run.slot_est_end
    when = est_end[order[k - 1]]
    while k < n and est_end[order[k]] == when:
        k += 1
    return k


@kernel
def _release(st, n, k):
    """st.scratch.tmp: the occupancy once every running job ending (by estimate) by the
    k-th end in order has ended (k taken to the end of its group)."""
    k = _group_end(st, n, k)
    order, tmp, held = st.scratch.order, st.scratch.tmp, st.run.held
    copy_into(tmp, st.run.occ)
    for i in range(k):
        slot = order[i]
        for w in range(tmp.shape[0]):
            tmp[w] &= ~held[slot, w]


@kernel
def _free_after(st, k):
    """Free units once the first k running jobs in order have ended."""
    free = st.ctr[FREE_UNITS]
    for i in range(k):
        free += st.run.slot_alloc[st.scratch.order[i]]
    return free


@kernel
def _first_placeable(m, st, jobs, head, n, k, free):
    """shadow_time on machines without a largest free partition: try every end from the
    k-th on in turn (free units after the first k ends: `free`)."""
    order, tmp, held = st.scratch.order, st.scratch.tmp, st.run.held
    est_end, slot_alloc = st.run.slot_est_end, st.run.slot_alloc
    need = jobs.size[head]
    _release(st, n, k)
    while True:
        if place(m, st, head, need, tmp, m.units, st.scratch.nothing,
                 st.scratch.reserved) >= 0:
            return est_end[order[k - 1]], free
        if k == n:
            return np.inf, free
        when = est_end[order[k]]
        while k < n and est_end[order[k]] == when:
            slot = order[k]
            for w in range(tmp.shape[0]):
                tmp[w] &= ~held[slot, w]
            free += slot_alloc[slot]
            k += 1


@kernel
def resume_pass(m, st, jobs, head_pos, reservation):
    """Where a backfill pass behind the head at `head_pos` begins: (first queue position to
    examine, shadow time, extra units). Where the last pass started nothing and the
    occupancy and head are as they were (EPOCH), it goes on with the jobs that arrived
    since, on the same reservation; otherwise it starts after the head with a fresh one
    (none without `reservation` or running jobs: an infinite shadow time)."""
    ctr, last_pass = st.ctr, st.memo.last_pass
    head = st.queue.jobs[head_pos]
    if last_pass[PASS_EPOCH] == ctr[EPOCH] and last_pass[PASS_HEAD] == head:
        return last_pass[PASS_SCANNED], st.acc[PASS_SHADOW], last_pass[PASS_EXTRA]
    shadow = np.inf
    extra = 0
    if reservation and ctr[N_ACTIVE] > 0:
        shadow, free_at_shadow = shadow_time(m, st, jobs, head)
        extra = free_at_shadow - jobs.size[head]
        if np.isnan(st.out.reserved_s[head]):
            st.out.reserved_s[head] = shadow
    return head_pos + 1, shadow, extra


@kernel
def end_pass(st, epoch, head, shadow, extra):
    """Remember a pass that began in occupancy `epoch` for the next one, if it started
    nothing (the occupancy is still `epoch`); forget it otherwise."""
    last_pass = st.memo.last_pass
    if st.ctr[EPOCH] == epoch:
        last_pass[PASS_EPOCH] = epoch
        last_pass[PASS_HEAD] = head
        last_pass[PASS_SCANNED] = st.ctr[QLEN]
        st.acc[PASS_SHADOW] = shadow
        last_pass[PASS_EXTRA] = extra
    else:
        last_pass[PASS_EPOCH] = -1


@kernel
def backfill_pass(m, st, jobs, delay, max_growth, reservation, t, head_pos):
    """Start queued jobs after the blocked head that neither delay its reservation nor
    take its reserved partition, on a partitioned machine."""
    ctr, queue, waiting, fail_epoch = st.ctr, st.queue.jobs, st.queue.waiting, \
        st.memo.fail_epoch
    head, epoch = queue[head_pos], ctr[EPOCH]
    begin, shadow, extra = resume_pass(m, st, jobs, head_pos, reservation)
    size, estimate, placement_class = jobs.size, jobs.estimate, jobs.placement_class
    occ, mask, reserved, nothing = st.run.occ, st.scratch.mask, st.scratch.reserved, \
        st.scratch.nothing
    failures = 0  # class x rule failures recorded in this occupancy by this pass
    all_fail = jobs.n_classes * (2 if reservation else 1)
    for i in range(begin, ctr[QLEN]):
        if ctr[FREE_UNITS] == 0:
            break
        j = queue[i]
        if not waiting[j] or size[j] > ctr[FREE_UNITS]:
            continue
        in_time = t + delay + estimate[j] <= shadow
        guarded = FAIL_GUARDED if (reservation and not in_time) else FAIL_BACKFILL
        cls = placement_class[j]
        if fail_epoch[cls, guarded] == ctr[EPOCH]:
            continue  # an identical job already failed in this very occupancy
        alloc = place(m, st, j, size[j], occ, max_growth, reserved if guarded == FAIL_GUARDED
                      else nothing, mask)
        if alloc < 0:
            fail_epoch[cls, guarded] = ctr[EPOCH]
            failures += 1
            if failures == all_fail:
                break  # every kind of job already fails here: none behind can start
            continue
        start_job(st, jobs, delay, j, t, alloc, mask)
        failures = 0
    end_pass(st, epoch, head, shadow, extra)
