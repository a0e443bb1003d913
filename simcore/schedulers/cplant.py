"""Queue orders other than arrival: Cplant's (Leung et al. 2002), smallest jobs first, and
priority order, by each job's rank (`simcore.jobs.jobs.Jobs.rank`).

The waiting jobs are kept sorted by requested processors, then requested time (the
scheduler's estimate), then arrival. The phased schedulers `cplant` (start jobs from the
front while they fit) and `cplant-backfill` (then backfill behind a blocked front job)
sort the queue this way before each decision (`simcore.schedulers.phased`). The paper's
scheduler polls periodically; here it decides at every arrival and completion, as the
other schedulers do.

In priority order (`priority-backfill`) the waiting jobs are kept sorted by rank, their
submit time less their priority head start, then arrival: a job of a favoured queue is
ranked as if it had waited that much longer, as a priority that grows with the wait (the
same rate for every job) plus a static boost ranks it. With no head starts this is
arrival order.

Wherever placement depends on sizes only, the two are the same schedule: every job behind
a blocked front job needs at least as many units. Where only counts matter none of them
fits either; on box machines the front job, which FCFS grows into any larger free box,
would have taken a box they fit. Backfilling can matter where placement depends on more
than the size (wired machines' shapes and links).
"""

from __future__ import annotations

from simcore.base.jit import kernel
from simcore.core.state import PASS_EPOCH, QLEN


@kernel
def _before(jobs, a, b, by_rank):
    """Whether job a precedes job b: by rank (`by_rank`), else by fewer units, then less
    requested time; then earlier arrival (job indices are in arrival order)."""
    if by_rank:
        return jobs.rank[a] < jobs.rank[b] or (jobs.rank[a] == jobs.rank[b] and a < b)
    if jobs.size[a] != jobs.size[b]:
        return jobs.size[a] < jobs.size[b]
    if jobs.estimate[a] != jobs.estimate[b]:
        return jobs.estimate[a] < jobs.estimate[b]
    return a < b


@kernel
def sort_queue(st, jobs, by_rank):
    """Insertion sort of the queue (in priority order `by_rank`, else Cplant's), which is
    sorted but for the arrivals appended since the last decision. If any job moved, the
    last backfill pass's memo (which assumes arrivals only append) is dropped."""
    queue = st.queue.jobs
    moved = False
    for i in range(1, st.ctr[QLEN]):
        j = queue[i]
        k = i
        while k > 0 and _before(jobs, j, queue[k - 1], by_rank):
            queue[k] = queue[k - 1]
            k -= 1
        if k != i:
            queue[k] = j
            moved = True
    if moved:
        st.memo.last_pass[PASS_EPOCH] = -1
