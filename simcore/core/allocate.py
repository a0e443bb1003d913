"""The allocation interface every machine kind implements, for the numba schedulers.

A machine is a struct (NamedTuple) built per simulation by its allocator module (see
`simcore.machines.registry`): read-only tables shared between runs plus the allocator's
own scratch. Every struct has `units` (allocation units), `words` (uint64 words of the
resource bitset: unit bits, then whatever else the kind allocates, such as cables) and
`counts_only` (True when any free units will do for a job of that many, so that
schedulers can reason with counts alone, as on a flat machine).

The operations below are the only way schedulers touch a machine; each allocator module
implements them for its struct with `simcore.base.jit.implements`. `forbidden` is a bitset of
resources a placement must avoid (a reservation), or an empty array for none.
"""

from __future__ import annotations

import numpy as np

from simcore.base.jit import generic

NO_CAUSE = -1


@generic
def place(m, st, j, units, busy, growth, forbidden, out):
    """Where job j would go with `units` units in occupancy `busy`; writes the resources
    to `out` and returns the units allocated (at least `units`, at most `units + growth`
    where the kind grows jobs), or -1 if it cannot be placed. Deterministic: the same
    occupancy always gives the same answer."""
    raise NotImplementedError


@generic(default=True)
def largest_free(m, st, busy):
    """Units of the largest job placeable in occupancy `busy` (Krevat's largest free
    partition on tori and meshes); -1 where the kind has no such notion (schedulers that
    need it are refused on such machines by the registry)."""
    return -1


@generic(default=True)
def blocked_cause(m, st, j):
    """Why waiting job j cannot be placed now: the counter to increment
    (state.BLOCKED_NO_BOX, state.BLOCKED_LINKS), or NO_CAUSE where the kind does not
    attribute blocks (flat machines: the head simply waits for units)."""
    return NO_CAUSE


@generic(default=True)
def integrate(m, st, dt):
    """Accumulate the kind's own time integrals over an interval of `dt` seconds in which
    the occupancy stays as it is (wired machines: busy cables)."""
    return


@generic(default=True)
def extents(m, j, units):
    """(w, h, W, H): the sides of the submesh job j (of `units` units) asks for and the sides
    of the machine, as 2D meshes see them; any other machine is a line of units, where a job
    of s units is s x 1 (schedulers that order jobs by their sides read this)."""
    return units, 1, m.units, 1


@generic(default=True)
def wake(m, st):
    """The next time after now at which the machine's answers change by themselves (a
    placement limit that lapses, such as Slurm's --switches wait): the event loop stops
    there and schedules again. By default never."""
    return np.inf


@generic(default=True)
def dilate(m, st, jobs, t):
    """Stretch the run times of the jobs allocated at time t by where they were placed
    (a model of placement-dependent run times: their ends in st.run.slot_end and
    st.out.end_s move); called once per scheduler decision that started jobs. By default
    run times do not depend on the placement."""
    return
