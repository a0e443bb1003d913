"""Chu's Busy Distance Inverse on 2D meshes (row `bdi`, thesis chapter 8, Fig. 8.3).

A candidate submesh A has four corners LL, LR, UL, UR. The busy distance from a corner in
a direction is the number of hops to the nearest busy processor that way, along the
corner's row or column [Inf: "in a given direction"; this makes each candidate and busy
submesh an O(1) update of the eight distances, as the thesis's complexity says]; a
corner next to the mesh boundary in that direction has distance 1, so the boundary acts
as busy nodes just outside the mesh (westwards from column x with nothing busy between:
x + 1) [Inf: the thesis's Fig. 8.1 values (BDI 6 and 5.64 beside its Best Fit and Busy
List facts) fit an occupancy under this reading (tests/test_mesh_allocators.py) and none
if a direction with nothing busy counted 0 (docs/chu.md)]. BDI(A) = 1/LLS + 1/LLW +
1/LRS + 1/LRE + 1/ULN + 1/ULW + 1/URN + 1/URE, and the largest BDI wins: the job goes
where the mesh is most crowded, counting busy nodes beyond its immediate neighbours.

Candidates (Fig. 8.3): if nothing is busy, <0, 0, w - 1, h - 1>. Otherwise the bases at the
four corners of every free region of J(w, h) (`simcore.machines.mesh2d.grid.free_regions`, the
lookahead strategies' regions; Chu found their lower-left corners alone did poorly); if
there are none and w != h, the same for J(h, w); else the job waits. Ties go to the first
candidate (regions in list order, corners LL, LR, UL, UR) [Inf: the thesis gives no
tie-break]. O(N_A^2).

Option `candidates` scores other candidate sets, as the thesis's section 8.3 did before
it chose the free regions' corners (BDI with Best Fit's and the busy list's candidates
"offer similar performance"; docs/chu.md measures it): `busy-list`, the mesh's corners, then every
free position touching a side of a listed submesh (list order; east, north, west, south;
along each side from its lower or left end), the modified busy list's candidates, whose
positions EET-SB shares (`simcore.machines.mesh2d.busy_list`); `best-fit`, Best Fit's
corners of the coverage array (`simcore.machines.mesh2d.zhu`), in First Fit's order. The
rotation rule and the ties are as for the regions.

Two options read the chapter otherwise (docs/chu.md measures both): `rotation: both`
scores the corners of the free regions of J(w, h) and then of J(h, w) together, as BL does
(the thesis says BF was made to rotate "as in the BL and BDI strategies"), instead of
Fig. 8.3's rotation only on failure; `distance: half-plane` takes each busy distance as
the hops to the nearest busy node anywhere on that side of the corner (south of LL for
LLS), not only along its row or column. Fig. 8.1 fits no occupancy under the second (the
BDI values 6 and 5.64 leave <6, 4, 8, 6> no boundary value of 7).
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
    corners,
    coverage,
    fill_grid,
    free_regions,
    inside,
    memory_bytes,
    overlapping,
    register,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["BDIMachine", "build", "memory_bytes"]


class BDIMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    both: bool  # rotation: both orientations scored together
    halfplane: bool  # distance: nearest busy node of the half-plane
    candidates: int  # REGIONS, BUSY_LIST or BEST_FIT


REGIONS, BUSY_LIST, BEST_FIT = 0, 1, 2
CANDIDATES = {"regions": REGIONS, "busy-list": BUSY_LIST, "best-fit": BEST_FIT}


def build(spec: MachineSpec, jobs: Jobs) -> tuple[BDIMachine, np.ndarray, np.ndarray]:
    """The struct, each job's units (w x h) and its placement class (its shape)."""
    return build_struct(BDIMachine, spec, jobs, True, spec.option("rotation") == "both",
                        spec.option("distance") == "half-plane",
                        CANDIDATES[spec.option("candidates")])


