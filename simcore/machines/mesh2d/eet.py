"""Chu's estimated-execution-time strategies on 2D meshes (rows `eet-sb`, `eet-sc`, thesis
chapter 7): place a job next to jobs that will finish at about the same time, so that
their processors come free together.

Each job has an estimated execution time (its requested time in the workload; the run
time where the workload gives none: Chu's estimates are drawn from N(y, c y) truncated at 0,
see `simcore.workload.chu`). A running job's estimated completion time (ECT) is its
allocation time plus its estimate; the new job's is z = t + z', t the current time and z'
its estimate. The ECT difference (ECTD) of a neighbour node of a candidate submesh is 0
beyond the mesh edge, z' if the node is free, and |z - max(e, t)| if it is busy with a job
of ECT e (a job past its estimate counts as ending now, which gives z'). The candidate with
the least total (TECTD, the sum over all neighbour nodes) wins; ties go to the first
candidate [Inf: Fig. 7.2 keeps a candidate only if strictly better]. Forbidden (reserved)
processors count as busy with a job long past its estimate.

`eet-sb` (Fig. 7.2, O(N_A^3) with the busy list): if nothing is busy, <0, 0, w - 1, h - 1>;
otherwise candidates of both orientations at the mesh's four corners, then, for each
submesh of the busy list and orientation, every in-mesh position touching its east,
north, west and south sides [Inf: the figure's steps add only the mesh corners, its prose
says positions along busy submeshes are searched]; overlapping ones are dropped; TECTD adds
ECTD x common boundary per adjacent busy submesh and z' per remaining free neighbour,
computed afresh for each candidate [Inf: the figure resets TECTD once].

`eet-sc` (Fig. 7.3, O(N)): Best Fit's corners of the coverage array (`simcore.machines.mesh2d.zhu`)
of J(w, h), then of J(h, w), each scored by TECTD; the least wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.core.state import NOW
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.grid import (
    Mesh,
    assign,
    build_struct,
    busy_list,
    corners,
    coverage,
    fill_grid,
    inside,
    memory_bytes,
    overlapping,
    register,
    shared,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["EETMachine", "build", "memory_bytes"]


class EETMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    corners: bool  # EET-SC: coverage-array corners; else EET-SB: busy-list positions


def build(spec: MachineSpec, jobs: Jobs, *,
          corners: bool) -> tuple[EETMachine, np.ndarray, np.ndarray]:
    """The struct of EET-SB (`corners`: EET-SC), each job's units (w x h) and its
    placement class (its shape)."""
    return build_struct(EETMachine, spec, jobs, True, corners)


@implements(place, EETMachine)
@kernel
def place_eet(m, st, j, units, busy, growth, forbidden, out):
    """The candidate of the least TECTD (see the module docstring)."""
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    t = st.acc[NOW]
    z_est = mesh.est[j]
    n = busy_list(mesh, st, busy, forbidden)
    if m.corners:
        fill_grid(mesh, busy, forbidden)
        completion_grid(mesh, n)
        x, y, cw, _ = best_corner(mesh, w, h, t, z_est)
    else:
        if n == 0 and w <= mesh.width and h <= mesh.height:
            return assign(mesh, j, 0, 0, w, h, out)
        x, y, cw, _ = best_side(mesh, n, w, h, t, z_est)
    if x < 0:
        return -1
    return assign(mesh, j, x, y, cw, w * h // cw, out)


@kernel
def ectd(z, z_est, e, t):
    """The ECT difference of a neighbour busy with a job of ECT e (NaN: free)."""
    if np.isnan(e):
        return z_est
    return abs(z - max(e, t))


@kernel
def side_tectd(mesh, n, x1, y1, x2, y2, t, z_est):
    """TECTD of a free candidate <x1, y1, x2, y2> from the busy list."""
    blist, bect = mesh.blist, mesh.bect
    z = t + z_est
    neighbours = 0  # in the mesh
    if x1 > 0:
        neighbours += y2 - y1 + 1
    if x2 < mesh.width - 1:
        neighbours += y2 - y1 + 1
    if y1 > 0:
        neighbours += x2 - x1 + 1
    if y2 < mesh.height - 1:
        neighbours += x2 - x1 + 1
    total = 0.0
    marked = 0
    for k in range(n):
        if blist[k, 2] == x1 - 1 or blist[k, 0] == x2 + 1:
            length = shared(y1, y2, blist[k, 1], blist[k, 3])
        elif blist[k, 3] == y1 - 1 or blist[k, 1] == y2 + 1:
            length = shared(x1, x2, blist[k, 0], blist[k, 2])
        else:
            continue
        total += length * ectd(z, z_est, bect[k], t)
        marked += length
    return total + (neighbours - marked) * z_est


@kernel
def best_side(mesh, n, w, h, t, z_est):
    """EET-SB's choice: (x, y, width, TECTD); x = -1 if no candidate is free."""
    blist = mesh.blist
    best = (-1, -1, w, np.inf)
    turns = 1 if w == h else 2
    for turn in range(turns):
        cw, ch = (w, h) if turn == 0 else (h, w)
        for corner in range(4):
            x = 0 if corner % 2 == 0 else mesh.width - cw
            y = 0 if corner < 2 else mesh.height - ch
            best = _consider(mesh, n, best, x, y, cw, ch, t, z_est)
    for k in range(n):
        x1, y1, x2, y2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        for turn in range(turns):
            cw, ch = (w, h) if turn == 0 else (h, w)
            for y in range(y1 - ch + 1, y2 + 1):  # east side
                best = _consider(mesh, n, best, x2 + 1, y, cw, ch, t, z_est)
            for x in range(x1 - cw + 1, x2 + 1):  # north side
                best = _consider(mesh, n, best, x, y2 + 1, cw, ch, t, z_est)
            for y in range(y1 - ch + 1, y2 + 1):  # west side
                best = _consider(mesh, n, best, x1 - cw, y, cw, ch, t, z_est)
            for x in range(x1 - cw + 1, x2 + 1):  # south side
                best = _consider(mesh, n, best, x, y1 - ch, cw, ch, t, z_est)
    return best


