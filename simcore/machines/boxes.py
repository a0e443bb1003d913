"""Box tables of torus and mesh machines, and placement by the largest-free-partition rule.

A box is a contiguous rectangular partition: a base unit and a size per dimension, wrapping
around in every dimension of a torus (a full-length extent has one base only, as all bases
give the same set). The table lists every distinct box as a bitmask over the machine's units
(unit (x, y, z) is bit (x*Y + y)*Z + z), ordered by volume, largest first, and within a
volume by shape (a, b, c) then base (x, y, z), both lexicographic. That one order serves
both questions the schedulers ask:

- the largest free partition is the volume of the first box that does not intersect the
  occupied units (`largest_free`);
- the candidate placements of a job of size p are the free boxes of volume p, in the
  "predictable incremental" order Krevat's FCFS scans them.

Krevat's heuristic places a job where the largest free partition left afterwards is
largest; ties go to the first candidate. `best_box` evaluates a candidate against the list
of boxes free now (`free_boxes`): the first of them disjoint from the candidate is the
largest partition left. As no placement can leave more than the current largest free
partition, the scan stops at the first candidate that keeps it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numba import njit

from simcore.bitset import intersects, n_words
from simcore.errors import SpecError
from simcore.jit import kernel

MAX_TABLE_BYTES = 512 * 2**20


@dataclass(frozen=True, eq=False)
class BoxTable:
    """All distinct boxes of a machine, as arrays for numba kernels."""

    dims: tuple[int, int, int]
    wrap: bool
    masks: np.ndarray  # (n_boxes, n_words) uint64
    volume: np.ndarray  # (n_boxes,) int64, non-increasing
    shape: np.ndarray  # (n_boxes, 3) int64
    base: np.ndarray  # (n_boxes, 3) int64
    volume_lo: np.ndarray  # (units + 1,) int64: boxes of volume v are volume_lo[v]:volume_hi[v]
    volume_hi: np.ndarray

    @property
    def units(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    @property
    def feasible(self) -> np.ndarray:
        """feasible[p]: whether some box has volume p."""
        return self.volume_hi > self.volume_lo


def extents(length: int, wrap: bool) -> list[tuple[int, int]]:
    """(size, base) of every distinct interval of a line, sizes ascending."""
    out = []
    for size in range(1, length + 1):
        if wrap and size == length:
            out.append((size, 0))
        else:
            last = length - 1 if wrap else length - size
            out.extend((size, base) for base in range(last + 1))
    return out


@functools.lru_cache(maxsize=16)
def box_table(dims: tuple[int, int, int], wrap: bool) -> BoxTable:
    """Build (once per process) the box table of a machine of `dims` units."""
    per_dim = [extents(d, wrap) for d in dims]
    n_boxes = len(per_dim[0]) * len(per_dim[1]) * len(per_dim[2])
    units = dims[0] * dims[1] * dims[2]
    words = n_words(units)
    if n_boxes * words * 8 > MAX_TABLE_BYTES:
        raise SpecError(
            f"machine {'x'.join(map(str, dims))}: its box table would take "
            f"{n_boxes * words * 8 / 2**30:.1f} GiB ({n_boxes} boxes); box-table machines are "
            f"limited to {MAX_TABLE_BYTES // 2**20} MiB"
        )
    shape = np.empty((n_boxes, 3), dtype=np.int64)
    base = np.empty((n_boxes, 3), dtype=np.int64)
    i = 0
    # Lexicographic shape, then lexicographic base: the candidate order within a volume.
    for a in range(1, dims[0] + 1):
        for b in range(1, dims[1] + 1):
            for c in range(1, dims[2] + 1):
                for xa, x in per_dim[0]:
                    if xa != a:
                        continue
                    for yb, y in per_dim[1]:
                        if yb != b:
                            continue
                        for zc, z in per_dim[2]:
                            if zc != c:
                                continue
                            shape[i] = (a, b, c)
                            base[i] = (x, y, z)
                            i += 1
    volume = shape.prod(axis=1)
    order = np.argsort(-volume, kind="stable")
    shape, base, volume = shape[order], base[order], volume[order]
    masks = np.zeros((n_boxes, words), dtype=np.uint64)
    _fill_masks(masks, shape, base, np.array(dims, dtype=np.int64))
    counts = np.bincount(volume, minlength=units + 1)
    volume_hi = np.cumsum(counts[::-1])[::-1].astype(np.int64)  # boxes with volume >= v
    volume_lo = volume_hi - counts
    return BoxTable(dims, wrap, masks, volume, shape, base, volume_lo, volume_hi)


@njit(cache=True)
def _fill_masks(masks, shape, base, dims):
    for i in range(masks.shape[0]):
        for dx in range(shape[i, 0]):
            x = (base[i, 0] + dx) % dims[0]
            for dy in range(shape[i, 1]):
                y = (base[i, 1] + dy) % dims[1]
                for dz in range(shape[i, 2]):
                    z = (base[i, 2] + dz) % dims[2]
                    u = (x * dims[1] + y) * dims[2] + z
                    masks[i, u >> 6] |= np.uint64(1) << np.uint64(u & 63)


@kernel
def largest_free(masks, volume, occupied) -> int:
    """Volume of the largest box disjoint from `occupied` (0 if the machine is full)."""
    for i in range(masks.shape[0]):
        if not intersects(masks[i], occupied):
            return volume[i]
    return 0


@kernel
def free_boxes(masks, occupied, out) -> int:
    """Write the indices of boxes disjoint from `occupied` to `out`, in table order."""
    n = 0
    for i in range(masks.shape[0]):
        if not intersects(masks[i], occupied):
            out[n] = i
            n += 1
    return n


@kernel
def volume_range(volume, free, n_free, p):
    """[lo, hi) of the entries of `free[:n_free]` whose box volume is p (volumes descend)."""
    lo = 0
    hi = n_free
    while lo < hi:  # first entry with volume <= p
        mid = (lo + hi) // 2
        if volume[free[mid]] > p:
            lo = mid + 1
        else:
            hi = mid
    end = lo
    while end < n_free and volume[free[end]] == p:
        end += 1
    return lo, end


@kernel
def best_box(masks, volume, free, n_free, p, forbidden, use_forbidden) -> int:
    """Krevat's choice among free boxes of volume p: maximise the largest partition left.

    `free[:n_free]` lists the boxes free now; candidates intersecting `forbidden` (a
    reservation) are skipped when `use_forbidden`. Returns a box index or -1.
    """
    lo, hi = volume_range(volume, free, n_free, p)
    if lo == hi:
        return -1
    ceiling = volume[free[0]]
    best = -1
    best_left = -1
    for k in range(lo, hi):
        candidate = masks[free[k]]
        if use_forbidden and intersects(candidate, forbidden):
            continue
        left = 0
        for m in range(n_free):
            if not intersects(masks[free[m]], candidate):
                left = volume[free[m]]
                break
        if left > best_left:
            best_left = left
            best = free[k]
            if left == ceiling:
                break
    return best
