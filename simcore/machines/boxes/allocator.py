"""Box tables of torus and mesh machines, and placement by the largest-free-partition rule.

A box is a contiguous rectangular partition of a machine of any number of dimensions: a base
unit and a size per dimension, wrapping around in every dimension of a torus (a full-length
extent has one base only, as all bases give the same set). The table lists every distinct
box as a bitmask over the machine's units (units are numbered row-major: in 3D, unit
(x, y, z) is bit (x*Y + y)*Z + z), ordered by volume, largest first, and within a volume by
shape (a, b, c, ...) then base (x, y, z, ...), both lexicographic. That one order serves
both questions the schedulers ask:

- the largest free partition is the volume of the first box that does not intersect the
  occupied units (`largest_free_volume`);
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
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import copy_into, intersects, n_words
from simcore.base.jit import implements, kernel, njit_cached
from simcore.core.allocate import blocked_cause, largest_free, place
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.machines.boxes import maximal
from simcore.machines.contract import check_memory

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


#: Largest box table `search: auto` builds (8x8x8 has 185,193 boxes); larger machines use
#: maximal free boxes, which are faster there (measured by `simcore bench`).
TABLE_MAX_BOXES = 200_000


@dataclass(frozen=True, eq=False)
class BoxTable:
    """All distinct boxes of a machine, as arrays for numba kernels."""

    dims: tuple[int, ...]
    wrap: bool
    masks: np.ndarray  # (n_boxes, n_words) uint64
    volume: np.ndarray  # (n_boxes,) int64, non-increasing
    shape: np.ndarray  # (n_boxes, dims) int64
    base: np.ndarray  # (n_boxes, dims) int64
    volume_lo: np.ndarray  # (units + 1,) int64: boxes of volume v are volume_lo[v]:volume_hi[v]
    volume_hi: np.ndarray

    @functools.cached_property
    def columns(self) -> np.ndarray:
        """The masks word-major: (n_words, n_boxes)."""
        return np.ascontiguousarray(self.masks.T)

    @property
    def units(self) -> int:
        return int(np.prod(self.dims))

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
def box_table(dims: tuple[int, ...], wrap: bool) -> BoxTable:
    """Build (once per process) the box table of a machine of `dims` units."""
    count = n_boxes(dims, wrap)
    units = int(np.prod(dims))
    words = n_words(units)
    check_memory(f"the box table of a {'x'.join(map(str, dims))} machine ({count} boxes)",
                 count * words * 8)
    # Every combination of one extent per dimension, ordered by shape, then base (both
    # lexicographic: the candidate order within a volume), then stably by volume, largest
    # first.
    per_dim = [np.array(extents(d, wrap), dtype=np.int64).reshape(-1, 2) for d in dims]
    grids = np.meshgrid(*[np.arange(len(e)) for e in per_dim], indexing="ij")
    index = [g.ravel() for g in grids]
    shape = np.stack([e[i, 0] for e, i in zip(per_dim, index, strict=True)], axis=1)
    base = np.stack([e[i, 1] for e, i in zip(per_dim, index, strict=True)], axis=1)
    order = np.lexsort([*base.T[::-1], *shape.T[::-1]])
    shape, base = shape[order], base[order]
    volume = shape.prod(axis=1)
    order = np.argsort(-volume, kind="stable")
    shape, base, volume = shape[order], base[order], volume[order]
    masks = np.zeros((count, words), dtype=np.uint64)
    _fill_masks(masks, shape, base, np.array(dims, dtype=np.int64))
    counts = np.bincount(volume, minlength=units + 1)
    volume_hi = np.cumsum(counts[::-1])[::-1].astype(np.int64)  # boxes with volume >= v
    volume_lo = volume_hi - counts
    return BoxTable(tuple(dims), wrap, masks, volume, shape, base, volume_lo, volume_hi)


@njit_cached
def _fill_masks(masks, shape, base, dims):
    n = dims.shape[0]
    offset = np.zeros(n, dtype=np.int64)
    for i in range(masks.shape[0]):
        offset[:] = 0
        while True:  # every offset within the box, last dimension fastest
            u = 0
            for k in range(n):
                u = u * dims[k] + (base[i, k] + offset[k]) % dims[k]
            masks[i, u >> 6] |= np.uint64(1) << np.uint64(u & 63)
            k = n - 1
            while k >= 0:
                offset[k] += 1
                if offset[k] < shape[i, k]:
                    break
                offset[k] = 0
                k -= 1
            if k < 0:
                break


@kernel
def largest_free_volume(masks, volume, occupied) -> int:
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
def free_boxes_by_word(columns, occupied, hits, out) -> int:
    """`free_boxes` from the word-major masks (`columns`): per word, one branch-free pass
    over every box (which the compiler vectorises; `hits` is scratch), then the free
    ones. Much faster where the table is listed often (the largest-free allocator)."""
    n = columns.shape[1]
    for i in range(n):
        hits[i] = 0
    for w in range(columns.shape[0]):
        word = occupied[w]
        if word:
            column = columns[w]
            for i in range(n):
                hits[i] |= column[i] & word
    count = 0
    for i in range(n):
        out[count] = i
        count += hits[i] == 0
    return count


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
def best_box(masks, volume, free, n_free, p, forbidden) -> int:
    """Krevat's choice among free boxes of volume p: maximise the largest partition left.

    `free[:n_free]` lists the boxes free now; candidates intersecting `forbidden` (a
    reservation; empty for none) are skipped. Returns a box index or -1.
    """
    lo, hi = volume_range(volume, free, n_free, p)
    if lo == hi:
        return -1
    ceiling = volume[free[0]]
    guarded = forbidden.shape[0] > 0
    best = -1
    best_left = -1
    for k in range(lo, hi):
        candidate = masks[free[k]]
        if guarded and intersects(candidate, forbidden):
            continue
        left = 0
        for m in range(n_free):
            if volume[free[m]] <= best_left:
                break  # whatever it leaves, it does not beat the best candidate so far
            if not intersects(masks[free[m]], candidate):
                left = volume[free[m]]
                break
        if left > best_left:
            best_left = left
            best = free[k]
            if left == ceiling:
                break
    return best


class BoxMachine(NamedTuple):
    """A torus or mesh whose jobs get boxes from its box table (the `largest-free`
    allocator), with the list of boxes free in the occupancy last asked about."""

    units: int
    words: int
    counts_only: bool
    masks: np.ndarray  # (boxes, words) uint64, volume-descending
    columns: np.ndarray  # (words, boxes) uint64: the same masks word by word, so that
    # listing the free boxes is one vectorised pass per word
    volume: np.ndarray  # (boxes,) int64
    feasible: np.ndarray  # (units + 1,) bool: some box has this volume
    free_list: np.ndarray  # (boxes,) int64 scratch: boxes free in `listed_for`
    hits: np.ndarray  # (boxes,) uint64 scratch: where each box meets the occupancy
    listed_for: np.ndarray  # (words,) uint64: the occupancy free_list describes
    n_listed: np.ndarray  # (1,) int64: entries of free_list, -1 before the first listing


def n_boxes(dims: tuple[int, ...], wrap: bool) -> int:
    """Distinct boxes of a machine (what its table holds), counted without listing them:
    per dimension of length d, d bases for each size below d plus one full extent on a
    torus, d - size + 1 bases per size on a mesh."""
    total = 1
    for d in dims:
        total *= (d - 1) * d + 1 if wrap else d * (d + 1) // 2
    return total


def uses_table(spec: MachineSpec) -> bool:
    """Whether the machine's search is the box table (option `search`; `auto`: up to
    TABLE_MAX_BOXES boxes) rather than maximal free boxes."""
    search = spec.option("search")
    return search == "table" or (search == "auto"
                                 and n_boxes(spec.dims, spec.wrap) <= TABLE_MAX_BOXES)


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the box table and its scratch (or of the maximal-box search)."""
    if not uses_table(spec):
        return maximal.memory_bytes(spec)
    boxes = n_boxes(spec.dims, spec.wrap)
    return boxes * (n_words(spec.units) * 8 + 16) + spec.units