@kernel
def _consider(mesh, n, best, x, y, cw, ch, t, z_est):
    if not inside(mesh, x, y, cw, ch) or \
            overlapping(mesh.blist, n, x, y, x + cw - 1, y + ch - 1) >= 0:
        return best
    value = side_tectd(mesh, n, x, y, x + cw - 1, y + ch - 1, t, z_est)
    return (x, y, cw, value) if value < best[3] else best


@kernel
def completion_grid(mesh, n):
    """mesh.ect[x*H + y]: the ECT of the listed submesh holding node <x, y>, NaN if free."""
    ect, blist, height = mesh.ect, mesh.blist, mesh.height
    for u in range(ect.shape[0]):
        ect[u] = np.nan
    for k in range(n):
        for x in range(blist[k, 0], blist[k, 2] + 1):
            for y in range(blist[k, 1], blist[k, 3] + 1):
                ect[x * height + y] = mesh.bect[k]


@kernel
def grid_tectd(mesh, x, y, w, h, t, z_est):
    """TECTD of the w x h candidate based at <x, y> from the ECT grid."""
    ect, width, height = mesh.ect, mesh.width, mesh.height
    z = t + z_est
    total = 0.0
    for yy in range(y, y + h):
        if x > 0:
            total += ectd(z, z_est, ect[(x - 1) * height + yy], t)
        if x + w < width:
            total += ectd(z, z_est, ect[(x + w) * height + yy], t)
    for xx in range(x, x + w):
        if y > 0:
            total += ectd(z, z_est, ect[xx * height + y - 1], t)
        if y + h < height:
            total += ectd(z, z_est, ect[xx * height + y + h], t)
    return total


@kernel
def best_corner(mesh, w, h, t, z_est):
    """EET-SC's choice: (x, y, width, TECTD); x = -1 if the coverage arrays of both
    orientations have no 0."""
    best = (-1, -1, w, np.inf)
    for turn in range(1 if w == h else 2):
        cw, ch = (w, h) if turn == 0 else (h, w)
        if cw > mesh.width or ch > mesh.height:
            continue
        coverage(mesh, cw, ch)
        cand = mesh.cand
        for k in range(corners(mesh, cw, ch)):
            value = grid_tectd(mesh, cand[k, 0], cand[k, 1], cw, ch, t, z_est)
            if value < best[3]:
                best = (cand[k, 0], cand[k, 1], cw, value)
    return best


register(EETMachine, partitions=True)
