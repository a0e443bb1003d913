"""Optically reconfigurable cube machines (TPU v4-style pods): `cubes:AxBxC:S`.

The machine is A x B x C cubes of S x S x S chips (`cubes:4x4x4:4`: 64 cubes of 4x4x4, 4096
chips); its units are chips, cube c (box-table order over the AxBxC grid) holding units
c S^3 .. (c+1) S^3 - 1, chip (x, y, z) of a cube being its unit (x S + y) S + z.

A job of n chips asks for a chip shape:

- n >= S^3: k whole cubes, k the least cube count >= n / S^3 that is the volume of a
  shape (a, b, c) fitting the AxBxC grid (in some orientation); its shape is, among those
  of k cubes, the most cubic: least longest side, then least sum of sides. The job runs
  on k S^3 chips (the excess is lost capacity): 65 chips on cubes:4x4x4:4 get 4x4x8;
- n < S^3: a box inside one cube, of the least volume >= n that a box of an S x S x S
  torus has (5 chips get 6 on S = 4), placed as on that small torus: Krevat's rule (the
  box leaving the cube's largest free box) in the fullest cube holding a free box of that
  volume (ties: the lowest cube), else in the first idle cube.

With optical switching (`any-cubes`) a job of k cubes takes any k whole free cubes (the
lowest-numbered: all free cubes are alike to it) and is wired as a torus (twisted tori for
some shapes; wiring is not modelled beyond that any cubes will do). With the same cubes
wired as a static AxBxC torus (`cube-boxes`, the variant `boxes`), it takes a box of whole
free cubes of its shape, in any orientation, wrapping around, chosen by Krevat's rule
among boxes of cubes.
A failed chip takes its cube out of service: the failure domains are cubes (a cube of
S^3 chips fails at S^3 times a chip's rate, `simcore.core.failures`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import clear, n_words, popcount64
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, place
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.machines.boxes.allocator import best_box, box_table, free_boxes, n_boxes
from simcore.machines.cubes.grammar import geometry

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


@functools.lru_cache(maxsize=16)
def cube_shapes(grid: tuple[int, int, int]) -> np.ndarray:
    """shapes[k]: the most cubic sorted shape of k cubes fitting the grid ((0, 0, 0): none)."""
    total = grid[0] * grid[1] * grid[2]
    sides = sorted(grid)
    shapes = np.zeros((total + 1, 3), dtype=np.int64)
    for k in range(1, total + 1):
        fits = [(a, b, c) for a in range(1, sides[0] + 1) for b in range(a, sides[1] + 1)
                for c in range(b, sides[2] + 1) if a * b * c == k]
        if fits:
            shapes[k] = min(fits, key=lambda s: (s[2], sum(s), s))
    return shapes


def chips_run(spec: MachineSpec, size: np.ndarray) -> np.ndarray:
    """The chips each job of `size` chips runs on (module docstring)."""
    grid, side = geometry(spec.argument)
    cube = side ** 3
    local = box_table((side, side, side), True).feasible
    shapes = cube_shapes(grid)
    whole = np.flatnonzero(shapes[:, 0] > 0)
    out = np.empty(size.shape[0], dtype=np.int64)
    small = size < cube
    smallest = np.flatnonzero(local)
    out[small] = smallest[np.searchsorted(smallest, size[small])]
    k = whole[np.searchsorted(whole, -(-size[~small] // cube))]
    out[~small] = k * cube
    return out


class CubeMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    side: int
    cube: int  # chips per cube, S^3
    cubes: int
    static: bool  # cube-boxes: whole-cube jobs take a box of the static torus of cubes
    local_masks: np.ndarray  # (boxes of SxSxS, local words) uint64, volume-descending
    local_volume: np.ndarray
    local_free: np.ndarray  # scratch: boxes free in one cube
    local_busy: np.ndarray  # (local words,) scratch: one cube's busy chips
    local_forbid: np.ndarray  # (local words,) scratch: its forbidden chips
    grid_masks: np.ndarray  # (boxes of AxBxC, grid words) uint64, volume-descending
    grid_volume: np.ndarray
    grid_shape: np.ndarray  # (boxes, 3) int64: each box's sorted shape
    grid_free: np.ndarray  # scratch
    grid_busy: np.ndarray  # (grid words,) scratch: cubes not whole and free
    shapes: np.ndarray  # (cubes + 1, 3): the shape of a job of k cubes
    order: np.ndarray  # (cubes,) int64 scratch: candidate cubes
    spare: np.ndarray  # (cubes,) int64 scratch: their free chips


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the box tables of one cube and of the grid of cubes."""
    grid, side = geometry(spec.argument)
    return (n_boxes((side,) * 3, True) * (n_words(side ** 3) * 8 + 16)
            + n_boxes(grid, True) * (n_words(grid[0] * grid[1] * grid[2]) * 8 + 40))