def build(spec: MachineSpec, jobs: Jobs) -> tuple[NamedTuple, np.ndarray, np.ndarray]:
    """The machine struct, each job's size rounded up at arrival to the smallest volume some
    box has, and its placement class (jobs of one rounded size place alike); machines
    beyond the box table's size get the maximal-box search (`uses_table`)."""
    if not uses_table(spec):
        return maximal.build(spec, jobs)
    table = box_table(spec.dims, spec.wrap)
    words = n_words(spec.units)
    count = table.volume.shape[0]
    machine = BoxMachine(spec.units, words, False, table.masks, table.columns, table.volume,
                         table.feasible, np.zeros(count, dtype=np.int64),
                         np.zeros(count, dtype=np.uint64), np.zeros(words, dtype=np.uint64),
                         np.full(1, -1, dtype=np.int64))
    feasible = np.flatnonzero(table.feasible)
    size = feasible[np.searchsorted(feasible, jobs.size)]
    return machine, size, size


#: How an occupancy relates to the one the free list describes (`relation`).
SAME, GROWN, OTHER = 0, 1, 2


@kernel
def relation(m, busy):
    """SAME: the free list describes `busy`; GROWN: `busy` only adds units to what it
    describes; OTHER: anything else (or nothing listed yet)."""
    if m.n_listed[0] < 0:
        return OTHER
    listed_for = m.listed_for
    kind = SAME
    for w in range(busy.shape[0]):
        if listed_for[w] != busy[w]:
            if listed_for[w] & ~busy[w]:
                return OTHER
            kind = GROWN
    return kind


