"""Simulation state shared by the event loop and the schedulers, as flat arrays.

Everything a run changes lives in one `State` of preallocated numpy arrays (numba reads a
namedtuple of arrays as a struct), grouped by lifetime:

- `run`: what is running where. A running job occupies a slot: its resources (a bitset
  over units, and on wired machines cables), its end times and its allocated units;
- `queue`: the waiting jobs in priority order;
- `out`: per-job results and the placement log, read back after the run;
- `scratch`: buffers a single decision uses and leaves behind;
- `memo`: verdicts that hold until the occupancy changes (failed placements per job
  class, the last backfill pass that started nothing);
- `outages`: the machine's failure process (`simcore.core.failures`): when failure domains go
  out of service and come back, and which units are out now (none on a machine without
  failures).

Scalar counters sit in `ctr` (int64) and `acc` (float64) at the indices named below.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.base.bitset import popcount64
from simcore.base.jit import kernel

# ctr indices. The first SHARED_CTR (and acc's first SHARED_ACC) are every engine's:
# `simcore.timeshare.state` numbers its own after them, so that the queue's kernels below
# serve both states.
QLEN = 0  # entries in queue.jobs (some may have started during the current decision)
QUEUED_UNITS = 1  # requested units of waiting jobs: q(t) of Krevat eq. 4.2
EPOCH = 2  # bumped whenever occupancy changes; invalidates the memo's verdicts
DECISIONS = 3  # scheduler invocations
STATUS = 4  # 0 ok, STATUS_STUCK: jobs wait on an idle machine with no arrivals left
SHARED_CTR = 5
N_ACTIVE = 5  # running jobs
N_FREE_SLOTS = 6
FREE_UNITS = 7  # units not held by any running job
MIGRATIONS_ATTEMPTED = 8
MIGRATIONS_SUCCESSFUL = 9
BLOCKED_NO_BOX = 10  # decisions whose head job found no free partition of units
BLOCKED_LINKS = 11  # decisions whose head job found free units but no free links
LOG_LEN = 12  # entries in the placement log
STARTS = 13  # jobs started so far
ARRIVED = 14  # jobs enqueued so far (the event loop's position, so that it can resume)
DOWN_UNITS = 15  # units out of service (failed, not yet repaired)
FAILURES = 16  # failure events applied
ABORTED = 17  # runs cut short by a failure (the job requeued or killed)
OUTAGE_POS = 18  # outage events applied so far (the loop's position in outages.time)
OUTAGE_HORIZON = 19  # 1: stopped at the end of the drawn outages; the caller draws more
LOG_CODE_LEN = 20  # int64 words of the placement log's codes
MIGRATION_EPOCH = 21  # epoch of the last migration attempt (-1: none)
DRAIN_OWED = 22  # units of draining domains still held by running jobs (on_failure: drain)
N_CTR = 23

# acc indices
UNUSED_AREA = 0  # integral of max(0, f(t) - q(t)) dt, unit-seconds
SHARED_ACC = 1
T_PREV = 1  # time of the last event processed (the loop's clock, so that it can resume)
FAILED_AREA = 2  # integral of units out of service dt, unit-seconds
ABORTED_WORK = 3  # requested units x seconds run by runs a failure cut short
NOW = 4  # the time of the current event (allocators that weigh completion times read it)
PASS_SHADOW = 5  # shadow time of the last backfill pass that started nothing (memo.last_pass)
N_ACC = 6

STATUS_STUCK = 1

# out.log_entry's columns (one array, not two: each kernel call is passed every array of
# the state, and the per-event kernels measurably slow down with each one added)
LOG_JOB = 0
LOG_AT = 1

# memo.fail_epoch columns: a placement failure holds until the occupancy changes
FAIL_BACKFILL = 0
FAIL_GUARDED = 1
FAIL_FCFS = 2
# memo.last_pass entries: the last backfill pass that started nothing
PASS_EPOCH = 0  # its epoch (-1: none)
PASS_HEAD = 1  # its head job
PASS_SCANNED = 2  # queue entries it examined
PASS_EXTRA = 3  # its extra nodes (flat EASY)


class Running(NamedTuple):
    occ: np.ndarray  # (words,) uint64: resources in use
    held: np.ndarray  # (slots, words) uint64: resources of the job in each slot
    slot_job: np.ndarray  # (slots,) int64
    slot_end: np.ndarray  # (slots,) float64, actual end
    slot_est_end: np.ndarray  # (slots,) float64, end by the scheduler's estimate
    slot_alloc: np.ndarray  # (slots,) int64, units allocated
    active: np.ndarray  # (slots,) int64: slots in use, first ctr[N_ACTIVE]
    free_slots: np.ndarray  # (slots,) int64: stack of unused slots


class Queue(NamedTuple):
    jobs: np.ndarray  # (jobs,) int64: waiting jobs in priority order, first ctr[QLEN]
    waiting: np.ndarray  # (jobs,) bool


class Outputs(NamedTuple):
    sched_s: np.ndarray  # (jobs,) float64: when the job was allocated
    start_s: np.ndarray  # (jobs,) float64: sched_s + start delay
    end_s: np.ndarray  # (jobs,) float64
    alloc: np.ndarray  # (jobs,) int64: units allocated (after rounding and growth)
    reserved_s: np.ndarray  # (jobs,) float64: first reservation time the job got as head
    migration_s: np.ndarray  # (cap,) float64: times of successful migrations
    log_s: np.ndarray  # (cap,) float64: placement log (`log_placement`): when,
    log_entry: np.ndarray  # (cap + 1, 2) int64: which job (LOG_JOB) and where in log_code
    # its resources' code begins (LOG_AT; row cap + 1: where the last code ends)
    log_code: np.ndarray  # (room,) int64: the codes, one after another
    hit: np.ndarray  # (jobs,) int64: runs of the job a failure cut short
    killed: np.ndarray  # (jobs,) bool: the job was killed by a failure (it never completed)


class Scratch(NamedTuple):
    tmp: np.ndarray  # (words,) uint64: an occupancy being worked out
    mask: np.ndarray  # (words,) uint64: a placement
    reserved: np.ndarray  # (words,) uint64: the head job's reserved partition
    moved: np.ndarray  # (slots, words) uint64: placements during a migration
    order: np.ndarray  # (slots,) int64: running slots in some order
    stays: np.ndarray  # (slots,) bool: jobs a migration leaves in place
    nothing: np.ndarray  # (0,) uint64: the empty bitset, "no resources forbidden"


class Memo(NamedTuple):
    fail_epoch: np.ndarray  # (classes, 3) int64: epoch of a class's last failed placement,
    # by rule: FAIL_BACKFILL (bounded growth), FAIL_GUARDED (+ reservation), FAIL_FCFS
    last_pass: np.ndarray  # (4,) int64: PASS_EPOCH, PASS_HEAD, PASS_SCANNED, PASS_EXTRA
    # (its shadow time is acc[PASS_SHADOW])


class Outages(NamedTuple):
    """Failure and repair events in time order, and the failure domains they name (see
    `simcore.core.failures`). An event of domain -1 ends the events drawn so far."""

    time: np.ndarray  # (events,) float64
    domain: np.ndarray  # (events,) int64
    repair: np.ndarray  # (events,) bool: the domain comes back (else it fails)
    draw: np.ndarray  # (events,) float64 in [0, 1): which unit a failure hits where units
    # have no bits (flat machines)
    masks: np.ndarray  # (domains, words) uint64: each domain's resources
    units: np.ndarray  # (domains,) int64: each domain's units
    down: np.ndarray  # (words,) uint64: resources out of service now
    requeue: bool  # a job a failure hits goes back to the queue (else it is killed)
    drain: bool  # a failure hits no job: its units go out of service as they come free
    owed: np.ndarray  # (domains,) bool: a draining domain whose units a job still holds


def no_outages(words: int) -> Outages:
    """The outages of a machine that never fails."""
    return Outages(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_),
                   np.zeros(0), np.zeros((0, words), dtype=np.uint64),
                   np.zeros(0, dtype=np.int64), np.zeros(words, dtype=np.uint64), True,
                   False, np.zeros(0, dtype=np.bool_))


class State(NamedTuple):
    run: Running
    queue: Queue
    out: Outputs
    scratch: Scratch
    memo: Memo
    outages: Outages
    ctr: np.ndarray  # (N_CTR,) int64
    acc: np.ndarray  # (N_ACC,) float64


def new_state(n_jobs: int, units: int, words: int, classes: int,
              log_capacity: int = 0, log_room: int = 0,
              outages: Outages | None = None) -> State:
    """Fresh state for an idle machine of `units` units and `n_jobs` jobs.

    A running job holds a slot; no more jobs than units or than jobs can run at once.
    The placement log has room for `log_capacity` entries and `log_room` words of codes
    (`grown_log` makes more). `outages`: the machine's failure process (default: none).
    """
    slots = max(1, min(units, n_jobs))
    ctr = np.zeros(N_CTR, dtype=np.int64)
    ctr[N_FREE_SLOTS] = slots
    ctr[FREE_UNITS] = units
    ctr[MIGRATION_EPOCH] = -1
    return State(
        run=Running(
            occ=np.zeros(words, dtype=np.uint64),
            held=np.zeros((slots, words), dtype=np.uint64),
            slot_job=np.full(slots, -1, dtype=np.int64),
            slot_end=np.zeros(slots),
            slot_est_end=np.zeros(slots),
            slot_alloc=np.zeros(slots, dtype=np.int64),
            active=np.zeros(slots, dtype=np.int64),
            free_slots=np.arange(slots - 1, -1, -1, dtype=np.int64),
        ),
        queue=Queue(jobs=np.zeros(n_jobs, dtype=np.int64), waiting=np.zeros(n_jobs, dtype=bool)),
        out=Outputs(
            sched_s=np.full(n_jobs, np.nan),
            start_s=np.full(n_jobs, np.nan),
            end_s=np.full(n_jobs, np.nan),
            alloc=np.zeros(n_jobs, dtype=np.int64),
            reserved_s=np.full(n_jobs, np.nan),
            migration_s=np.zeros(2 * n_jobs + 1),
            log_s=np.zeros(log_capacity),
            log_entry=np.zeros((log_capacity + 1, 2), dtype=np.int64),
            log_code=np.zeros(log_room, dtype=np.int64),
            hit=np.zeros(n_jobs, dtype=np.int64),
            killed=np.zeros(n_jobs, dtype=np.bool_),
        ),
        scratch=Scratch(
            tmp=np.zeros(words, dtype=np.uint64),
            mask=np.zeros(words, dtype=np.uint64),
            reserved=np.zeros(words, dtype=np.uint64),
            moved=np.zeros((slots, words), dtype=np.uint64),
            order=np.zeros(slots, dtype=np.int64),
            stays=np.zeros(slots, dtype=np.bool_),
            nothing=np.zeros(0, dtype=np.uint64),
        ),
        memo=Memo(
            fail_epoch=np.full((max(classes, 1), 3), -1, dtype=np.int64),
            last_pass=np.array([-1, -1, 0, 0], dtype=np.int64),
        ),
        outages=no_outages(words) if outages is None else outages,
        ctr=ctr,
        acc=np.array([0.0, np.nan, 0.0, 0.0, np.nan, 0.0]),
    )


@kernel
def start_job(st, jobs, delay, j, t, alloc, mask):
    """Allocate `mask` (and `alloc` units) to waiting job j at time t; it runs after `delay`."""
    ctr, run, out = st.ctr, st.run, st.out
    occ, held = run.occ, run.held
    ctr[N_FREE_SLOTS] -= 1
    slot = run.free_slots[ctr[N_FREE_SLOTS]]
    for w in range(occ.shape[0]):
        held[slot, w] = mask[w]
        occ[w] |= mask[w]
    start = t + delay
    end = start + jobs.run[j]
    run.slot_job[slot] = j
    run.slot_end[slot] = end
    run.slot_est_end[slot] = start + jobs.estimate[j]
    run.slot_alloc[slot] = alloc
    run.active[ctr[N_ACTIVE]] = slot
    ctr[N_ACTIVE] += 1
    out.sched_s[j] = t
    out.start_s[j] = start
    out.end_s[j] = end
    out.alloc[j] = alloc
    st.queue.waiting[j] = False
    ctr[FREE_UNITS] -= alloc
    ctr[QUEUED_UNITS] -= jobs.request[j]
    ctr[EPOCH] += 1
    ctr[STARTS] += 1
    log_placement(st, t, j, mask)


@kernel
def log_placement(st, t, j, mask):
    """Append to the placement log that job j holds the resources of `mask` from time t
    on (`encode_resources`). A full log keeps counting the entries, and the most code
    words each could take, so that its caller can run again with room (`log_short`)."""
    out, ctr = st.out, st.ctr
    n, at = ctr[LOG_LEN], ctr[LOG_CODE_LEN]
    length = 1 + mask.shape[0]
    if n < out.log_s.shape[0] and at + length <= out.log_code.shape[0]:
        length = encode_resources(mask, out.log_code, at)
        out.log_s[n] = t
        out.log_entry[n, LOG_JOB] = j
        out.log_entry[n + 1, LOG_AT] = at + length  # row n's is `at` already
    ctr[LOG_LEN] = n + 1
    ctr[LOG_CODE_LEN] = at + length


@kernel
def encode_resources(mask, code, at):
    """Write the code of bitset `mask` to code[at:] (room for 1 + its words) and return
    its length: the number r of runs of set bits then each run's first bit and length
    (1 + 2r words), or, where that would be longer than the bitset, minus its number of
    words then its words (so that a code reads back without the machine at hand). A box,
    a rectangle, a stretch of a curve or a cube is a few runs."""
    words = mask.shape[0]
    runs = 0
    first = -1  # the first bit of the run open, if any
    previous = np.uint64(0)
    for w in range(words):
        word = mask[w]
        if word == 0 and first < 0:
            previous = word
            continue
        following = mask[w + 1] if w + 1 < words else np.uint64(0)
        # a run starts at each set bit whose lower neighbour is clear, ends likewise
        starts = word & ~((word << np.uint64(1)) | (previous >> np.uint64(63)))
        ends = word & ~((word >> np.uint64(1)) | (following << np.uint64(63)))
        previous = word
        while starts | ends:  # within a word runs open and close in turn
            if first < 0:
                low = starts & (~starts + np.uint64(1))
                first = 64 * w + popcount64(low - np.uint64(1))
                starts ^= low
                continue
            if 2 * (runs + 1) > words:  # the bitset is shorter
                code[at] = -words
                for v in range(words):
                    code[at + 1 + v] = np.int64(mask[v])
                return 1 + words
            low = ends & (~ends + np.uint64(1))
            code[at + 1 + 2 * runs] = first
            code[at + 2 + 2 * runs] = 64 * w + popcount64(low - np.uint64(1)) + 1 - first
            runs += 1
            ends ^= low
            first = -1
    code[at] = runs
    return 1 + 2 * runs


@kernel
def decode_resources(code, at, mask):
    """The bitset whose code starts at code[at] (`encode_resources`), into `mask`."""
    words = mask.shape[0]
    if code[at] < 0:
        for w in range(words):
            mask[w] = np.uint64(code[at + 1 + w])
        return
    for w in range(words):
        mask[w] = 0
    for r in range(code[at]):
        first, length = code[at + 1 + 2 * r], code[at + 2 + 2 * r]
        for bit in range(first, first + length):
            mask[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)


@kernel
def decode_bits(code, at, n, out):
    """The set bits below n of the bitset whose code starts at code[at], ascending, into
    `out`; returns how many."""
    got = 0
    if code[at] < 0:
        for w in range(-code[at]):
            word = np.uint64(code[at + 1 + w])
            while word:
                low = word & (~word + np.uint64(1))
                bit = 64 * w + popcount64(low - np.uint64(1))
                word ^= low
                if bit < n:
                    out[got] = bit
                    got += 1
        return got
    for r in range(code[at]):
        first, length = code[at + 1 + 2 * r], code[at + 2 + 2 * r]
        for bit in range(first, min(first + length, n)):
            out[got] = bit
            got += 1
    return got


def log_short(st: State) -> bool:
    """Whether the placement log lacked room for some entry (the run must be simulated
    again with more room)."""
    return bool(st.ctr[LOG_LEN] > st.out.log_s.shape[0]
                or st.ctr[LOG_CODE_LEN] > st.out.log_code.shape[0])


def log_half_full(st: State) -> bool:
    """Whether half the placement log's entries or code words are used."""
    return bool(2 * st.ctr[LOG_LEN] > st.out.log_s.shape[0]
                or 2 * st.ctr[LOG_CODE_LEN] > st.out.log_code.shape[0])