def build(spec: MachineSpec, jobs: Jobs, *,
          boxes: bool) -> tuple[CubeMachine, np.ndarray, np.ndarray]:
    """The machine struct (`boxes`: cubes wired as a static torus), each job's chips (its
    shape's volume) and class (that size)."""
    grid, side = geometry(spec.argument)
    local = box_table((side, side, side), True)
    cells = box_table(grid, True)
    cubes = grid[0] * grid[1] * grid[2]
    lw, gw = n_words(side ** 3), n_words(cubes)
    machine = CubeMachine(
        spec.units, n_words(spec.units), False, side, side ** 3, cubes,
        boxes, local.masks, local.volume,
        np.zeros(local.volume.shape[0], dtype=np.int64), np.zeros(lw, dtype=np.uint64),
        np.zeros(lw, dtype=np.uint64), cells.masks, cells.volume,
        np.sort(cells.shape, axis=1), np.zeros(cells.volume.shape[0], dtype=np.int64),
        np.zeros(gw, dtype=np.uint64), cube_shapes(grid), np.zeros(cubes, dtype=np.int64),
        np.zeros(cubes, dtype=np.int64))
    size = chips_run(spec, jobs.size)
    return machine, size, size


def failure_domains(struct: CubeMachine) -> tuple[np.ndarray, np.ndarray]:
    """One domain per cube: its S^3 chips."""
    masks = np.zeros((struct.cubes, struct.words), dtype=np.uint64)
    for c in range(struct.cubes):
        _fill(masks[c], c * struct.cube, struct.cube)
    return masks, np.full(struct.cubes, struct.cube, dtype=np.int64)


@kernel
def _extract(src, offset, n, dst):
    """dst = the n bits of `src` from bit `offset` on."""
    for i in range(dst.shape[0]):
        start = offset + 64 * i
        w = start >> 6
        shift = start & 63
        value = src[w] >> np.uint64(shift)
        if shift and w + 1 < src.shape[0]:
            value |= src[w + 1] << np.uint64(64 - shift)
        left = n - 64 * i
        if left < 64:
            value &= (np.uint64(1) << np.uint64(left)) - np.uint64(1)
        dst[i] = value


@kernel
def _deposit(dst, offset, src):
    """Set in `dst` the bits of `src`, shifted to start at bit `offset`."""
    for i in range(src.shape[0]):
        value = src[i]
        start = offset + 64 * i
        w = start >> 6
        shift = start & 63
        dst[w] |= value << np.uint64(shift)
        if shift and w + 1 < dst.shape[0]:
            dst[w + 1] |= value >> np.uint64(64 - shift)


@kernel
def _fill(dst, offset, n):
    """Set bits offset .. offset + n - 1 of `dst`."""
    for b in range(offset, offset + n):
        dst[b >> 6] |= np.uint64(1) << np.uint64(b & 63)


