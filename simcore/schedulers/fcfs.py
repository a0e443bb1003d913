"""First come, first served: start jobs from the head of the queue until one does not fit.

On a partitioned machine the head job goes where Krevat's heuristic puts it and is grown by
the minimum needed when no partition of its size is free but a larger one is (growth is
unbounded in this phase, as the thesis says); on a flat machine any free units will do.
"""

from __future__ import annotations

from simcore.jit import kernel
from simcore.machines.allocate import FLAT, place, refresh
from simcore.state import EPOCH, FAIL_FCFS, FREE_UNITS, QLEN, start_job


@kernel
def fcfs_pass(m, st, jobs, delay, t):
    """Start queued jobs in order; return the queue position of the blocked head (or QLEN)."""
    ctr, queue, waiting, fail_epoch = st.ctr, st.queue, st.waiting, st.fail_epoch
    size, placement_class = jobs.size, jobs.placement_class
    for i in range(ctr[QLEN]):
        j = queue[i]
        if not waiting[j]:
            continue
        if m.kind == FLAT:
            if size[j] > ctr[FREE_UNITS]:
                return i
            start_job(st, jobs, delay, j, t, size[j], st.mask)
            continue
        cls = placement_class[j]
        if size[j] > ctr[FREE_UNITS] or fail_epoch[cls, FAIL_FCFS] == ctr[EPOCH]:
            return i
        n_free = refresh(m, st, st.occ)
        alloc = place(m, st, jobs, j, st.occ, n_free, m.units, st.reserved, False, st.mask)
        if alloc < 0:
            fail_epoch[cls, FAIL_FCFS] = ctr[EPOCH]
            return i
        start_job(st, jobs, delay, j, t, alloc, st.mask)
    return ctr[QLEN]
