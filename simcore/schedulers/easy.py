"""EASY backfilling (Mu'alem and Feitelson 2001), on machines where only counts matter.

The head job's shadow time is the first estimated end of running jobs at which enough
units are free for it; the extra units are those free then beyond the head's size. A
later job that fits now starts if it ends (by its estimate) by the shadow time, or else if
it needs no more than the extra units, which it then takes.
"""

from __future__ import annotations

from simcore.base.jit import kernel
from simcore.core.allocate import place
from simcore.core.state import EPOCH, FREE_UNITS, QLEN, start_job
from simcore.schedulers.backfill import end_pass, resume_pass


@kernel
def easy_pass(m, st, jobs, delay, reservation, t, head_pos):
    """Start queued jobs after the blocked head that do not delay its shadow time."""
    ctr, queue, waiting = st.ctr, st.queue.jobs, st.queue.waiting
    head, epoch = queue[head_pos], ctr[EPOCH]
    begin, shadow, extra = resume_pass(m, st, jobs, head_pos, reservation)
    for i in range(begin, ctr[QLEN]):
        if ctr[FREE_UNITS] == 0:
            break
        j = queue[i]
        size = jobs.size[j]
        if not waiting[j] or size > ctr[FREE_UNITS]:
            continue
        if reservation and t + delay + jobs.estimate[j] > shadow:  # runs past the shadow
            if size > extra:
                continue
            extra -= size  # on the extra units
        units = place(m, st, j, size, st.run.occ, 0, st.scratch.nothing, st.scratch.mask)
        start_job(st, jobs, delay, j, t, units, st.scratch.mask)
    end_pass(st, epoch, head, shadow, extra)