def log_size(capacity: int, room: int) -> int:
    """Bytes of a placement log with room for `capacity` entries and `room` code words."""
    return capacity * 24 + room * 8


def grown_log(st: State, capacity: int, room: int) -> State:
    """`st` with a placement log of room for `capacity` entries and `room` code words,
    keeping what it holds."""
    assert not log_short(st), "a log that lacked room is made again, not grown"
    out = st.out
    n, used = int(st.ctr[LOG_LEN]), int(st.ctr[LOG_CODE_LEN])
    log_s, log_code = np.zeros(capacity), np.zeros(room, dtype=np.int64)
    log_entry = np.zeros((capacity + 1, 2), dtype=np.int64)
    log_s[:n], log_entry[:n + 1] = out.log_s[:n], out.log_entry[:n + 1]
    log_code[:used] = out.log_code[:used]
    return st._replace(out=out._replace(log_s=log_s, log_entry=log_entry,
                                        log_code=log_code))


@kernel
def finish_jobs(st, t):
    """Release every running job whose end time is t."""
    active, slot_end = st.run.active, st.run.slot_end
    i = 0
    while i < st.ctr[N_ACTIVE]:
        if slot_end[active[i]] == t:
            release(st, i)
        else:
            i += 1


@kernel
def release(st, i):
    """Free the resources, units and slot of the run in the i-th active slot (the last
    active slot moves to i)."""
    ctr, run = st.ctr, st.run
    occ, held = run.occ, run.held
    slot = run.active[i]
    for w in range(occ.shape[0]):
        occ[w] &= ~held[slot, w]
    ctr[FREE_UNITS] += run.slot_alloc[slot]
    run.slot_job[slot] = -1
    ctr[N_ACTIVE] -= 1
    run.active[i] = run.active[ctr[N_ACTIVE]]
    run.free_slots[ctr[N_FREE_SLOTS]] = slot
    ctr[N_FREE_SLOTS] += 1
    ctr[EPOCH] += 1


