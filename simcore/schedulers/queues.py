"""Chu's queue disciplines (thesis chapters 5 and 6): Immediate Fit, Scan All, Multiple
Queues and the job-ordered queues Smallest-, Largest-, Shortest- and
Smallest-Service-Demand-Job-First, each with or without Scan All.

Waiting jobs are kept in the discipline's order: arrival (IF, SA); queue 1..Q, then arrival
(MQ); or a key, then arrival (processors requested: SmallestJF ascending, LargestJF
descending; estimated run time: SJF; estimated run time x processors: SmallestSDJF).

A job "has exceeded the waiting-time limit" when it has waited WTL or longer [Inf: so that
WTL = 0 is exactly FCFS, as the thesis says]; no limit (null) is WTL = infinity. At time t,
after the engine's completions and arrivals:

1. if jobs completed: a pass over the jobs waiting before t, in order, starting each that
   fits. Blocking disciplines (IF; the plain job-ordered queues; MQ with
   `blocking`, Krueger's original Scan) stop at the first that does not fit. Scan All
   (SA, MQ, the SA forms) goes on past it, unless it has exceeded the WTL: then the pass
   stops there (Figs. 5.2, 6.1);
2. each arrival in turn: IF, SA and MQ start it at once if it fits, unless some waiting job
   has exceeded the WTL (in FCFS order that is the head; in MQ the head of some queue,
   which is the same condition) [Inf for the job-ordered SA forms: the same rule]; the
   plain job-ordered queues add it and run the blocking pass again (a new first job may
   fit; nothing else can).

MQ puts a job of x processors in queue ceil(x Q / N) (ScanUp) or Q - ceil(x Q / N) + 1
(ScanDown) [Inf: the thesis's formula is lost in the OCR; this one puts its 32-queue
example's sizes where it says]; the side criteria use the job's larger (smaller) side and
the mesh's larger (smaller) side instead of x and N. Every pass starts at queue 1 and
visits the queues in turn, skipping empty ones [Inf]. MQ with Q = 1 is SA, and SA or IF
with WTL = 0 is FCFS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, get_args

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import extents, place
from simcore.core.decide import decide
from simcore.core.state import (
    DECISIONS,
    EPOCH,
    FAIL_FCFS,
    FREE_UNITS,
    N_ACTIVE,
    QLEN,
    STARTS,
    compact_queue,
    keep_waiting,
    start_job,
)

if TYPE_CHECKING:
    from simcore.schedulers.contract import Policy

#: The orders of waiting jobs a discipline keeps (see the module docstring).
Order = Literal["arrival", "queues", "smallest", "largest", "shortest", "demand"]
ARRIVAL, QUEUES, SMALLEST, LARGEST, SHORTEST, DEMAND = range(len(get_args(Order)))
PROCESSORS, LARGER_SIDE, SMALLER_SIDE = range(3)
CRITERIA = {"processors": PROCESSORS, "larger-side": LARGER_SIDE, "smaller-side": SMALLER_SIDE}
LISTED, SEEN, ACTIVE = range(3)


class QueuePolicy(NamedTuple):
    start_delay: float
    order_by: int
    scan_all: bool
    immediate: bool
    wtl: float  # inf: no limit
    queues: int
    scan_down: bool
    criterion: int
    key: np.ndarray  # (jobs,) float64: each job's place in the order, before its arrival
    order: np.ndarray  # (jobs,) int64: waiting jobs in the discipline's order
    count: np.ndarray  # (3,) int64: LISTED jobs, SEEN arrivals, ACTIVE jobs after the last call


def kernel_policy(policy: Policy, n_jobs: int, *, order: Order, scan_all: bool,
                  immediate: bool) -> QueuePolicy:
    """The struct of a queue discipline: its order of waiting jobs, whether it is a Scan
    All discipline and whether arrivals start at once, and its parameters."""
    values = policy.params()
    order_by = get_args(Order).index(order)
    if order_by == QUEUES:
        scan_all = not values["blocking"]
    elif values.get("scan_all", False):
        scan_all = immediate = True
    wtl = values.get("wtl")
    return QueuePolicy(
        values["start_delay_s"], order_by, scan_all, immediate,
        np.inf if wtl is None else wtl, values.get("queues", 1),
        values.get("scan", "down") == "down", CRITERIA[values.get("criterion", "processors")],
        np.zeros(n_jobs), np.zeros(n_jobs, dtype=np.int64), np.zeros(3, dtype=np.int64))


@implements(decide, QueuePolicy)
@kernel
def decide_queues(policy, m, st, jobs, t):
    """Completions, then arrivals (see the module docstring)."""
    ctr, count = st.ctr, policy.count
    ctr[DECISIONS] += 1
    starts = ctr[STARTS]
    if ctr[N_ACTIVE] < count[ACTIVE] and count[LISTED] > 0:
        run_pass(policy, m, st, jobs, t)
    arrived = False
    n = jobs.submit.shape[0]
    while count[SEEN] < n and jobs.submit[count[SEEN]] <= t:
        j = count[SEEN]
        count[SEEN] += 1
        arrived = True
        policy.key[j] = order_key(policy, m, jobs, j)
        if policy.immediate and not limit_reached(policy, st, jobs, j, t) and \
                try_start(policy, m, st, jobs, j, t):
            continue
        insert(policy, j)
    if arrived and not policy.immediate:
        run_pass(policy, m, st, jobs, t)
    count[ACTIVE] = ctr[N_ACTIVE]
    if ctr[STARTS] != starts:
        compact_queue(st)
        count[LISTED] = keep_waiting(policy.order, count[LISTED], st.queue.waiting, 0)[0]


@kernel
def order_key(policy, m, jobs, j):
    """Job j's place in the discipline's order (ties: arrival)."""
    kind, request = policy.order_by, jobs.request[j]
    if kind == SMALLEST:
        return float(request)
    if kind == LARGEST:
        return -float(request)
    if kind == SHORTEST:
        return jobs.estimate[j]
    if kind == DEMAND:
        return jobs.estimate[j] * request
    if kind == ARRIVAL:
        return 0.0
    x, total = request, m.units
    if policy.criterion != PROCESSORS:
        w, h, width, height = extents(m, j, request)
        if policy.criterion == LARGER_SIDE:
            x, total = max(w, h), max(width, height)
        else:
            x, total = min(w, h), min(width, height)
    queues = policy.queues
    index = min(max((x * queues + total - 1) // total, 1), queues)
    return float(queues - index + 1 if policy.scan_down else index)


@kernel
def insert(policy, j):
    """Add job j to the waiting jobs, after every job of a key <= its key."""
    order, key, count = policy.order, policy.key, policy.count
    k = count[LISTED]
    while k > 0 and key[order[k - 1]] > key[j]:
        order[k] = order[k - 1]
        k -= 1
    order[k] = j
    count[LISTED] += 1


@kernel
def limit_reached(policy, st, jobs, j, t):
    """Whether a job waiting before arrival j (the oldest is enough) has exceeded the WTL."""
    queue, waiting = st.queue.jobs, st.queue.waiting
    for i in range(st.ctr[QLEN]):
        k = queue[i]
        if k != j and waiting[k]:
            return t - jobs.submit[k] >= policy.wtl
    return False


@kernel
def try_start(policy, m, st, jobs, j, t):
    """Start job j now if it fits; whether it did."""
    ctr, fail_epoch = st.ctr, st.memo.fail_epoch
    if jobs.size[j] > ctr[FREE_UNITS]:
        return False
    cls = jobs.placement_class[j]
    if fail_epoch[cls, FAIL_FCFS] == ctr[EPOCH]:
        return False  # a job of its class did not fit this very occupancy
    mask = st.scratch.mask
    alloc = place(m, st, j, jobs.size[j], st.run.occ, 0, st.scratch.nothing, mask)
    if alloc < 0:
        fail_epoch[cls, FAIL_FCFS] = ctr[EPOCH]
        return False
    start_job(st, jobs, policy.start_delay, j, t, alloc, mask)
    return True


@kernel
def run_pass(policy, m, st, jobs, t):
    """Start waiting jobs in order; stop at a misfit when blocking, or at a misfit that has
    exceeded the WTL."""
    order = policy.order
    for i in range(policy.count[LISTED]):
        j = order[i]
        if not st.queue.waiting[j] or try_start(policy, m, st, jobs, j, t):
            continue
        if not policy.scan_all or t - jobs.submit[j] >= policy.wtl:
            return
