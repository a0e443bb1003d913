"""Chuang and Tzeng's Frame Sliding on 2D meshes (row `fs`).

A frame is a w x h candidate submesh. The first frame's base is the lowest leftmost free
node (lowest row first, then leftmost); a frame whose base lies in the coverage set (the job
there would overlap a busy submesh) or in the reject set (bases beyond <W - w, H - h>, where
the frame would leave the mesh) slides w nodes to the right; past the right boundary it moves
up h nodes and slides from right to left, and so on, serpentine, until a frame is free or
the mesh is searched. The frames' columns are the lattice x0 + k w of the first base's
column x0, clipped to the mesh [Inf: the thesis does not say where a band starts; here every
band after the first covers the whole lattice row, including columns left of x0]. The fixed
strides can miss a free submesh; no rotation. O(N x N_A) with the busy list.
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

__all__ = ["FrameSlidingMachine", "build", "memory_bytes"]


class FrameSlidingMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh


def build(spec: MachineSpec, jobs: Jobs) -> tuple[FrameSlidingMachine, np.ndarray, np.ndarray]:
    """The struct, each job's units (w x h) and its placement class (its shape)."""
    return build_struct(FrameSlidingMachine, spec, jobs, False)


@implements(place, FrameSlidingMachine)
@kernel
def place_frames(m, st, j, units, busy, growth, forbidden, out):
    """The first free frame of job j (see the module docstring)."""
    mesh = m.mesh
    n = busy_list(mesh, st, busy, forbidden)
    x, y = slide(mesh, n, mesh.job_w[j], mesh.job_h[j])
    if x < 0:
        return -1
    return assign(mesh, j, x, y, mesh.job_w[j], mesh.job_h[j], out)


@kernel
def slide(mesh, n, w, h):
    """The base of the first free frame of J(w, h), or (-1, -1)."""
    blist, width, height = mesh.blist, mesh.width, mesh.height
    x0, y0 = -1, -1
    for y in range(height):  # the lowest leftmost free node
        for x in range(width):
            if overlapping(blist, n, x, y, x, y) < 0:
                x0, y0 = x, y
                break
        if x0 >= 0:
            break
    if x0 < 0:
        return -1, -1
    first = x0 % w
    last = first + (width - 1 - first) // w * w
    band = 0
    y = y0
    while y <= height - h:
        if band % 2 == 0:
            x, step, stop = (x0 if band == 0 else first), w, last + w
        else:
            x, step, stop = last, -w, first - w
        while x != stop:
            if x <= width - w and overlapping(blist, n, x, y, x + w - 1, y + h - 1) < 0:
                return x, y
            x += step
        band += 1
        y += h
    return -1, -1


register(FrameSlidingMachine, partitions=False)
