"""What Chu's 2D-mesh submesh allocators share: geometry, busy lists, coverage and regions.

A 2D mesh M(W, H) (`mesh:WxH`) has one processor per node <x, y>, column x, row y; node
<x, y> is unit (and bit) x * H + y, as on every mesh of the project. A job J(w, h) asks for
a w x h submesh <x1, y1, x2, y2> = <x, y, x + w - 1, y + h - 1>, whose base is its
lower-left node <x, y>; allocators that rotate may give it h x w instead. Every allocator
(one module each, e.g. `simcore.machines.mesh2d.zhu`) keeps the shared part of its struct in a
`Mesh` (`simcore.machines.submesh`, the part a scheduler may use too) and builds on these
kernels (the first two of that module):

- the busy array B (`fill_grid`): 1 where a node is busy, from the occupancy bitset;
- the busy list (`busy_list`): the submeshes of the running jobs in allocation order, as
  Chu's list-based strategies keep it (appended at allocation, removed at release), followed
  by rectangles covering any forbidden (reserved) processors, which count as busy;
- the coverage submesh of a busy <x1, y1, x2, y2> for J(w, h), the bases it rules out:
  <max(0, x1 - w + 1), max(0, y1 - h + 1), x2, y2>; Zhu's coverage array (`coverage`);
- free regions (`free_regions`), Bhattacharya and Tsai's rectangles of valid bases;
- boundary values (`contact`): a candidate's busy neighbours, mesh edges counted as busy.

Allocators derive all of this from the occupancy `busy` they are asked about, so a
placement is a function of the occupancy (and, for EET, of the running jobs' estimates and
the current time; for the lookahead policies, of the waiting queue). Every running job's
submesh is remembered at placement (`Mesh.rect`); the busy list holds the running jobs
whose submesh lies in `busy`, which is the whole occupancy for every scheduler of this
project (the occupancy, or the occupancy minus jobs assumed to have ended).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np

from simcore.base.bitset import n_words
from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, extents, largest_free
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.jobs.submeshes import rule_shapes
from simcore.machines.submesh import Mesh as Mesh
from simcore.machines.submesh import assign as assign
from simcore.machines.submesh import bit as bit
from simcore.machines.submesh import busy_list as busy_list
from simcore.machines.submesh import fill_grid as fill_grid
from simcore.machines.submesh import write_rect as write_rect

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

T = TypeVar("T")

#: Default rule for jobs whose workload carries no submesh requests (see
#: `simcore.jobs.submeshes`).
DEFAULT_RULE = "squarest"


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of a Mesh's scratch (the per-job arrays are the workload's)."""
    width, height = spec.dims2()
    units = width * height
    return units * (1 + 1 + 8 + 8 + 2 * 32 + 24 + 8) + 3 * 8 * (width + 1) * (height + 1) \
        + 2 * units * 48


def job_sides(spec: MachineSpec, jobs: Jobs, rotates: bool) -> tuple[np.ndarray, np.ndarray]:
    """(w, h) per job: its shape where the workload gave one (prepare), else the default
    rule's; a job no w x h (or, rotating, h x w) submesh of the mesh holds is an error."""
    width, height = spec.dims2()
    if jobs.shape is None:
        w, h = rule_shapes(jobs.size, width, height, DEFAULT_RULE)
    else:
        if (jobs.shape[:, 2] != 1).any():
            i = int(np.flatnonzero(jobs.shape[:, 2] != 1)[0])
            raise SpecError(f"job {jobs.job_id[i]}: shape {tuple(jobs.shape[i])}; a 2D mesh "
                            "job's shape is w x h x 1")
        w, h = jobs.shape[:, 0].copy(), jobs.shape[:, 1].copy()
    fits = (w <= width) & (h <= height)
    if rotates:
        fits |= (h <= width) & (w <= height)
    if not fits.all():
        i = int(np.flatnonzero(~fits)[0])
        raise SpecError(f"job {jobs.job_id[i]} asks for a {w[i]} x {h[i]} submesh; machine "
                        f"{spec} has none{'' if rotates else ' (this allocator does not rotate)'}"
                        f" ({int((~fits).sum())} such jobs)")
    return w.astype(np.int64), h.astype(np.int64)


def new_mesh(spec: MachineSpec, jobs: Jobs, w: np.ndarray, h: np.ndarray) -> Mesh:
    """A Mesh for `jobs` asking for w x h submeshes of `spec`."""
    width, height = spec.dims2()
    units = width * height
    n = len(jobs)
    cap = min(units, n) + units + 1  # running jobs, forbidden rectangles, one tentative
    est = np.where(jobs.requested_s >= 0, jobs.requested_s, jobs.run_s)
    return Mesh(
        width, height, w, h, est.astype(np.float64), np.zeros((n, 4), dtype=np.int64),
        np.zeros(units, dtype=np.uint8), np.zeros(units, dtype=np.uint8),
        np.zeros(units, dtype=np.int64), np.zeros(units),
        np.zeros((cap, 4), dtype=np.int64), np.zeros(cap), np.zeros(cap, dtype=np.int64),
        np.zeros((2, units, 4), dtype=np.int64), np.zeros((units, 3), dtype=np.int64),
        np.zeros(units, dtype=np.int64),
        np.zeros((3, (width + 1) * (height + 1)), dtype=np.int64),
        np.zeros(width + height + 2, dtype=np.int64), np.zeros(n_words(units), dtype=np.uint64))


