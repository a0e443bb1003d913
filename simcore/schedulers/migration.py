"""Migration (Krevat 2003): re-place running jobs to enlarge the largest free partition.

Attempted when the head job is blocked, some unit is free, the free fraction of the
machine FN_tor >= `fn_tor` and the fraction of free units inside the largest free
partition FN_max <= `fn_max` ("always migrate": fn_tor=0, fn_max=1), and (`on_change`)
a job was placed or ended since the last attempt (a migration's own re-layout is no new
state, so a failed attempt is not repeated until the running set changes). Running jobs are
re-placed largest first (ties: submit order) on an empty machine (but for units out of
service, `simcore.core.failures`) with the allocator's own rule at their allocated size,
without growth; a job that cannot be re-placed stays where it is and the reassignment of
the others restarts around it. The old layout is kept if the largest free partition would
shrink. A migration is successful if it grew. Needs an allocator that migrates (the
registry refuses others).
"""

from __future__ import annotations

from simcore.base.bitset import copy_into, same_bits
from simcore.base.jit import kernel
from simcore.core.allocate import largest_free, place
from simcore.core.state import (
    EPOCH,
    FREE_UNITS,
    MIGRATION_EPOCH,
    MIGRATIONS_ATTEMPTED,
    MIGRATIONS_SUCCESSFUL,
    active_by_size,
    log_placement,
)


@kernel
def migrate(m, st, fn_tor, fn_max, on_change, apply_equal, t):
    """Try a migration at time t; return whether one was applied (a new layout that does
    not shrink the largest free partition is kept, even if nothing moved, unless
    `apply_equal` is false and it does not grow it)."""
    ctr, run = st.ctr, st.run
    free = ctr[FREE_UNITS]
    if free == 0 or (on_change and ctr[MIGRATION_EPOCH] == ctr[EPOCH]):
        return False
    before = largest_free(m, st, run.occ)
    if free / m.units < fn_tor or before / free > fn_max:
        return False
    ctr[MIGRATIONS_ATTEMPTED] += 1
    ctr[MIGRATION_EPOCH] = ctr[EPOCH]
    n = active_by_size(st)
    order, stays, moved, tmp = st.scratch.order, st.scratch.stays, st.scratch.moved, st.scratch.tmp
    held, alloc, slot_job = run.held, run.slot_alloc, run.slot_job
    nothing = st.scratch.nothing
    words = tmp.shape[0]
    for k in range(n):
        stays[order[k]] = False
    placed_all = False
    while not placed_all:  # each failed pass leaves one more job in place
        copy_into(tmp, st.outages.down)
        for k in range(n):
            if stays[order[k]]:
                for w in range(words):
                    tmp[w] |= held[order[k], w]
        placed_all = True
        for k in range(n):
            slot = order[k]
            if stays[slot]:
                continue
            if place(m, st, slot_job[slot], alloc[slot], tmp, 0, nothing, moved[slot]) < 0:
                stays[slot] = True
                placed_all = False
                break
            for w in range(words):
                tmp[w] |= moved[slot, w]
    after = largest_free(m, st, tmp)
    if after < before or (after == before and not apply_equal):
        return False
    for k in range(n):
        slot = order[k]
        if not stays[slot] and not same_bits(held[slot], moved[slot]):
            copy_into(held[slot], moved[slot])
            log_placement(st, t, slot_job[slot], held[slot])
    copy_into(run.occ, tmp)
    ctr[EPOCH] += 1
    ctr[MIGRATION_EPOCH] = ctr[EPOCH]  # the new layout is no new state
    if after > before:
        st.out.migration_s[ctr[MIGRATIONS_SUCCESSFUL]] = t
        ctr[MIGRATIONS_SUCCESSFUL] += 1
    return True