@kernel
def _cube_state(m, c, busy, forbidden):
    """Load cube c's busy (and forbidden) chips into m.local_busy (m.local_forbid);
    return its free chips that are not forbidden."""
    _extract(busy, c * m.cube, m.cube, m.local_busy)
    used = 0
    for w in range(m.local_busy.shape[0]):
        used += popcount64(m.local_busy[w])
    if forbidden.shape[0] > 0:
        _extract(forbidden, c * m.cube, m.cube, m.local_forbid)
        for w in range(m.local_busy.shape[0]):
            used += popcount64(m.local_forbid[w] & ~m.local_busy[w])
    return m.cube - used


@kernel
def _place_in_a_cube(m, units, busy, forbidden, out):
    """A box of `units` chips in the fullest cube holding one (module docstring)."""
    guarded = forbidden.shape[0] > 0
    n = 0
    for c in range(m.cubes):  # candidates by free chips, then cube: insertion sort
        free = _cube_state(m, c, busy, forbidden)
        if free < units:
            continue
        k = n
        while k > 0 and m.spare[k - 1] > free:
            m.order[k] = m.order[k - 1]
            m.spare[k] = m.spare[k - 1]
            k -= 1
        m.order[k] = c
        m.spare[k] = free
        n += 1
    for i in range(n):
        c = m.order[i]
        _cube_state(m, c, busy, forbidden)
        n_free = free_boxes(m.local_masks, m.local_busy, m.local_free)
        b = best_box(m.local_masks, m.local_volume, m.local_free, n_free, units,
                     m.local_forbid if guarded else m.local_forbid[:0])
        if b >= 0:
            clear(out)
            _deposit(out, c * m.cube, m.local_masks[b])
            return units
    return -1


@kernel
def _place_cubes(m, k, busy, forbidden, out):
    """k whole free cubes: the lowest-numbered ones, or with a static torus of cubes the
    box of its shape that leaves the largest free box of cubes (ties: the first)."""
    clear(m.grid_busy)
    n_whole = 0
    for c in range(m.cubes):
        if _cube_state(m, c, busy, forbidden) < m.cube:
            m.grid_busy[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
        else:
            n_whole += 1
    if n_whole < k:
        return -1
    clear(out)
    if not m.static:
        taken = 0
        for c in range(m.cubes):
            if not (m.grid_busy[c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                _fill(out, c * m.cube, m.cube)
                taken += 1
                if taken == k:
                    return k * m.cube
    n_free = free_boxes(m.grid_masks, m.grid_busy, m.grid_free)
    ceiling = m.grid_volume[m.grid_free[0]]
    best = -1
    best_left = -1
    for i in range(n_free):
        box = m.grid_free[i]
        if m.grid_volume[box] < k:
            break
        if m.grid_volume[box] > k or m.grid_shape[box, 0] != m.shapes[k, 0] or \
                m.grid_shape[box, 1] != m.shapes[k, 1] or m.grid_shape[box, 2] != m.shapes[k, 2]:
            continue
        left = 0
        for q in range(n_free):
            disjoint = True
            for w in range(m.grid_busy.shape[0]):
                if m.grid_masks[m.grid_free[q], w] & m.grid_masks[box, w]:
                    disjoint = False
                    break
            if disjoint:
                left = m.grid_volume[m.grid_free[q]]
                break
        if left > best_left:
            best, best_left = box, left
            if left == ceiling:
                break
    if best < 0:
        return -1
    for c in range(m.cubes):
        if (m.grid_masks[best, c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
            _fill(out, c * m.cube, m.cube)
    return k * m.cube


@implements(place, CubeMachine)
@kernel
def place_cubes(m, st, j, units, busy, growth, forbidden, out):
    """A job's chips: whole cubes, or a box inside one cube (growth does not apply)."""
    if units >= m.cube:
        return _place_cubes(m, units // m.cube, busy, forbidden, out)
    return _place_in_a_cube(m, units, busy, forbidden, out)


@implements(blocked_cause, CubeMachine)
@kernel
def blocked_cube(m, st, j):
    """A job that cannot be placed lacks free chips of its shape."""
    return BLOCKED_NO_BOX