def shape_class(mesh: Mesh) -> np.ndarray:
    """Placement class per job: its (w, h); jobs asking for one shape place alike."""
    return mesh.job_w * (mesh.height + 1) + mesh.job_h


def build_struct(struct: type[T], spec: MachineSpec, jobs: Jobs, rotates: bool,
                 *options: object) -> tuple[T, np.ndarray, np.ndarray]:
    """What a 2D-mesh allocator's `build` returns: its struct (units, words, counts_only,
    the Mesh, then `options`), each job's units (w x h) and its placement class (its
    shape). `rotates`: jobs may take h x w where w x h does not fit the mesh."""
    w, h = job_sides(spec, jobs, rotates=rotates)
    mesh = new_mesh(spec, jobs, w, h)
    return (struct(spec.units, mesh.reserved.shape[0], False, mesh, *options), w * h,
            shape_class(mesh))


def register(struct: type, partitions: bool) -> None:
    """Implement the machine operations every 2D-mesh allocator shares for `struct` (a
    NamedTuple with a `mesh` field); `partitions`: it recognises every free submesh, so the
    largest free one is meaningful to schedulers."""
    implements(blocked_cause, struct)(_blocked)
    implements(extents, struct)(_extents)
    if partitions:
        implements(largest_free, struct)(_largest)


@kernel
def _blocked(m, st, j):
    """A job that cannot be placed lacks a free submesh."""
    return BLOCKED_NO_BOX


@kernel
def _extents(m, j, units):
    mesh = m.mesh
    return mesh.job_w[j], mesh.job_h[j], mesh.width, mesh.height


@kernel
def _largest(m, st, busy):
    fill_grid(m.mesh, busy, st.scratch.nothing)
    return largest_free_area(m.mesh)


@kernel
def overlapping(blist, n, x1, y1, x2, y2):
    """Index of the first listed submesh overlapping <x1, y1, x2, y2>, or -1. (A base lies
    in the coverage submesh of a busy submesh exactly when the job placed there overlaps
    it.)"""
    for k in range(n):
        if blist[k, 0] <= x2 and x1 <= blist[k, 2] and blist[k, 1] <= y2 and y1 <= blist[k, 3]:
            return k
    return -1


@kernel
def shared(a1, a2, b1, b2):
    """Length of the overlap of intervals [a1, a2] and [b1, b2] (0 if none)."""
    return max(0, min(a2, b2) - max(a1, b1) + 1)


@kernel
def edge_contact(mesh, x1, y1, x2, y2):
    """The part of a candidate's boundary value the mesh edges give: its sides that lie on
    one."""
    value = 0
    if x1 == 0:
        value += y2 - y1 + 1
    if x2 == mesh.width - 1:
        value += y2 - y1 + 1
    if y1 == 0:
        value += x2 - x1 + 1
    if y2 == mesh.height - 1:
        value += x2 - x1 + 1
    return value


@kernel
def contact(mesh, n, x1, y1, x2, y2):
    """Boundary value of a free candidate <x1, y1, x2, y2>: its busy neighbours, counting
    the nodes beyond a mesh edge as busy (Das Sharma and Pradhan; see `busy_list`)."""
    blist = mesh.blist
    value = edge_contact(mesh, x1, y1, x2, y2)
    for k in range(n):
        if blist[k, 2] == x1 - 1 or blist[k, 0] == x2 + 1:
            value += shared(y1, y2, blist[k, 1], blist[k, 3])
        elif blist[k, 3] == y1 - 1 or blist[k, 1] == y2 + 1:
            value += shared(x1, x2, blist[k, 0], blist[k, 2])
    return value


@kernel
def inside(mesh, x, y, w, h):
    """Whether <x, y, x + w - 1, y + h - 1> lies inside the mesh."""
    return x >= 0 and y >= 0 and x + w <= mesh.width and y + h <= mesh.height


@kernel
def coverage(mesh, w, h):
    """Zhu's coverage array of J(w, h) from the busy array mesh.grid, into mesh.cov:
    cov[i*H + j] = 0 iff <i, j> (i <= W - w, j <= H - h) can be the base of a free w x h
    submesh. Two passes, as Zhu gives them: each row right to left marks the bases left of
    a busy node (left_cov), then each column of that top to bottom marks those below
    (btm_cov), testing the first pass's value before overwriting it."""
    width, height, grid, cov = mesh.width, mesh.height, mesh.grid, mesh.cov
    for j in range(height):
        left_cov = width
        for i in range(width - 1, -1, -1):
            if grid[i * height + j]:
                left_cov = max(i - w + 1, 0)
            if i <= width - w:
                cov[i * height + j] = 1 if i >= left_cov else 0
    for i in range(width - w + 1):
        btm_cov = height
        for j in range(height - 1, -1, -1):
            if cov[i * height + j]:
                btm_cov = max(j - h + 1, 0)
            if j <= height - h:
                cov[i * height + j] = 1 if j >= btm_cov else 0


