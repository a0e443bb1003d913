"""Backfilling: start later jobs early without delaying the head job's reservation.

Partitioned machines (Krevat's weak backfilling, Aridor's aggressive backfilling): the
head job's reservation is the earliest estimated end of running jobs at which it can be
placed, and the partition it would get then. A later job may start now if it fits now and
either ends by that time (by its estimate) or stays clear of the reserved partition; on a
box machine it may grow by at most `max_growth` units. Without a reservation
(`reservation=False`), any job that fits starts (plain skip-ahead).

Flat machines: EASY exactly as Mu'alem and Feitelson define it: the head's shadow time is
the first estimated end at which enough nodes are free; the extra nodes are those free now
plus those of every running job ending (by estimate) by the shadow time, minus the head's
size. A later job that fits now starts if it ends by the shadow time, or else if it uses no
more than the extra nodes, which it then consumes.
"""

from __future__ import annotations

import numpy as np

from simcore.bitset import copy_into
from simcore.jit import kernel
from simcore.machines.allocate import BOX, FLAT, place, refresh
from simcore.state import (
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
    """Reservation for the head job: (time, units); st.reserved gets its partition."""
    n = active_by_estimated_end(st)
    order, tmp, held = st.order, st.tmp, st.held
    est_end, slot_alloc = st.slot_est_end, st.slot_alloc
    copy_into(tmp, st.occ)
    free = st.ctr[FREE_UNITS]
    need = jobs.size[head]
    k = 0
    while k < n:
        when = est_end[order[k]]
        while k < n and est_end[order[k]] == when:
            slot = order[k]
            for w in range(tmp.shape[0]):
                tmp[w] &= ~held[slot, w]
            free += slot_alloc[slot]
            k += 1
        if free < need:
            continue
        if m.kind == FLAT:
            return when, free
        n_free = refresh(m, st, tmp)
        if place(m, st, jobs, head, tmp, n_free, m.units, st.occ, False, st.reserved) >= 0:
            return when, free
    return np.inf, free


@kernel
def backfill_pass(m, st, jobs, delay, max_growth, reservation, t, head_pos):
    """Start queued jobs after the blocked head that do not delay its reservation.

    A pass that started nothing leaves the occupancy, the head, its reservation and every
    verdict as they were; until the occupancy changes (EPOCH) the next pass only examines
    jobs that arrived since.
    """
    head = st.queue[head_pos]
    epoch = st.ctr[EPOCH]
    if st.ctr[PASS_EPOCH] == epoch and st.ctr[PASS_HEAD] == head:
        begin = st.ctr[PASS_SCANNED]
        shadow = st.acc[PASS_SHADOW]
        extra = st.ctr[PASS_EXTRA]
    else:
        begin = head_pos + 1
        shadow = np.inf
        extra = 0
        if reservation and st.ctr[N_ACTIVE] > 0:
            shadow, free_at_shadow = shadow_time(m, st, jobs, head)
            extra = free_at_shadow - jobs.size[head]
            if np.isnan(st.reserved_s[head]):
                st.reserved_s[head] = shadow
    growth = max_growth if m.kind == BOX else 0
    ctr, queue, waiting, fail_epoch = st.ctr, st.queue, st.waiting, st.fail_epoch
    size, estimate, placement_class = jobs.size, jobs.estimate, jobs.placement_class
    n_free = refresh(m, st, st.occ) if ctr[FREE_UNITS] > 0 else 0
    failures = 0  # class x rule failures recorded in this occupancy by this pass
    all_fail = jobs.n_classes * (2 if reservation else 1)
    for i in range(begin, ctr[QLEN]):
        if ctr[FREE_UNITS] == 0:
            break
        j = queue[i]
        if not waiting[j] or size[j] > ctr[FREE_UNITS]:
            continue
        in_time = t + delay + estimate[j] <= shadow
        if m.kind == FLAT:
            if in_time or not reservation:
                start_job(st, jobs, delay, j, t, size[j], st.mask)
            elif size[j] <= extra:
                extra -= size[j]
                start_job(st, jobs, delay, j, t, size[j], st.mask)
            continue
        guarded = FAIL_GUARDED if (reservation and not in_time) else FAIL_BACKFILL
        cls = placement_class[j]
        if fail_epoch[cls, guarded] == ctr[EPOCH]:
            continue  # an identical job already failed in this very occupancy
        alloc = place(m, st, jobs, j, st.occ, n_free, growth, st.reserved,
                      guarded == FAIL_GUARDED, st.mask)
        if alloc < 0:
            fail_epoch[cls, guarded] = ctr[EPOCH]
            failures += 1
            if failures == all_fail:
                break  # every kind of job already fails here: none behind can start
            continue
        start_job(st, jobs, delay, j, t, alloc, st.mask)
        failures = 0
        n_free = refresh(m, st, st.occ)
    if st.ctr[EPOCH] == epoch:
        st.ctr[PASS_EPOCH] = epoch
        st.ctr[PASS_HEAD] = head
        st.ctr[PASS_SCANNED] = st.ctr[QLEN]
        st.acc[PASS_SHADOW] = shadow
        st.ctr[PASS_EXTRA] = extra
    else:
        st.ctr[PASS_EPOCH] = -1
