"""Ding and Bhuyan's Adaptive Scan on 2D meshes (row `as`), with rotation.

The scan visits candidate bases bottom to top, left to right in each row, from <0, 0> to
<W - w, H - h> [Inf: the thesis prints <W - w + 1, H - h + 1>, one past the last base that
fits]. A base inside the coverage submesh of a busy submesh (the job there would overlap
it) cannot serve; the scan then jumps to the column after that coverage submesh's largest
x, which is the busy submesh's own largest x. The first base outside every coverage
submesh is taken. If the whole mesh fails, the scan runs once more for J(h, w). O(N x N_A)
with the busy list, and it recognises every free submesh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.grid import (
    Mesh,
    assign,
    build_struct,
    busy_list,
    memory_bytes,
    overlapping,
    register,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["AdaptiveScanMachine", "build", "memory_bytes"]


class AdaptiveScanMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh


def build(spec: MachineSpec, jobs: Jobs) -> tuple[AdaptiveScanMachine, np.ndarray, np.ndarray]:
    """The struct, each job's units (w x h) and its placement class (its shape)."""
    return build_struct(AdaptiveScanMachine, spec, jobs, True)


@implements(place, AdaptiveScanMachine)
@kernel
def place_scan(m, st, j, units, busy, growth, forbidden, out):
    """The adaptive scan for J(w, h), then for J(h, w)."""
    mesh = m.mesh
    n = busy_list(mesh, st, busy, forbidden)
    w, h = mesh.job_w[j], mesh.job_h[j]
    for turn in range(1 if w == h else 2):
        cw, ch = (w, h) if turn == 0 else (h, w)
        x, y = scan(mesh, n, cw, ch)
        if x >= 0:
            return assign(mesh, j, x, y, cw, ch, out)
    return -1


@kernel
def scan(mesh, n, w, h):
    """The first free base of J(w, h) in the scan's order, or (-1, -1)."""
    blist = mesh.blist
    for y in range(mesh.height - h + 1):
        x = 0
        while x <= mesh.width - w:
            k = overlapping(blist, n, x, y, x + w - 1, y + h - 1)
            if k < 0:
                return x, y
            x = blist[k, 2] + 1
    return -1, -1


register(AdaptiveScanMachine, partitions=True)
