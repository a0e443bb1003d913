"""Simulation state shared by the event loop and the schedulers, as flat arrays.

Everything a run changes lives in one `State` of preallocated numpy arrays (numba reads a
namedtuple of arrays as a struct); scalar counters sit in `ctr` (int64) and `acc`
(float64) at the indices named below. A running job occupies a slot: its resources (a
bitset over units, and on wired machines cables), its end times and its allocated units.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.bitset import copy_into
from simcore.jit import kernel

# ctr indices
QLEN = 0  # entries in queue[] (some may have started during the current decision)
N_ACTIVE = 1  # running jobs
N_FREE_SLOTS = 2
FREE_UNITS = 3  # units not held by any running job
QUEUED_UNITS = 4  # requested units of waiting jobs: q(t) of Krevat eq. 4.2
MIGRATIONS_ATTEMPTED = 5
MIGRATIONS_SUCCESSFUL = 6
DECISIONS = 7  # scheduler invocations
BLOCKED_NO_BOX = 8  # decisions whose head job found no free box of units
BLOCKED_LINKS = 9  # decisions whose head job found free boxes but no free links
EPOCH = 10  # bumped whenever occupancy changes; invalidates cached placement failures
STATUS = 11  # 0 ok, 1 stuck: jobs wait on an idle machine with no arrivals left
LOG_LEN = 12  # entries in the placement log
PASS_EPOCH = 13  # epoch of the last backfill pass that started nothing (-1: none)
PASS_HEAD = 14  # its head job
PASS_SCANNED = 15  # queue entries it examined
PASS_EXTRA = 16  # its extra nodes (flat EASY)
STARTS = 17  # jobs started so far
N_CTR = 18

# acc indices
UNUSED_AREA = 0  # integral of max(0, f(t) - q(t)) dt, unit-seconds
CABLE_AREA = 1  # integral of busy cables dt, cable-seconds
PASS_SHADOW = 2  # shadow time of the last backfill pass that started nothing
N_ACC = 3

STATUS_STUCK = 1

# fail_epoch columns: a placement failure holds until the occupancy changes (EPOCH bumps)
FAIL_BACKFILL = 0
FAIL_GUARDED = 1
FAIL_FCFS = 2


class State(NamedTuple):
    occ: np.ndarray  # (words,) uint64: resources in use
    held: np.ndarray  # (slots, words) uint64: resources of the job in each slot
    slot_job: np.ndarray  # (slots,) int64
    slot_end: np.ndarray  # (slots,) float64, actual end
    slot_est_end: np.ndarray  # (slots,) float64, end by the scheduler's estimate
    slot_alloc: np.ndarray  # (slots,) int64, units allocated
    active: np.ndarray  # (slots,) int64: slots in use, first ctr[N_ACTIVE]
    free_slots: np.ndarray  # (slots,) int64: stack of unused slots
    queue: np.ndarray  # (jobs,) int64: waiting jobs in priority order, first ctr[QLEN]
    waiting: np.ndarray  # (jobs,) bool
    sched_s: np.ndarray  # (jobs,) float64: when the job was allocated
    start_s: np.ndarray  # (jobs,) float64: sched_s + start delay
    end_s: np.ndarray  # (jobs,) float64
    alloc: np.ndarray  # (jobs,) int64: units allocated (after rounding and growth)
    migration_s: np.ndarray  # (cap,) float64: times of successful migrations
    reserved_s: np.ndarray  # (jobs,) float64: first reservation time the job got as head
    log_s: np.ndarray  # (cap,) float64: placement log (empty unless recording): when,
    log_job: np.ndarray  # (cap,) int64: which job,
    log_mask: np.ndarray  # (cap, words) uint64: which resources, from then on
    fail_epoch: np.ndarray  # (classes, 3) int64: epoch of a class's last failed placement,
    # by rule: FAIL_BACKFILL (bounded growth), FAIL_GUARDED (+ reservation), FAIL_FCFS
    free_list: np.ndarray  # (boxes,) int64 scratch: boxes free in some occupancy
    tmp: np.ndarray  # (words,) uint64 scratch
    mask: np.ndarray  # (words,) uint64 scratch: a placement
    reserved: np.ndarray  # (words,) uint64: the head job's reserved partition
    moved: np.ndarray  # (slots, words) uint64 scratch: placements during a migration
    order: np.ndarray  # (slots,) int64 scratch: running slots in some order
    stays: np.ndarray  # (slots,) bool scratch: jobs a migration leaves in place
    ctr: np.ndarray  # (N_CTR,) int64
    acc: np.ndarray  # (N_ACC,) float64


def new_state(n_jobs: int, slots: int, words: int, boxes: int, classes: int,
              log_capacity: int = 0) -> State:
    """Fresh state for an idle machine of `slots` units (at most one job per unit).

    `log_capacity` > 0 records every placement (start or migration move) for checking.
    """
    ctr = np.zeros(N_CTR, dtype=np.int64)
    ctr[N_FREE_SLOTS] = slots
    ctr[FREE_UNITS] = slots
    ctr[PASS_EPOCH] = -1
    return State(
        occ=np.zeros(words, dtype=np.uint64),
        held=np.zeros((slots, words), dtype=np.uint64),
        slot_job=np.full(slots, -1, dtype=np.int64),
        slot_end=np.zeros(slots),
        slot_est_end=np.zeros(slots),
        slot_alloc=np.zeros(slots, dtype=np.int64),
        active=np.zeros(slots, dtype=np.int64),
        free_slots=np.arange(slots - 1, -1, -1, dtype=np.int64),
        queue=np.zeros(n_jobs, dtype=np.int64),
        waiting=np.zeros(n_jobs, dtype=bool),
        sched_s=np.full(n_jobs, np.nan),
        start_s=np.full(n_jobs, np.nan),
        end_s=np.full(n_jobs, np.nan),
        alloc=np.zeros(n_jobs, dtype=np.int64),
        migration_s=np.zeros(2 * n_jobs + 1),
        reserved_s=np.full(n_jobs, np.nan),
        log_s=np.zeros(log_capacity),
        log_job=np.zeros(log_capacity, dtype=np.int64),
        log_mask=np.zeros((log_capacity, words), dtype=np.uint64),
        fail_epoch=np.full((max(classes, 1), 3), -1, dtype=np.int64),
        free_list=np.zeros(max(boxes, 1), dtype=np.int64),
        tmp=np.zeros(words, dtype=np.uint64),
        mask=np.zeros(words, dtype=np.uint64),
        reserved=np.zeros(words, dtype=np.uint64),
        moved=np.zeros((slots, words), dtype=np.uint64),
        order=np.zeros(slots, dtype=np.int64),
        stays=np.zeros(slots, dtype=np.bool_),
        ctr=ctr,
        acc=np.zeros(N_ACC),
    )


@kernel
def start_job(st, jobs, delay, j, t, alloc, mask):
    """Allocate `mask` (and `alloc` units) to waiting job j at time t; it runs after `delay`."""
    ctr, occ, held = st.ctr, st.occ, st.held
    ctr[N_FREE_SLOTS] -= 1
    slot = st.free_slots[ctr[N_FREE_SLOTS]]
    for w in range(occ.shape[0]):
        held[slot, w] = mask[w]
        occ[w] |= mask[w]
    start = t + delay
    end = start + jobs.run[j]
    st.slot_job[slot] = j
    st.slot_end[slot] = end
    st.slot_est_end[slot] = start + jobs.estimate[j]
    st.slot_alloc[slot] = alloc
    st.active[ctr[N_ACTIVE]] = slot
    ctr[N_ACTIVE] += 1
    st.sched_s[j] = t
    st.start_s[j] = start
    st.end_s[j] = end
    st.alloc[j] = alloc
    st.waiting[j] = False
    ctr[FREE_UNITS] -= alloc
    ctr[QUEUED_UNITS] -= jobs.request[j]
    ctr[EPOCH] += 1
    ctr[STARTS] += 1
    log_placement(st, t, j, mask)


@kernel
def log_placement(st, t, j, mask):
    """Append (t, j, mask) to the placement log when recording."""
    n = st.ctr[LOG_LEN]
    if n < st.log_s.shape[0]:
        st.log_s[n] = t
        st.log_job[n] = j
        copy_into(st.log_mask[n], mask)
        st.ctr[LOG_LEN] = n + 1


@kernel
def finish_jobs(st, t):
    """Release every running job whose end time is t."""
    ctr, occ, held, active, slot_end = st.ctr, st.occ, st.held, st.active, st.slot_end
    i = 0
    while i < ctr[N_ACTIVE]:
        slot = active[i]
        if slot_end[slot] == t:
            for w in range(occ.shape[0]):
                occ[w] &= ~held[slot, w]
            ctr[FREE_UNITS] += st.slot_alloc[slot]
            st.slot_job[slot] = -1
            ctr[N_ACTIVE] -= 1
            active[i] = active[ctr[N_ACTIVE]]
            st.free_slots[ctr[N_FREE_SLOTS]] = slot
            ctr[N_FREE_SLOTS] += 1
            ctr[EPOCH] += 1
        else:
            i += 1


@kernel
def compact_queue(st):
    """Drop jobs that started from the queue, keeping priority order (and keeping the
    prefix the last backfill pass examined marked as examined)."""
    ctr, queue, waiting = st.ctr, st.queue, st.waiting
    scanned = ctr[PASS_SCANNED]
    n = 0
    examined = 0
    for i in range(ctr[QLEN]):
        j = queue[i]
        if waiting[j]:
            queue[n] = j
            n += 1
            if i < scanned:
                examined = n
    ctr[QLEN] = n
    ctr[PASS_SCANNED] = examined


@kernel
def active_by_estimated_end(st):
    """Order running slots by estimated end, ties by job (submit order), into st.order;
    return how many there are."""
    return _sorted_active(st, st.slot_est_end, 1.0)


@kernel
def active_by_size(st):
    """Order running slots by allocated units, largest first, ties by job, into st.order;
    return how many there are."""
    return _sorted_active(st, st.slot_alloc, -1.0)


@kernel
def _sorted_active(st, key, sign):
    """Insertion sort of the running slots by sign * key[slot], then job: running sets are
    small and often nearly sorted, and nothing is allocated."""
    order, slot_job, active = st.order, st.slot_job, st.active
    n = st.ctr[N_ACTIVE]
    for i in range(n):
        slot = active[i]
        value = sign * key[slot]
        job = slot_job[slot]
        k = i
        while k > 0:
            prev = order[k - 1]
            prev_value = sign * key[prev]
            if prev_value < value or (prev_value == value and slot_job[prev] < job):
                break
            order[k] = prev
            k -= 1
        order[k] = slot
    return n
