"""Das Sharma and Pradhan's Busy List on 2D meshes (row `bl`) and Chu's modified version
(row `bl-mod`), both best fits by boundary value, both rotating.

The boundary value of a free candidate submesh is its number of busy neighbours (the nodes
next to its sides that are busy), the nodes beyond a mesh edge counting as busy [Inf: the
thesis's Fig. 8.1 gives value 7 to <0, 5, 2, 7>, which touches the west edge]; the
candidate with the highest value wins, ties going to the first candidate generated [Inf:
the thesis's example says "either"]. Option `edges: false` counts busy nodes only (the
thesis's chapter 2 has a candidate's value grow "by the length of the common boundary if
it is adjacent to some allocated submesh").

`bl`: candidates for J(w, h) and J(h, w) come from the busy list [Inf, the thesis only says
"along the four corners of each allocated submesh"]: for each listed submesh, in list
order, and each orientation, its east, north, west and south sides, and on each side one
candidate flush with each of the side's two corners (the lower or left one first). A
candidate that overlaps a busy submesh slides along its side, away from its corner, until
it is free, as long as it still touches the side (it jumps past each submesh it overlaps,
so a slide costs O(N_A) overlap tests; O(N_A^3) in all). A free candidate does not slide,
so some free positions are never looked at, but the slides from both corners of a side
together pass every position touching it, so a free submesh is always found when there is
one. The four candidates at the mesh's corners (each orientation) come first and are
dropped if they overlap [Inf: chapter 2 names them after the busy list's candidates, the
EET-SB search of Fig. 7.2, which the thesis calls similar to BL's, generates them first];
option `mesh_corners: last` puts them after the busy list's.

`bl-mod` (Chu: BL modified "to consider all the boundary nodes of all allocated submeshes"
(ch. 2), "all possible candidate submeshes along the boundaries" (ch. 3), so that it
"always find[s] the free submesh with the highest boundary value" (ch. 7)): the mesh
corners as for `bl`, then every free position of both orientations touching a side of a
listed submesh (list order; east, north, west, south; along each side from its lower or
left end), which are EET-SB's candidates (`simcore.machines.mesh2d.eet`). Their maximum is
the maximum over every free position: a free position touching no busy submesh has only
edge contacts, and sliding it along an edge, then towards a mesh corner, reaches either a
position touching a busy submesh or a mesh corner, neither of lower value. O(N_A^2 (W + H)).
Option `positions: anywhere` scans every free position instead, by prefix sums of the busy
array in O(N), ties going to J(w, h) before J(h, w), then the smallest x, then the
smallest y [Inf]: the same maximum with another tie rule (docs/chu.md compares them).
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
    contact,
    edge_contact,
    fill_grid,
    inside,
    memory_bytes,
    overlapping,
    register,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["BusyListMachine", "build", "memory_bytes"]


class BusyListMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    positions: int  # SLIDES (bl), SIDES or ANYWHERE (bl-mod)
    edges: bool  # nodes beyond a mesh edge count as busy neighbours
    corners_last: bool  # the mesh corners' candidates after the busy list's


SLIDES, SIDES, ANYWHERE = 0, 1, 2


def build(spec: MachineSpec, jobs: Jobs, *,
          modified: bool) -> tuple[BusyListMachine, np.ndarray, np.ndarray]:
    """The struct of the busy list (`modified`: Chu's version, its option `positions`),
    each job's units (w x h) and its placement class (its shape)."""
    positions = SLIDES
    if modified:
        positions = SIDES if spec.option("positions") == "sides" else ANYWHERE
    return build_struct(BusyListMachine, spec, jobs, True, positions, spec.option("edges"),
                        spec.option("mesh_corners") == "last")


@implements(place, BusyListMachine)
@kernel
def place_busy_list(m, st, j, units, busy, growth, forbidden, out):
    """The free candidate with the highest boundary value (see the module docstring)."""
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    if m.positions == ANYWHERE:
        fill_grid(mesh, busy, forbidden)
        x, y, cw, value = best_anywhere(mesh, w, h, m.edges)
    else:
        n = busy_list(mesh, st, busy, forbidden)
        if m.positions == SIDES:
            x, y, cw, value = best_side(mesh, n, w, h, m.edges, m.corners_last)
        else:
            x, y, cw, value = best_candidate(mesh, n, w, h, m.edges, m.corners_last)
    if value < 0:
        return -1
    return assign(mesh, j, x, y, cw, w * h // cw, out)


@kernel
def mesh_corners(mesh, n, best, w, h, edges):
    """The candidates at the mesh's four corners, both orientations, against `best`."""
    blist = mesh.blist
    for turn in range(1 if w == h else 2):
        cw, ch = (w, h) if turn == 0 else (h, w)
        for corner in range(4):
            x = 0 if corner % 2 == 0 else mesh.width - cw
            y = 0 if corner < 2 else mesh.height - ch
            if inside(mesh, x, y, cw, ch) and overlapping(blist, n, x, y, x + cw - 1,
                                                           y + ch - 1) < 0:
                best = _better(mesh, n, best, x, y, cw, ch, edges)
    return best


@kernel
def best_side(mesh, n, w, h, edges, corners_last):
    """BL-mod's choice over the mesh corners and every position along the listed
    submeshes' sides: (x, y, width, boundary value), value -1 if none is free."""
    blist = mesh.blist
    best = (-1, -1, w, -1)
    if not corners_last:
        best = mesh_corners(mesh, n, best, w, h, edges)
    turns = 1 if w == h else 2
    for k in range(n):
        x1, y1, x2, y2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        for turn in range(turns):
            cw, ch = (w, h) if turn == 0 else (h, w)
            for y in range(y1 - ch + 1, y2 + 1):  # east side
                best = _free_better(mesh, n, best, x2 + 1, y, cw, ch, edges)
            for x in range(x1 - cw + 1, x2 + 1):  # north side
                best = _free_better(mesh, n, best, x, y2 + 1, cw, ch, edges)
            for y in range(y1 - ch + 1, y2 + 1):  # west side
                best = _free_better(mesh, n, best, x1 - cw, y, cw, ch, edges)
            for x in range(x1 - cw + 1, x2 + 1):  # south side
                best = _free_better(mesh, n, best, x, y1 - ch, cw, ch, edges)
    if corners_last:
        best = mesh_corners(mesh, n, best, w, h, edges)
    return best


@kernel
def _free_better(mesh, n, best, x, y, cw, ch, edges):
    if not inside(mesh, x, y, cw, ch) or \
            overlapping(mesh.blist, n, x, y, x + cw - 1, y + ch - 1) >= 0:
        return best
    return _better(mesh, n, best, x, y, cw, ch, edges)


@kernel
def best_candidate(mesh, n, w, h, edges, corners_last):
    """BL's choice: (x, y, width, boundary value) of the best candidate; value -1 if none
    is free."""
    blist = mesh.blist
    best = (-1, -1, w, -1)
    turns = 1 if w == h else 2
    if not corners_last:
        best = mesh_corners(mesh, n, best, w, h, edges)
    for k in range(n):
        x1, y1, x2, y2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        for turn in range(turns):
            cw, ch = (w, h) if turn == 0 else (h, w)
            # east side: from the lower-right corner northwards, from the upper-right south
            best = _slide(mesh, n, best, x2 + 1, y1, cw, ch, 0, 1, y2, edges)
            best = _slide(mesh, n, best, x2 + 1, y2 - ch + 1, cw, ch, 0, -1, y1 - ch + 1,
                          edges)
            # north side: from the upper-left corner eastwards, from the upper-right west
            best = _slide(mesh, n, best, x1, y2 + 1, cw, ch, 1, 0, x2, edges)
            best = _slide(mesh, n, best, x2 - cw + 1, y2 + 1, cw, ch, -1, 0, x1 - cw + 1,
                          edges)
            # west side
            best = _slide(mesh, n, best, x1 - cw, y1, cw, ch, 0, 1, y2, edges)
            best = _slide(mesh, n, best, x1 - cw, y2 - ch + 1, cw, ch, 0, -1, y1 - ch + 1,
                          edges)
            # south side
            best = _slide(mesh, n, best, x1, y1 - ch, cw, ch, 1, 0, x2, edges)
            best = _slide(mesh, n, best, x2 - cw + 1, y1 - ch, cw, ch, -1, 0, x1 - cw + 1,
                          edges)
    if corners_last:
        best = mesh_corners(mesh, n, best, w, h, edges)
    return best


@kernel
def _slide(mesh, n, best, x, y, cw, ch, dx, dy, end, edges):
    """Slide a cw x ch candidate from <x, y> by (dx, dy) steps, jumping past the submeshes
    it overlaps, up to position `end` of the moving coordinate; the first free position
    competes with `best`."""
    blist = mesh.blist
    while (x if dx else y) * (dx + dy) <= end * (dx + dy):
        if not inside(mesh, x, y, cw, ch):
            return best  # moving on only leaves the mesh further
        k = overlapping(blist, n, x, y, x + cw - 1, y + ch - 1)
        if k < 0:
            return _better(mesh, n, best, x, y, cw, ch, edges)
        if dx > 0:
            x = blist[k, 2] + 1
        elif dx < 0:
            x = blist[k, 0] - cw
        elif dy > 0:
            y = blist[k, 3] + 1
        else:
            y = blist[k, 1] - ch
    return best


@kernel
def _better(mesh, n, best, x, y, cw, ch, edges):
    value = contact(mesh, n, x, y, x + cw - 1, y + ch - 1)
    if not edges:
        value -= edge_contact(mesh, x, y, x + cw - 1, y + ch - 1)
    return (x, y, cw, value) if value > best[3] else best


@kernel
def best_anywhere(mesh, w, h, edges):
    """BL-mod's choice over every free position (`positions: anywhere`): (x, y, width,
    boundary value), value -1 if there is none. Prefix sums of the busy array: sums[0]
    over rectangles, sums[1] along columns, sums[2] along rows."""
    width, height, grid = mesh.width, mesh.height, mesh.grid
    area, col, row = mesh.sums[0], mesh.sums[1], mesh.sums[2]
    stride = height + 1
    for x in range(width + 1):
        area[x * stride] = 0
    for y in range(height + 1):
        area[y] = 0
    for x in range(width):
        col[x * stride] = 0
        for y in range(height):
            b = grid[x * height + y]
            col[x * stride + y + 1] = col[x * stride + y] + b
            area[(x + 1) * stride + y + 1] = area[x * stride + y + 1] + col[x * stride + y + 1]
    for y in range(height):
        row[y * (width + 1)] = 0
        for x in range(width):
            row[y * (width + 1) + x + 1] = row[y * (width + 1) + x] + grid[x * height + y]
    edge = 1 if edges else 0  # what a neighbour beyond a mesh edge counts
    bx, by, bw, best = -1, -1, w, -1
    for turn in range(1 if w == h else 2):
        cw, ch = (w, h) if turn == 0 else (h, w)
        for x in range(width - cw + 1):
            for y in range(height - ch + 1):
                x2, y2 = x + cw, y + ch
                if area[x2 * stride + y2] - area[x * stride + y2] - area[x2 * stride + y] \
                        + area[x * stride + y]:
                    continue
                value = ch * edge if x == 0 else \
                    col[(x - 1) * stride + y2] - col[(x - 1) * stride + y]
                value += ch * edge if x2 == width else col[x2 * stride + y2] - col[x2 * stride + y]
                value += cw * edge if y == 0 else row[(y - 1) * (width + 1) + x2] - \
                    row[(y - 1) * (width + 1) + x]
                value += cw * edge if y2 == height else row[y2 * (width + 1) + x2] - \
                    row[y2 * (width + 1) + x]
                if value > best:
                    bx, by, bw, best = x, y, cw, value
    return bx, by, bw, best


register(BusyListMachine, partitions=True)
