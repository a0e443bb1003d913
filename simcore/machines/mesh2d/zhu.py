"""Zhu's First Fit and Best Fit on 2D meshes, from the coverage array (rows `ff`, `bf`, and
the versions Chu made to rotate, `ff-rot`, `bf-rot`).

Both compute the coverage array C of J(w, h) (`simcore.machines.mesh2d.grid.coverage`), where 0
marks a base of a free w x h submesh, in O(N):

- First Fit takes the first 0 "in the upper left corner" of C: the smallest x, then the
  largest y (each column scanned top to bottom, leftmost column first);
- Best Fit takes a corner of C: a 0 that ends its run of 0s both in its row and in its
  column. Its score is its number of busy neighbours (1s) in C, a neighbour beyond C's
  border counting as a 1 (so a corner of C gets two more, one on C's border one more). The
  highest score wins; a tie goes to the smaller area, the length of the corner's row run
  times that of its column run; a remaining tie to the first corner in First Fit's order
  [Inf: Zhu's rule stops at the area].

Rotation (Chu's modified versions): `ff-rot` tries J(h, w) only when J(w, h) finds no
base, as first-fit strategies do; `bf-rot` scores the corners of both orientations
together, J(w, h)'s first on ties [Inf: the thesis says only that BF was made to rotate
"as in the BL and BDI strategies"].
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
    corners,
    coverage,
    fill_grid,
    memory_bytes,
    register,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["ZhuMachine", "build", "memory_bytes"]

class ZhuMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    mesh: Mesh
    best: bool
    rotate: bool


def build(spec: MachineSpec, jobs: Jobs, *, best: bool,
          rotate: bool) -> tuple[ZhuMachine, np.ndarray, np.ndarray]:
    """The struct of First Fit (or, `best`, Best Fit; `rotate`: Chu's rotating version),
    each job's units (w x h) and its placement class (its shape)."""
    return build_struct(ZhuMachine, spec, jobs, rotate, best, rotate)


@implements(place, ZhuMachine)
@kernel
def place_zhu(m, st, j, units, busy, growth, forbidden, out):
    """First or best fit of job j's submesh in `busy` (avoiding `forbidden`)."""
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    fill_grid(mesh, busy, forbidden)
    best_x, best_y, best_w = -1, -1, w
    best_score, best_area = -1, 0
    for turn in range(2 if m.rotate and w != h else 1):
        cw, ch = (w, h) if turn == 0 else (h, w)
        if cw > mesh.width or ch > mesh.height:
            continue
        coverage(mesh, cw, ch)
        if not m.best:
            x, y = first_zero(mesh, cw, ch)
            if x >= 0:
                return assign(mesh, j, x, y, cw, ch, out)
            continue
        x, y, score, area = best_corner(mesh, cw, ch)
        if x >= 0 and (score > best_score or (score == best_score and area < best_area)):
            best_x, best_y, best_w, best_score, best_area = x, y, cw, score, area
    if best_x < 0:
        return -1
    return assign(mesh, j, best_x, best_y, best_w, w * h // best_w, out)


@kernel
def first_zero(mesh, w, h):
    """First Fit's base in the coverage array of J(w, h): smallest x, then largest y;
    (-1, -1) if there is none."""
    height, cov = mesh.height, mesh.cov
    for i in range(mesh.width - w + 1):
        for j in range(height - h, -1, -1):
            if cov[i * height + j] == 0:
                return i, j
    return -1, -1


@kernel
def best_corner(mesh, w, h):
    """Best Fit's corner of the coverage array of J(w, h): (x, y, score, area), x = -1 if
    C has no 0 (see the module docstring)."""
    height, cov, cand = mesh.height, mesh.cov, mesh.cand
    nx, ny = mesh.width - w + 1, mesh.height - h + 1
    best_x, best_y, best_score, best_area = -1, -1, -1, 0
    for k in range(corners(mesh, w, h)):
        i, j, area = cand[k, 0], cand[k, 1], cand[k, 2]
        score = _ones(cov, height, nx, ny, i - 1, j) + _ones(cov, height, nx, ny, i + 1, j) \
            + _ones(cov, height, nx, ny, i, j - 1) + _ones(cov, height, nx, ny, i, j + 1)
        if score > best_score or (score == best_score and area < best_area):
            best_x, best_y, best_score, best_area = i, j, score, area
    return best_x, best_y, best_score, best_area


@kernel
def _ones(cov, height, nx, ny, i, j):
    """1 if C[i, j] is a 1 or lies beyond C's border, else 0."""
    if i < 0 or j < 0 or i >= nx or j >= ny:
        return 1
    return 1 if cov[i * height + j] else 0


register(ZhuMachine, partitions=True)
