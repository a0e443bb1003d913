"""Li and Cheng's two-dimensional buddy system (row `2dbs`) on square 2^R x 2^R meshes.

Blocks are squares B(x, y, k) of side 2^k at multiples of 2^k; B(x, y, k) splits into the
buddies B(x, y, k-1), B(x + 2^(k-1), y, k-1), B(x, y + 2^(k-1), k-1) and
B(x + 2^(k-1), y + 2^(k-1), k-1), in that order. A job J(w, h) gets a block of level
i = ceil(log2 max(w, h)) and holds all of it (internal fragmentation: the units beyond
w x h count as lost capacity). Allocation takes the first block of the smallest non-empty
free block list FBL_j with j >= i and splits it down to level i, keeping the first buddy
each time (so the job gets the lower-left 2^i block of it) [Inf: the recursion below the
first split]; release merges four free buddies back into their parent.

The free lists hold exactly the maximal free blocks (free, with a parent that is not), so
they are a function of the occupancy, and so is this allocator: each call derives them
from the busy array bottom-up, O(N). The order within a list comes from the history of
appends in Li and Cheng's scheme; here "first" is the first in the buddies' recursive
(Z, Morton) order [Inf], which makes the choice a function of the occupancy alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.grid import (
    Mesh,
    assign,
    fill_grid,
    job_sides,
    new_mesh,
    register,
)
from simcore.machines.mesh2d.grid import memory_bytes as mesh_bytes

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["BuddyMachine", "build", "memory_bytes"]


class BuddyMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    order: int  # R: the mesh is 2^R x 2^R
    level: np.ndarray  # (jobs,) int64: the block level of each job
    free: np.ndarray  # (sum of 4^k,) uint8 scratch: whether each block is free
    offset: np.ndarray  # (R + 2,) int64: where each level's blocks start in `free`


def order_of(spec: MachineSpec) -> int:
    """R of a 2^R x 2^R mesh; other meshes are refused."""
    width, height = spec.dims2()
    if width != height or width & (width - 1):
        raise SpecError(f"machine {spec}: allocator 2dbs needs a square mesh whose side is a "
                        "power of two, e.g. mesh:32x32")
    return width.bit_length() - 1


def memory_bytes(spec: MachineSpec) -> int:
    """The Mesh's scratch and the free flags of every block."""
    order_of(spec)
    return mesh_bytes(spec) + 2 * spec.units


def build(spec: MachineSpec, jobs: Jobs) -> tuple[BuddyMachine, np.ndarray, np.ndarray]:
    """The struct, each job's units (its block, 4^i) and its placement class (i)."""
    order = order_of(spec)
    w, h = job_sides(spec, jobs, rotates=False)
    level = np.array([(int(s) - 1).bit_length() for s in np.maximum(w, h)], dtype=np.int64)
    offset = np.zeros(order + 2, dtype=np.int64)
    for k in range(order + 1):
        offset[k + 1] = offset[k] + 4 ** (order - k)
    mesh = new_mesh(spec, jobs, w, h)
    machine = BuddyMachine(spec.units, mesh.reserved.shape[0], False, mesh, order, level,
                           np.zeros(offset[-1], dtype=np.uint8), offset)
    return machine, 4 ** level, level


@implements(place, BuddyMachine)
@kernel
def place_buddy(m, st, j, units, busy, growth, forbidden, out):
    """The lower-left 2^i block of the first block of the smallest free list that holds
    blocks of level i or more."""
    mesh = m.mesh
    fill_grid(mesh, busy, forbidden)
    free, offset, order = m.free, m.offset, m.order
    side = mesh.width
    for u in range(side * side):  # level 0: nodes, indexed bx * side + by like the grid
        free[u] = 1 - mesh.grid[u]
    for k in range(1, order + 1):
        blocks = side >> k
        below = blocks * 2
        for bx in range(blocks):
            for by in range(blocks):
                c = offset[k - 1]
                free[offset[k] + bx * blocks + by] = (
                    free[c + 2 * bx * below + 2 * by] & free[c + 2 * bx * below + 2 * by + 1]
                    & free[c + (2 * bx + 1) * below + 2 * by]
                    & free[c + (2 * bx + 1) * below + 2 * by + 1])
    i = m.level[j]
    for k in range(i, order + 1):
        blocks = side >> k
        for q in range(blocks * blocks):  # Morton order: x in the even bits, y in the odd
            bx, by = 0, 0
            for b in range(k, order):
                bx |= ((q >> (2 * (b - k))) & 1) << (b - k)
                by |= ((q >> (2 * (b - k) + 1)) & 1) << (b - k)
            if not free[offset[k] + bx * blocks + by]:
                continue
            if k < order and free[offset[k + 1] + (bx >> 1) * (blocks >> 1) + (by >> 1)]:
                continue  # not maximal: its parent is free, so it is in no list
            return assign(mesh, j, bx << k, by << k, 1 << i, 1 << i, out)
    return -1


register(BuddyMachine, partitions=False)
