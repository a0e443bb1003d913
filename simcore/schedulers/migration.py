"""Migration (Krevat 2003): re-place running jobs to enlarge the largest free partition.

Attempted when the head job is blocked, some unit is free, the free fraction of the
machine FN_tor >= `fn_tor` and the fraction of free units inside the largest free
partition FN_max <= `fn_max` ("always migrate": fn_tor=0, fn_max=1). Running jobs are
re-placed largest first (ties: submit order) on an empty torus with the FCFS heuristic at
their allocated size, without growth; a job that cannot be re-placed stays where it is and
the reassignment of the others restarts around it. The old layout is kept if the largest
free partition would shrink. A migration is successful if it grew.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simcore.machines.allocate import largest_listed, refresh
from simcore.machines.boxes import best_box
from simcore.state import (
    EPOCH,
    FREE_UNITS,
    MIGRATIONS_ATTEMPTED,
    MIGRATIONS_SUCCESSFUL,
    N_ACTIVE,
    log_placement,
)


@njit(cache=True, nogil=True)
def migrate(m, st, fn_tor, fn_max, t):
    """Try a migration at time t; return whether the layout changed."""
    free = st.ctr[FREE_UNITS]
    if free == 0:
        return False
    before = largest_listed(m, st, refresh(m, st, st.occ))
    if free / m.units < fn_tor or before / free > fn_max:
        return False
    st.ctr[MIGRATIONS_ATTEMPTED] += 1
    n = st.ctr[N_ACTIVE]
    sizes = np.empty(n, dtype=np.int64)
    jobs = np.empty(n, dtype=np.int64)
    for i in range(n):
        sizes[i] = -st.slot_alloc[st.active[i]]
        jobs[i] = st.slot_job[st.active[i]]
    order = np.argsort(jobs, kind="mergesort")
    order = order[np.argsort(sizes[order], kind="mergesort")]
    stays = np.zeros(n, dtype=np.bool_)
    placed_all = False
    while not placed_all:
        st.tmp[:] = 0
        for i in range(n):
            if stays[i]:
                for w in range(st.tmp.shape[0]):
                    st.tmp[w] |= st.held[st.active[i], w]
        placed_all = True
        for k in range(n):
            i = order[k]
            if stays[i]:
                continue
            n_free = refresh(m, st, st.tmp)
            b = best_box(m.box_masks, m.box_volume, st.free_list, n_free,
                         st.slot_alloc[st.active[i]], st.reserved, False)
            if b < 0:
                stays[i] = True
                placed_all = False
                break
            for w in range(st.tmp.shape[0]):
                st.moved[st.active[i], w] = m.box_masks[b, w]
                st.tmp[w] |= m.box_masks[b, w]
    after = largest_listed(m, st, refresh(m, st, st.tmp))
    if after < before:
        return False
    for i in range(n):
        if not stays[i]:
            st.held[st.active[i]] = st.moved[st.active[i]]
            log_placement(st, t, st.slot_job[st.active[i]], st.held[st.active[i]])
    st.occ[:] = st.tmp
    st.ctr[EPOCH] += 1
    if after > before:
        st.migration_s[st.ctr[MIGRATIONS_SUCCESSFUL]] = t
        st.ctr[MIGRATIONS_SUCCESSFUL] += 1
    return True
