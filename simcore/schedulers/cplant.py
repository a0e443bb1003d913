"""Cplant's queue order (Leung et al. 2002): smallest jobs first.

The waiting jobs are kept sorted by requested processors, then requested time (the
scheduler's estimate), then arrival. The phased schedulers `cplant` (start jobs from the
front while they fit) and `cplant-backfill` (then backfill behind a blocked front job)
sort the queue this way before each decision (`simcore.schedulers.phased`). The paper's
scheduler polls periodically; here it decides at every arrival and completion, as the
other schedulers do.

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
def _before(jobs, a, b):
    """Whether job a precedes job b: fewer units, then less requested time, then earlier
    arrival (job indices are in arrival order)."""
    if jobs.size[a] != jobs.size[b]:
        return jobs.size[a] < jobs.size[b]
    if jobs.estimate[a] != jobs.estimate[b]:
        return jobs.estimate[a] < jobs.estimate[b]
    return a < b


@kernel
def sort_queue(st, jobs):
    """Insertion sort of the queue, which is sorted but for the arrivals appended since the
    last decision. If any job moved, the last backfill pass's memo (which assumes arrivals
    only append) is dropped."""
    queue = st.queue.jobs
    moved = False
    for i in range(1, st.ctr[QLEN]):
        j = queue[i]
        k = i
        while k > 0 and _before(jobs, j, queue[k - 1]):
            queue[k] = queue[k - 1]
            k -= 1
        if k != i:
            queue[k] = j
            moved = True
    if moved:
        st.memo.last_pass[PASS_EPOCH] = -1