@kernel
def enqueue(st, j, units):
    """Queue job j, requesting `units`, ahead of the jobs that arrived after it at the
    queue's end: an arriving job goes last; a requeued one, in a queue in arrival order,
    back to its place. Serves every engine's state."""
    ctr, queue = st.ctr, st.queue.jobs
    k = ctr[QLEN]
    while k > 0 and queue[k - 1] > j:
        queue[k] = queue[k - 1]
        k -= 1
    queue[k] = j
    ctr[QLEN] += 1
    st.queue.waiting[j] = True
    ctr[QUEUED_UNITS] += units


@kernel
def keep_waiting(order, n, waiting, mark):
    """Drop the jobs no longer waiting from order[:n], the others keeping their order;
    return how many are left, and how many of those stood before position `mark`."""
    kept = 0
    before = 0
    for i in range(n):
        j = order[i]
        if waiting[j]:
            order[kept] = j
            kept += 1
            if i < mark:
                before = kept
    return kept, before


@kernel
def compact_queue(st):
    """Drop jobs that started from the queue, keeping priority order (and keeping the
    prefix the last backfill pass examined marked as examined)."""
    ctr, last_pass = st.ctr, st.memo.last_pass
    ctr[QLEN], last_pass[PASS_SCANNED] = keep_waiting(
        st.queue.jobs, ctr[QLEN], st.queue.waiting, last_pass[PASS_SCANNED])


@kernel
def active_by_estimated_end(st):
    """Order running slots by estimated end, ties by job (submit order), into
    st.scratch.order; return how many there are."""
    return _sorted_active(st, st.run.slot_est_end, 1.0)


@kernel
def active_by_size(st):
    """Order running slots by allocated units, largest first, ties by job, into
    st.scratch.order; return how many there are."""
    return _sorted_active(st, st.run.slot_alloc, -1.0)


@kernel
def _sorted_active(st, key, sign):
    """Insertion sort of the running slots by sign * key[slot], then job: running sets are
    small and often nearly sorted, and nothing is allocated."""
    order, slot_job, active = st.scratch.order, st.run.slot_job, st.run.active
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