@kernel
def corners(mesh, w, h):
    """Zhu's corners of the coverage array of J(w, h) (computed by `coverage`): the 0s that
    end their run of 0s both in their row and in their column, into mesh.cand as base x,
    base y and area (row run length x column run length), in First Fit's order (leftmost
    column first, each top to bottom); returns how many."""
    height, cov, runs, cand = mesh.height, mesh.cov, mesh.runs, mesh.cand
    nx, ny = mesh.width - w + 1, mesh.height - h + 1
    for j in range(ny):  # row runs: their ends keep the run's length, others 0
        i = 0
        while i < nx:
            if cov[i * height + j]:
                runs[i * height + j] = 0
                i += 1
                continue
            a = i
            while i < nx and cov[i * height + j] == 0:
                runs[i * height + j] = 0
                i += 1
            runs[a * height + j] = i - a
            runs[(i - 1) * height + j] = i - a
    count = 0
    for i in range(nx):  # column runs
        j = ny - 1
        while j >= 0:
            if cov[i * height + j]:
                j -= 1
                continue
            top = j
            while j >= 0 and cov[i * height + j] == 0:
                j -= 1
            bottom = j + 1
            for end in (top, bottom):
                if runs[i * height + end] and (end == top or bottom != top):
                    cand[count, 0] = i
                    cand[count, 1] = end
                    cand[count, 2] = runs[i * height + end] * (top - bottom + 1)
                    count += 1
    return count


@kernel
def free_regions(mesh, n, w, h):
    """Bhattacharya and Tsai's free regions of J(w, h): starting from the single region of
    every base <0, 0, W - w, H - h>, subtract the coverage submesh of each listed submesh in
    list order. A region R minus a prohibited P becomes, in this order, the part of R left
    of P and the part right of P (both R's full height), then the parts below and above P
    within P's columns; regions P misses stay in place. Returns (buffer, count): the
    regions are mesh.regions[buffer, :count] as <x1, y1, x2, y2> of bases."""
    regions = mesh.regions
    blist = mesh.blist
    if w > mesh.width or h > mesh.height:
        return 0, 0
    cur = 0
    count = 1
    regions[0, 0, 0] = 0
    regions[0, 0, 1] = 0
    regions[0, 0, 2] = mesh.width - w
    regions[0, 0, 3] = mesh.height - h
    for k in range(n):
        px1 = max(0, blist[k, 0] - w + 1)
        py1 = max(0, blist[k, 1] - h + 1)
        px2 = blist[k, 2]
        py2 = blist[k, 3]
        nxt = 1 - cur
        out = 0
        for r in range(count):
            rx1, ry1 = regions[cur, r, 0], regions[cur, r, 1]
            rx2, ry2 = regions[cur, r, 2], regions[cur, r, 3]
            if px1 > rx2 or rx1 > px2 or py1 > ry2 or ry1 > py2:
                out = _region(regions, nxt, out, rx1, ry1, rx2, ry2)
                continue
            cx1, cx2 = max(rx1, px1), min(rx2, px2)
            if rx1 < px1:
                out = _region(regions, nxt, out, rx1, ry1, px1 - 1, ry2)
            if px2 < rx2:
                out = _region(regions, nxt, out, px2 + 1, ry1, rx2, ry2)
            if ry1 < py1:
                out = _region(regions, nxt, out, cx1, ry1, cx2, py1 - 1)
            if py2 < ry2:
                out = _region(regions, nxt, out, cx1, py2 + 1, cx2, ry2)
        cur = nxt
        count = out
        if count == 0:
            break
    return cur, count


@kernel
def _region(regions, buf, out, x1, y1, x2, y2):
    regions[buf, out, 0] = x1
    regions[buf, out, 1] = y1
    regions[buf, out, 2] = x2
    regions[buf, out, 3] = y2
    return out + 1


@kernel
def largest_free_area(mesh):
    """Processors of the largest free submesh in the busy array (any orientation): the
    largest all-free rectangle, by the histogram method row by row."""
    width, height, grid = mesh.width, mesh.height, mesh.grid
    heights, stack = mesh.runs, mesh.stack
    for x in range(width):
        heights[x] = 0
    best = 0
    for y in range(height):
        for x in range(width):
            heights[x] = 0 if grid[x * height + y] else heights[x] + 1
        top = 0
        for x in range(width + 1):
            current = heights[x] if x < width else 0
            while top > 0 and heights[stack[top - 1]] >= current:
                tall = heights[stack[top - 1]]
                top -= 1
                left = stack[top - 1] + 1 if top > 0 else 0
                best = max(best, tall * (x - left))
            stack[top] = x
            top += 1
    return best
