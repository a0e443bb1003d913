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
from numba import njit

from simcore.machines.allocate import BOX, FLAT, place, refresh
from simcore.state import (
    EPOCH,
    FAIL_BACKFILL,
    FAIL_GUARDED,
    FREE_UNITS,
    N_ACTIVE,
    QLEN,
    active_by_estimated_end,
    start_job,
)


@njit(cache=True, nogil=True)
def shadow_time(m, st, jobs, head):
    """Reservation for the head job: (time, units); st.reserved gets its partition."""
    order = active_by_estimated_end(st)
    st.tmp[:] = st.occ
    free = st.ctr[FREE_UNITS]
    k = 0
    while k < order.shape[0]:
        when = st.slot_est_end[order[k]]
        while k < order.shape[0] and st.slot_est_end[order[k]] == when:
            slot = order[k]
            for w in range(st.tmp.shape[0]):
                st.tmp[w] &= ~st.held[slot, w]
            free += st.slot_alloc[slot]
            k += 1
        if free < jobs.size[head]:
            continue
        if m.kind == FLAT:
            return when, free
        n_free = refresh(m, st, st.tmp)
        if place(m, st, jobs, head, st.tmp, n_free, m.units, st.occ, False, st.reserved) >= 0:
            return when, free
    return np.inf, free


@njit(cache=True, nogil=True)
def backfill_pass(m, st, jobs, delay, max_growth, reservation, t, head_pos):
    """Start queued jobs after the blocked head that do not delay its reservation."""
    head = st.queue[head_pos]
    shadow = np.inf
    extra = 0
    if reservation and st.ctr[N_ACTIVE] > 0:
        shadow, free_at_shadow = shadow_time(m, st, jobs, head)
        extra = free_at_shadow - jobs.size[head]
        if np.isnan(st.reserved_s[head]):
            st.reserved_s[head] = shadow
    growth = max_growth if m.kind == BOX else 0
    n_free = refresh(m, st, st.occ)
    for i in range(head_pos + 1, st.ctr[QLEN]):
        j = st.queue[i]
        if not st.waiting[j] or jobs.size[j] > st.ctr[FREE_UNITS]:
            continue
        in_time = t + delay + jobs.estimate[j] <= shadow
        if m.kind == FLAT:
            if in_time or not reservation:
                start_job(st, jobs, delay, j, t, jobs.size[j], st.mask)
            elif jobs.size[j] <= extra:
                extra -= jobs.size[j]
                start_job(st, jobs, delay, j, t, jobs.size[j], st.mask)
            continue
        guarded = FAIL_GUARDED if (reservation and not in_time) else FAIL_BACKFILL
        cls = jobs.placement_class[j]
        if st.fail_epoch[cls, guarded] == st.ctr[EPOCH]:
            continue  # an identical job already failed in this very occupancy
        alloc = place(m, st, jobs, j, st.occ, n_free, growth, st.reserved,
                      guarded == FAIL_GUARDED, st.mask)
        if alloc < 0:
            st.fail_epoch[cls, guarded] = st.ctr[EPOCH]
            continue
        start_job(st, jobs, delay, j, t, alloc, st.mask)
        n_free = refresh(m, st, st.occ)
