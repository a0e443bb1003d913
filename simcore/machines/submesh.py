"""The submesh contract: what an allocator of capability `submeshes` (Chu's 2D-mesh
allocators, `simcore.machines.mesh2d`) keeps in its struct's `mesh` field, a `Mesh`, and
the kernels that read and write it, which every family of such allocators and every
scheduler relying on the capability (`simcore.schedulers.priority`'s reservations) share:

- the busy array B (`fill_grid`): 1 where a node is busy, from the occupancy bitset;
- the busy list (`busy_list`): the submeshes of the running jobs in allocation order, as
  Chu's list-based strategies keep it (appended at allocation, removed at release), followed
  by rectangles covering any forbidden (reserved) processors, which count as busy;
- a submesh's bitset (`write_rect`) and giving it to a job (`assign`).

Node <x, y> of a W x H mesh is unit (and bit) x * H + y (`simcore.machines.mesh2d.grid`
describes the geometry).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.base.jit import kernel
from simcore.core.state import N_ACTIVE


class Mesh(NamedTuple):
    """Geometry, the jobs' requests and placements, and scratch of a 2D-mesh allocator."""

    width: int
    height: int
    job_w: np.ndarray  # (jobs,) int64: columns each job asks for
    job_h: np.ndarray  # (jobs,) int64: rows
    est: np.ndarray  # (jobs,) float64: estimated run time (requested time, else run time)
    rect: np.ndarray  # (jobs, 4) int64: x, y, w, h of each job's last placement
    grid: np.ndarray  # (W*H,) uint8 scratch: busy array, node <x, y> at x*H + y
    cov: np.ndarray  # (W*H,) uint8 scratch: coverage array, indexed like grid
    runs: np.ndarray  # (W*H,) int64 scratch: run lengths, histogram heights
    ect: np.ndarray  # (W*H,) float64 scratch: estimated completion of a busy node's job
    blist: np.ndarray  # (cap, 4) int64 scratch: busy list <x1, y1, x2, y2>
    bect: np.ndarray  # (cap,) float64 scratch: estimated completion of each listed submesh
    bkey: np.ndarray  # (cap,) int64 scratch: the listed jobs
    regions: np.ndarray  # (2, W*H, 4) int64 scratch: free regions, two buffers
    cand: np.ndarray  # (W*H, 3) int64 scratch: candidate bases x, y and a score
    order: np.ndarray  # (W*H,) int64 scratch
    sums: np.ndarray  # (3, (W+1)*(H+1)) int64 scratch: prefix sums of the busy array
    stack: np.ndarray  # (W + H + 2,) int64 scratch
    reserved: np.ndarray  # (words,) uint64: processors reserved by a scheduler


@kernel
def bit(bits, u):
    """Whether bit u of a bitset is set."""
    return (bits[u >> 6] >> np.uint64(u & 63)) & np.uint64(1) != 0


@kernel
def fill_grid(mesh, busy, forbidden):
    """The busy array: mesh.grid[x*H + y] = 1 where node <x, y> is busy or forbidden."""
    grid = mesh.grid
    guarded = forbidden.shape[0] > 0
    for u in range(grid.shape[0]):
        word = busy[u >> 6]
        if guarded:
            word |= forbidden[u >> 6]
        grid[u] = (word >> np.uint64(u & 63)) & np.uint64(1)


@kernel
def write_rect(mesh, x, y, w, h, out):
    """out = the bitset of submesh <x, y, x + w - 1, y + h - 1>."""
    for k in range(out.shape[0]):
        out[k] = 0
    height = mesh.height
    for i in range(x, x + w):
        for u in range(i * height + y, i * height + y + h):
            out[u >> 6] |= np.uint64(1) << np.uint64(u & 63)


@kernel
def assign(mesh, j, x, y, w, h, out):
    """Give job j submesh <x, y, x + w - 1, y + h - 1>: remember it, write its bitset to
    `out`, return its units."""
    mesh.rect[j, 0] = x
    mesh.rect[j, 1] = y
    mesh.rect[j, 2] = w
    mesh.rect[j, 3] = h
    write_rect(mesh, x, y, w, h, out)
    return w * h


@kernel
def busy_list(mesh, st, busy, forbidden):
    """The busy list of occupancy `busy` into mesh.blist (see the module docstring), with
    each running job's estimated completion time (allocation + estimate) in mesh.bect
    (forbidden rectangles: -inf, long overdue); returns its length."""
    blist, bect, bkey, rect, est = mesh.blist, mesh.bect, mesh.bkey, mesh.rect, mesh.est
    sched, active, slot_job = st.out.sched_s, st.run.active, st.run.slot_job
    height = mesh.height
    n = 0
    for i in range(st.ctr[N_ACTIVE]):
        j = slot_job[active[i]]
        if not bit(busy, rect[j, 0] * height + rect[j, 1]):
            continue
        k = n  # insertion by (allocation time, job)
        while k > 0 and (sched[bkey[k - 1]] > sched[j] or
                         (sched[bkey[k - 1]] == sched[j] and bkey[k - 1] > j)):
            bkey[k] = bkey[k - 1]
            k -= 1
        bkey[k] = j
        n += 1
    for k in range(n):
        j = bkey[k]
        blist[k, 0] = rect[j, 0]
        blist[k, 1] = rect[j, 1]
        blist[k, 2] = rect[j, 0] + rect[j, 2] - 1
        blist[k, 3] = rect[j, 1] + rect[j, 3] - 1
        bect[k] = sched[j] + est[j]
    if forbidden.shape[0] > 0:
        n = _forbidden_rects(mesh, forbidden, n)
    return n


@kernel
def _forbidden_rects(mesh, forbidden, n):
    """Append rectangles covering exactly the forbidden nodes to the busy list (greedy:
    each unmarked forbidden node grows up its column, then right while whole columns of it
    are forbidden); returns the new length."""
    any_bit = False
    for k in range(forbidden.shape[0]):
        if forbidden[k]:
            any_bit = True
    if not any_bit:
        return n
    width, height, mark, blist, bect = mesh.width, mesh.height, mesh.cov, mesh.blist, mesh.bect
    for u in range(width * height):
        mark[u] = 1 if bit(forbidden, u) else 0
    for x in range(width):
        for y in range(height):
            if not mark[x * height + y]:
                continue
            y2 = y
            while y2 + 1 < height and mark[x * height + y2 + 1]:
                y2 += 1
            x2 = x
            while x2 + 1 < width:
                whole = True
                for yy in range(y, y2 + 1):
                    if not mark[(x2 + 1) * height + yy]:
                        whole = False
                        break
                if not whole:
                    break
                x2 += 1
            for xx in range(x, x2 + 1):
                for yy in range(y, y2 + 1):
                    mark[xx * height + yy] = 0
            blist[n, 0] = x
            blist[n, 1] = y
            blist[n, 2] = x2
            blist[n, 3] = y2
            bect[n] = -np.inf
            n += 1
    return n