@implements(place, BDIMachine)
@kernel
def place_bdi(m, st, j, units, busy, growth, forbidden, out):
    """The candidate of the largest busy distance inverse (see the module docstring)."""
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    n = busy_list(mesh, st, busy, forbidden)
    if n == 0 and w <= mesh.width and h <= mesh.height:
        return assign(mesh, j, 0, 0, w, h, out)
    best = (-1.0, -1, -1, w)  # BDI, x, y, width
    if m.candidates == BEST_FIT:
        fill_grid(mesh, busy, forbidden)
    for turn in range(1 if w == h else 2):
        if best[1] >= 0 and not m.both:
            break  # Fig. 8.3: J(h, w) only when J(w, h) has no candidate
        cw, ch = (w, h) if turn == 0 else (h, w)
        if m.candidates == REGIONS:
            buf, count = free_regions(mesh, n, cw, ch)
            regions = mesh.regions
            for r in range(count):
                for corner in range(4):
                    x = regions[buf, r, 0] if corner % 2 == 0 else regions[buf, r, 2]
                    y = regions[buf, r, 1] if corner < 2 else regions[buf, r, 3]
                    best = _better(m, mesh, n, best, x, y, cw, ch, False)
        elif m.candidates == BEST_FIT:
            if cw <= mesh.width and ch <= mesh.height:
                coverage(mesh, cw, ch)
                for k in range(corners(mesh, cw, ch)):
                    best = _better(m, mesh, n, best, mesh.cand[k, 0], mesh.cand[k, 1], cw, ch,
                                   False)
        else:
            best = _along_sides(m, mesh, n, best, cw, ch)
    if best[1] >= 0:
        return assign(mesh, j, best[1], best[2], best[3], w * h // best[3], out)
    return -1


@kernel
def _along_sides(m, mesh, n, best, cw, ch):
    """The busy list's candidates of J(cw, ch): the mesh's corners, then each free position
    touching a side of a listed submesh (see the module docstring)."""
    for corner in range(4):
        x = 0 if corner % 2 == 0 else mesh.width - cw
        y = 0 if corner < 2 else mesh.height - ch
        best = _better(m, mesh, n, best, x, y, cw, ch, True)
    blist = mesh.blist
    for k in range(n):
        x1, y1, x2, y2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        for side in range(4):  # east, north, west, south
            along_y = side % 2 == 0
            first, last = (y1 - ch + 1, y2) if along_y else (x1 - cw + 1, x2)
            fixed = (x2 + 1, y2 + 1, x1 - cw, y1 - ch)[side]
            for s in range(first, last + 1):
                x, y = (fixed, s) if along_y else (s, fixed)
                best = _better(m, mesh, n, best, x, y, cw, ch, True)
    return best


@kernel
def _better(m, mesh, n, best, x, y, cw, ch, check):
    """The candidate <x, y> of J(cw, ch) against `best` (BDI, x, y, width): the larger
    BDI wins, the first on ties; with `check`, only if it is inside the mesh and free."""
    if check and (not inside(mesh, x, y, cw, ch)
                  or overlapping(mesh.blist, n, x, y, x + cw - 1, y + ch - 1) >= 0):
        return best
    if m.halfplane:
        value = plane_distances(mesh, n, x, y, x + cw - 1, y + ch - 1)
    else:
        value = inverse_distances(mesh, n, x, y, x + cw - 1, y + ch - 1)
    return (value, x, y, cw) if value > best[0] else best


@kernel
def inverse_distances(mesh, n, x1, y1, x2, y2):
    """BDI(<x1, y1, x2, y2>): the sum of the inverses of its eight busy distances."""
    blist = mesh.blist
    lls, llw, ulw, uln = y1 + 1, x1 + 1, x1 + 1, mesh.height - y2
    lrs, lre, ure, urn = y1 + 1, mesh.width - x2, mesh.width - x2, mesh.height - y2
    for k in range(n):
        bx1, by1, bx2, by2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        if by2 < y1:  # below: south distances of the columns it spans
            if bx1 <= x1 <= bx2:
                lls = min(lls, y1 - by2)
            if bx1 <= x2 <= bx2:
                lrs = min(lrs, y1 - by2)
        if by1 > y2:  # above
            if bx1 <= x1 <= bx2:
                uln = min(uln, by1 - y2)
            if bx1 <= x2 <= bx2:
                urn = min(urn, by1 - y2)
        if bx2 < x1:  # left: west distances of the rows it spans
            if by1 <= y1 <= by2:
                llw = min(llw, x1 - bx2)
            if by1 <= y2 <= by2:
                ulw = min(ulw, x1 - bx2)
        if bx1 > x2:  # right
            if by1 <= y1 <= by2:
                lre = min(lre, bx1 - x2)
            if by1 <= y2 <= by2:
                ure = min(ure, bx1 - x2)
    return (1.0 / lls + 1.0 / llw + 1.0 / lrs + 1.0 / lre + 1.0 / uln + 1.0 / ulw
            + 1.0 / urn + 1.0 / ure)


@kernel
def _gap(a, b1, b2):
    """Hops from coordinate a to the nearest of b1..b2."""
    return max(0, b1 - a, a - b2)


@kernel
def plane_distances(mesh, n, x1, y1, x2, y2):
    """BDI with each busy distance the hops to the nearest busy node in the corner's
    half-plane of that direction (the boundary as for `inverse_distances`)."""
    blist = mesh.blist
    lls, llw, ulw, uln = y1 + 1, x1 + 1, x1 + 1, mesh.height - y2
    lrs, lre, ure, urn = y1 + 1, mesh.width - x2, mesh.width - x2, mesh.height - y2
    for k in range(n):
        bx1, by1, bx2, by2 = blist[k, 0], blist[k, 1], blist[k, 2], blist[k, 3]
        if by1 < y1:  # reaches below the candidate's bottom row
            dy = y1 - min(by2, y1 - 1)
            lls = min(lls, dy + _gap(x1, bx1, bx2))
            lrs = min(lrs, dy + _gap(x2, bx1, bx2))
        if by2 > y2:
            dy = max(by1, y2 + 1) - y2
            uln = min(uln, dy + _gap(x1, bx1, bx2))
            urn = min(urn, dy + _gap(x2, bx1, bx2))
        if bx1 < x1:
            dx = x1 - min(bx2, x1 - 1)
            llw = min(llw, dx + _gap(y1, by1, by2))
            ulw = min(ulw, dx + _gap(y2, by1, by2))
        if bx2 > x2:
            dx = max(bx1, x2 + 1) - x2
            lre = min(lre, dx + _gap(y1, by1, by2))
            ure = min(ure, dx + _gap(y2, by1, by2))
    return (1.0 / lls + 1.0 / llw + 1.0 / lrs + 1.0 / lre + 1.0 / uln + 1.0 / ulw
            + 1.0 / urn + 1.0 / ure)


register(BDIMachine, partitions=True)