@kernel
def listed(m, busy):
    """The boxes free in occupancy `busy`, listed into m.free_list (kept while `busy` stays
    the same); returns how many there are. When `busy` only adds units to the occupancy
    listed last (jobs starting, a migration placing jobs one by one), the boxes free now
    are those of the last list that stay free: the list is filtered, not rebuilt."""
    kind = relation(m, busy)
    if kind == SAME:
        return m.n_listed[0]
    if kind == GROWN:  # keep the boxes that miss the added units, word by word
        columns, free_list, listed_for = m.columns, m.free_list, m.listed_for
        n = m.n_listed[0]
        for w in range(busy.shape[0]):
            added = busy[w] & ~listed_for[w]
            if added:
                column = columns[w]
                kept = 0
                for k in range(n):
                    box = free_list[k]
                    free_list[kept] = box
                    kept += (column[box] & added) == 0
                n = kept
        copy_into(listed_for, busy)
        m.n_listed[0] = n
        return n
    copy_into(m.listed_for, busy)
    m.n_listed[0] = free_boxes_by_word(m.columns, busy, m.hits, m.free_list)
    return m.n_listed[0]


@implements(place, BoxMachine)
@kernel
def place_box(m, st, j, units, busy, growth, forbidden, out):
    """Krevat's heuristic over every box of the smallest feasible volume from `units` to
    `units + growth` that has a free candidate."""
    n_free = listed(m, busy)
    if n_free == 0:
        return -1
    top = min(units + growth, m.volume[m.free_list[0]])
    for q in range(units, top + 1):
        if not m.feasible[q]:
            continue
        b = best_box(m.masks, m.volume, m.free_list, n_free, q, forbidden)
        if b >= 0:
            copy_into(out, m.masks[b])
            return q
    return -1


@implements(largest_free, BoxMachine)
@kernel
def largest_free_box(m, st, busy):
    """Volume of the largest free box in `busy`: from the list when it describes `busy` or
    a filtering of it does, else by a scan that stops at the first free box, leaving the
    list to the occupancy placements ask about (backfilling asks this of several
    hypothetical occupancies per decision)."""
    if relation(m, busy) == OTHER:
        return largest_free_volume(m.masks, m.volume, busy)
    n_free = listed(m, busy)
    return m.volume[m.free_list[0]] if n_free > 0 else 0


@implements(blocked_cause, BoxMachine)
@kernel
def blocked_box(m, st, j):
    """A job that cannot be placed lacks a free box."""
    return BLOCKED_NO_BOX
