"""Simulation state shared by the event loop and the schedulers, as flat arrays.

Everything a run changes lives in one `State` of preallocated numpy arrays (numba reads a
namedtuple of arrays as a struct); scalar counters sit in `ctr` (int64) and `acc`
(float64) at the indices named below. A running job occupies a slot: its resources (a
bitset over units, and on wired machines cables), its end times and its allocated units.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

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
N_CTR = 13

# acc indices
UNUSED_AREA = 0  # integral of max(0, f(t) - q(t)) dt, unit-seconds
CABLE_AREA = 1  # integral of busy cables dt, cable-seconds
N_ACC = 2

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
        ctr=ctr,
        acc=np.zeros(N_ACC),
    )


@njit(cache=True, nogil=True)
def start_job(st, jobs, delay, j, t, alloc, mask):
    """Allocate `mask` (and `alloc` units) to waiting job j at time t; it runs after `delay`."""
    st.ctr[N_FREE_SLOTS] -= 1
    slot = st.free_slots[st.ctr[N_FREE_SLOTS]]
    for w in range(st.occ.shape[0]):
        st.held[slot, w] = mask[w]
        st.occ[w] |= mask[w]
    start = t + delay
    st.slot_job[slot] = j
    st.slot_end[slot] = start + jobs.run[j]
    st.slot_est_end[slot] = start + jobs.estimate[j]
    st.slot_alloc[slot] = alloc
    st.active[st.ctr[N_ACTIVE]] = slot
    st.ctr[N_ACTIVE] += 1
    st.sched_s[j] = t
    st.start_s[j] = start
    st.end_s[j] = start + jobs.run[j]
    st.alloc[j] = alloc
    st.waiting[j] = False
    st.ctr[FREE_UNITS] -= alloc
    st.ctr[QUEUED_UNITS] -= jobs.request[j]
    st.ctr[EPOCH] += 1
    log_placement(st, t, j, mask)


@njit(cache=True, nogil=True)
def log_placement(st, t, j, mask):
    """Append (t, j, mask) to the placement log when recording."""
    n = st.ctr[LOG_LEN]
    if n < st.log_s.shape[0]:
        st.log_s[n] = t
        st.log_job[n] = j
        st.log_mask[n] = mask
        st.ctr[LOG_LEN] = n + 1


@njit(cache=True, nogil=True)
def finish_jobs(st, t):
    """Release every running job whose end time is t."""
    i = 0
    while i < st.ctr[N_ACTIVE]:
        slot = st.active[i]
        if st.slot_end[slot] == t:
            for w in range(st.occ.shape[0]):
                st.occ[w] &= ~st.held[slot, w]
            st.ctr[FREE_UNITS] += st.slot_alloc[slot]
            st.slot_job[slot] = -1
            st.ctr[N_ACTIVE] -= 1
            st.active[i] = st.active[st.ctr[N_ACTIVE]]
            st.free_slots[st.ctr[N_FREE_SLOTS]] = slot
            st.ctr[N_FREE_SLOTS] += 1
            st.ctr[EPOCH] += 1
        else:
            i += 1


@njit(cache=True, nogil=True)
def compact_queue(st):
    """Drop jobs that started from the queue, keeping priority order."""
    n = 0
    for i in range(st.ctr[QLEN]):
        j = st.queue[i]
        if st.waiting[j]:
            st.queue[n] = j
            n += 1
    st.ctr[QLEN] = n


@njit(cache=True, nogil=True)
def active_by_estimated_end(st):
    """Running slots ordered by estimated end, ties by job (submit order)."""
    n = st.ctr[N_ACTIVE]
    keys = np.empty(n)
    jobs = np.empty(n, dtype=np.int64)
    for i in range(n):
        keys[i] = st.slot_est_end[st.active[i]]
        jobs[i] = st.slot_job[st.active[i]]
    order = np.argsort(jobs, kind="mergesort")
    order = order[np.argsort(keys[order], kind="mergesort")]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = st.active[order[i]]
    return out
