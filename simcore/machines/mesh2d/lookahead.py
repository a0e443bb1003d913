"""Bhattacharya and Tsai's free-region strategies on 2D meshes: `la-ff`, `la-bf`, `la-wf`
and the 1-lookahead `bfl1`, `wfl1` (each row's `rule`). No rotation.

The free regions of J(w, h) are rectangles of valid bases, left when the coverage
submesh of every busy submesh is subtracted from the region <0, 0, W - w, H - h> of all
bases (`simcore.machines.mesh2d.grid.free_regions`: O(N_A) regions in O(N_A^2); they depend on
the subtraction order and split direction, which that function fixes [Inf]). The job is
placed at the chosen region's base (its lower-left base):

- `first` (`la-ff`): the region whose base has the least x, then the least y;
- `best` (`la-bf`): the region of the least area (number of bases), `worst` (`la-wf`) the
  largest; ties go to the first region in the list [Inf];
- `best-lookahead` (`bfl1`, BFL(1)): regions from the smallest to the largest (ties in list
  order); the first whose choice still leaves a free submesh for the largest waiting job
  (the most processors; ties: the earliest in the queue; the job itself excluded) wins; if
  none does, or nothing else waits, the smallest; `worst-lookahead` (`wfl1`, WFL(1)) the
  same from the largest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, get_args

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.core.state import QLEN
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.grid import (
    Mesh,
    assign,
    build_struct,
    busy_list,
    free_regions,
    memory_bytes,
    register,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["LookaheadMachine", "build", "memory_bytes"]

#: Which free region a job gets (see the module docstring).
Rule = Literal["first", "best", "worst", "best-lookahead", "worst-lookahead"]
FIRST, BEST, WORST, BEST_LOOKAHEAD, WORST_LOOKAHEAD = range(len(get_args(Rule)))


class LookaheadMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    policy: int


def build(spec: MachineSpec, jobs: Jobs, *,
          rule: Rule) -> tuple[LookaheadMachine, np.ndarray, np.ndarray]:
    """The struct of one `rule`, each job's units (w x h) and its placement class (its
    shape)."""
    return build_struct(LookaheadMachine, spec, jobs, False, get_args(Rule).index(rule))


@implements(place, LookaheadMachine)
@kernel
def place_regions(m, st, j, units, busy, growth, forbidden, out):
    """Job j at the base of the free region its policy picks."""
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    n = busy_list(mesh, st, busy, forbidden)
    count = candidates(mesh, n, w, h)
    if count == 0:
        return -1
    cand, order = mesh.cand, mesh.order
    policy = m.policy
    if policy == FIRST:
        pick = 0
        for r in range(1, count):
            if cand[r, 0] < cand[pick, 0] or (cand[r, 0] == cand[pick, 0]
                                              and cand[r, 1] < cand[pick, 1]):
                pick = r
        return assign(mesh, j, cand[pick, 0], cand[pick, 1], w, h, out)
    descending = policy in (WORST, WORST_LOOKAHEAD)
    for r in range(count):  # stable insertion sort by area
        k = r
        while k > 0 and (cand[order[k - 1], 2] < cand[r, 2] if descending
                         else cand[order[k - 1], 2] > cand[r, 2]):
            order[k] = order[k - 1]
            k -= 1
        order[k] = r
    pick = order[0]
    if policy in (BEST_LOOKAHEAD, WORST_LOOKAHEAD):
        big = largest_waiting(mesh, st, j)
        if big >= 0:
            blist = mesh.blist
            for r in range(count):
                x, y = cand[order[r], 0], cand[order[r], 1]
                blist[n, 0], blist[n, 1], blist[n, 2], blist[n, 3] = x, y, x + w - 1, y + h - 1
                if free_regions(mesh, n + 1, mesh.job_w[big], mesh.job_h[big])[1] > 0:
                    pick = order[r]
                    break
    return assign(mesh, j, cand[pick, 0], cand[pick, 1], w, h, out)


@kernel
def candidates(mesh, n, w, h):
    """The free regions of J(w, h) as candidates in mesh.cand: base x, base y, area (in
    list order); returns how many."""
    buf, count = free_regions(mesh, n, w, h)
    regions, cand = mesh.regions, mesh.cand
    for r in range(count):
        cand[r, 0] = regions[buf, r, 0]
        cand[r, 1] = regions[buf, r, 1]
        cand[r, 2] = (regions[buf, r, 2] - regions[buf, r, 0] + 1) * \
            (regions[buf, r, 3] - regions[buf, r, 1] + 1)
    return count


@kernel
def largest_waiting(mesh, st, j):
    """The waiting job other than j asking for the most processors (the earliest in the
    queue on ties), or -1."""
    queue, waiting, job_w, job_h = st.queue.jobs, st.queue.waiting, mesh.job_w, mesh.job_h
    big, size = -1, 0
    for i in range(st.ctr[QLEN]):
        k = queue[i]
        if k != j and waiting[k] and job_w[k] * job_h[k] > size:
            big, size = k, job_w[k] * job_h[k]
    return big


register(LookaheadMachine, partitions=True)
