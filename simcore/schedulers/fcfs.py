"""First come, first served: start jobs from the head of the queue until one does not fit.

On a partitioned machine the head job goes where Krevat's heuristic puts it and is grown by
the minimum needed when no partition of its size is free but a larger one is (growth is
unbounded in this phase, as the thesis says); where only counts matter any free units will
do.
"""

from __future__ import annotations

from simcore.base.jit import kernel
from simcore.core.allocate import place
from simcore.core.state import EPOCH, FAIL_FCFS, FREE_UNITS, QLEN, start_job


@kernel
def fcfs_pass(m, st, jobs, delay, t):
    """Start queued jobs in order; return the queue position of the blocked head (or QLEN)."""
    ctr, queue, waiting, fail_epoch = st.ctr, st.queue.jobs, st.queue.waiting, st.memo.fail_epoch
    size, placement_class = jobs.size, jobs.placement_class
    occ, mask, nothing = st.run.occ, st.scratch.mask, st.scratch.nothing
    for i in range(ctr[QLEN]):
        j = queue[i]
        if not waiting[j]:
            continue
        if size[j] > ctr[FREE_UNITS]:
            return i
        cls = placement_class[j]
        if not m.counts_only and fail_epoch[cls, FAIL_FCFS] == ctr[EPOCH]:
            return i
        alloc = place(m, st, j, size[j], occ, m.units, nothing, mask)
        if alloc < 0:
            fail_epoch[cls, FAIL_FCFS] = ctr[EPOCH]
            return i
        start_job(st, jobs, delay, j, t, alloc, mask)
    return ctr[QLEN]
