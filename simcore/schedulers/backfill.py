"""Backfilling: start later jobs early without delaying the head job's reservation.

Partitioned machines (Krevat's weak backfilling, Aridor's aggressive backfilling): the
head job's reservation is the earliest estimated end of running jobs at which it can be
placed, and the partition it would get then. A later job may start now if it fits now and
either ends by that time (by its estimate) or stays clear of the reserved partition; on a
box machine it may grow by at most `max_growth` units. Without a reservation
(`reservation=False`), any job that fits starts (plain skip-ahead).

Machines where only counts matter (flat): EASY exactly as Mu'alem and Feitelson define
it: the head's shadow time is the first estimated end at which enough nodes are free; the
extra nodes are those free now plus those of every running job ending (by estimate) by the
shadow time, minus the head's size. A later job that fits now starts if it ends by the
shadow time, or else if it uses no more than the extra nodes, which it then consumes.
"""

from __future__ import annotations

import numpy as np

from simcore.bitset import copy_into
from simcore.jit import kernel
from simcore.machines.allocate import place
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
    QLEN,
    active_by_estimated_end,
    start_job,
)


@kernel
def shadow_time(m, st, jobs, head):
    """Reservation for the head job: (time, units); st.scratch.reserved gets its partition."""
    n = active_by_estimated_end(st)
    order, tmp, held = st.scratch.order, st.scratch.tmp, st.run.held
    est_end, slot_alloc = st.run.slot_est_end, st.run.slot_alloc
    copy_into(tmp, st.run.occ)
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
        if m.counts_only:
            return when, free
        if place(m, st, head, need, tmp, m.units, st.scratch.nothing,
                 st.scratch.reserved) >= 0:
            return when, free
    return np.inf, free


@kernel
def backfill_pass(m, st, jobs, delay, max_growth, reservation, t, head_pos):
    """Start queued jobs after the blocked head that do not delay its reservation.

    A pass that started nothing leaves the occupancy, the head, its reservation and every
    verdict as they were; until the occupancy changes (EPOCH) the next pass only examines
    jobs that arrived since.
    """
    ctr, queue, waiting = st.ctr, st.queue.jobs, st.queue.waiting
    fail_epoch, last_pass, pass_shadow = st.memo.fail_epoch, st.memo.last_pass, st.memo.pass_shadow
    head = queue[head_pos]
    epoch = ctr[EPOCH]
    if last_pass[PASS_EPOCH] == epoch and last_pass[PASS_HEAD] == head:
        begin = last_pass[PASS_SCANNED]
        shadow = pass_shadow[0]
        extra = last_pass[PASS_EXTRA]
    else:
        begin = head_pos + 1
        shadow = np.inf
        extra = 0
        if reservation and ctr[N_ACTIVE] > 0:
            shadow, free_at_shadow = shadow_time(m, st, jobs, head)
            extra = free_at_shadow - jobs.size[head]
            if np.isnan(st.out.reserved_s[head]):
                st.out.reserved_s[head] = shadow
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
        if m.counts_only:
            if reservation and not in_time:
                if size[j] > extra:
                    continue
                extra -= size[j]
            start_job(st, jobs, delay, j, t, place(m, st, j, size[j], occ, 0, nothing, mask),
                      mask)
            continue
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
    if ctr[EPOCH] == epoch:
        last_pass[PASS_EPOCH] = epoch
        last_pass[PASS_HEAD] = head
        last_pass[PASS_SCANNED] = ctr[QLEN]
        pass_shadow[0] = shadow
        last_pass[PASS_EXTRA] = extra
    else:
        last_pass[PASS_EPOCH] = -1
