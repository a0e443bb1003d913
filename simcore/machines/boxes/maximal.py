"""Krevat's largest-free-partition rule on tori and meshes of any size, without a box table.

The rule is the box table's (`simcore.machines.boxes.allocator`): among the free boxes of the job's
volume, in the order shape then base (both lexicographic, in any number of dimensions),
take the first that leaves the largest free partition largest; stop at the first one that
keeps the current largest free partition. What differs is how "the largest free partition
left by candidate C" is found without listing every box of the machine.

Maximal free boxes. A free box is maximal if no dimension of it can be extended by one unit
and stay free. Every free box lies inside a maximal one, so if a family S of free boxes
contains every maximal one (it may hold more), the largest free box disjoint from C is the
largest box of some M \\ C, M in S. Two boxes are disjoint exactly when their extents are
disjoint along some dimension, so the largest box of M avoiding C keeps M's extents except
along one dimension i, where it takes the longest piece of M's extent outside C's:

    left(C) = max over M in S of  vol(M)                                if M, C disjoint,
                                  max_i piece_i(M, C) * vol(M) / |M_i|  otherwise.

With S sorted by volume, largest first, a candidate's scan stops as soon as vol(M) cannot
beat what it has (or what the best candidate so far has). The largest free partition is
the volume of S's first box.

Enumerating S (`_cover`): the free units along one axis of at most 64 units (the "bit
axis", the longest such) are one word per row; choosing an extent along each other axis,
one after the other, ANDs the rows it spans. An extent whose AND is contained in the AND
one unit further (either side) is skipped with everything below it: every box it could
produce extends by that unit, so none is maximal. The runs of ones of the last AND are the
boxes' extents along the bit axis. On an empty or a regularly filled machine this visits
few extents; the family is recomputed only when the occupancy asked about changes.

The free boxes of a shape are those with a base in the base range of a family box large
enough to hold it. Where a reservation is to be avoided, candidates come from the family of
the units neither busy nor reserved, and are scored against the family of the free units.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import clear, copy_into, n_words
from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, largest_free, place
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

#: Longest bit axis: one machine word per row.
MAX_BIT_AXIS = 64
#: The two families of boxes kept: of the free units (scores, the largest free partition),
#: and of the units neither busy nor reserved (where a guarded candidate may go).
FREE, ROOM = 0, 1


class MaximalMachine(NamedTuple):
    """A torus or mesh placed by the largest-free rule through maximal free boxes."""

    units: int
    words: int
    counts_only: bool
    wrap: bool
    dims: np.ndarray  # (n,) int64 sides
    strides: np.ndarray  # (n,) int64: unit index = sum(coordinate * stride)
    axes: np.ndarray  # (n,) int64: the other axes in order, then the bit axis
    row_unit: np.ndarray  # (rows,) int64: unit at bit-axis coordinate 0 of each row
    cells: np.ndarray  # (n,) int64: words of the AND below level l (cells[0]: the rows)
    g_off: np.ndarray  # (n,) int64: where level l's words start in `g`
    g: np.ndarray  # (sum(cells),) uint64 scratch: the rows, then each level's AND
    start: np.ndarray  # (n,) int64 scratch: extent chosen at each level: base,
    length: np.ndarray  # (n,) int64 scratch: ... and length
    lo: np.ndarray  # (2, cap, n) int64: two families (FREE, ROOM): base per axis,
    ext: np.ndarray  # (2, cap, n) int64: ... extent per axis,
    vol: np.ndarray  # (2, cap) int64: ... volume,
    order: np.ndarray  # (2, cap) int64: ... indices by volume, largest first
    n_cover: np.ndarray  # (2,) int64: sizes of the families; -1 before the first
    cover_for: np.ndarray  # (2, words) uint64: the occupancies they describe
    blocked: np.ndarray  # (words,) uint64 scratch: busy or reserved units
    shapes: np.ndarray  # (units, n) int64: every shape, by volume, then lexicographic
    shapes_lo: np.ndarray  # (units + 2,) int64: shapes of volume v: shapes_lo[v]:shapes_lo[v+1]
    feasible: np.ndarray  # (units + 1,) bool: some shape has volume v
    base: np.ndarray  # (n,) int64 scratch: the candidate's base
    first: np.ndarray  # (n,) int64 scratch: a base range: first base per axis
    count: np.ndarray  # (n,) int64 scratch: ... and number of bases
    stack_first: np.ndarray  # (depth, n) int64 scratch: base ranges still to search
    stack_count: np.ndarray  # (depth, n) int64
    best: np.ndarray  # (n,) int64 scratch: the best candidate's base
    offset: np.ndarray  # (n,) int64 scratch: an odometer


def bit_axis(dims: tuple[int, ...]) -> int:
    """The axis whose rows are machine words: the longest of at most MAX_BIT_AXIS units
    (the first such on ties)."""
    fitting = [i for i, d in enumerate(dims) if d <= MAX_BIT_AXIS]
    if not fitting:
        raise SpecError(f"machine sides {'x'.join(map(str, dims))}: the largest-free search "
                        f"needs one side of at most {MAX_BIT_AXIS} units")
    return max(fitting, key=lambda i: (dims[i], -i))


def cover_capacity(units: int) -> int:
    """Room for the family of maximal free boxes."""
    return 8 * units + 4096


@functools.lru_cache(maxsize=16)
def shape_table(dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every shape (a side per axis, each at most the machine's) ordered by volume, then
    lexicographically, and the offsets of each volume's shapes."""
    grids = np.meshgrid(*[np.arange(1, d + 1) for d in dims], indexing="ij")
    shapes = np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)  # lexicographic
    volume = shapes.prod(axis=1)
    order = np.argsort(volume, kind="stable")
    shapes, volume = shapes[order], volume[order]
    units = int(np.prod(dims))
    counts = np.bincount(volume, minlength=units + 1)
    lo = np.zeros(units + 2, dtype=np.int64)
    lo[1:] = np.cumsum(counts)
    return shapes, lo


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the shape table, the two families of free boxes and scratch."""
    n, units = len(spec.dims), spec.units
    rows = units // spec.dims[bit_axis(spec.dims)]
    return (units * n * 8 + 2 * cover_capacity(units) * (2 * n + 2) * 8
            + 3 * rows * 8 + 3 * n_words(units) * 8)


def build(spec: MachineSpec, jobs: Jobs) -> tuple[MaximalMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's size rounded up to the smallest volume some box has,
    and its placement class (its rounded size)."""
    dims = tuple(spec.dims)
    n = len(dims)
    b = bit_axis(dims)
    axes = np.array([i for i in range(n) if i != b] + [b], dtype=np.int64)
    strides = np.ones(n, dtype=np.int64)
    for i in range(n - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    other = [dims[a] for a in axes[:-1]]
    grids = np.meshgrid(*[np.arange(d) for d in other], indexing="ij")
    row_unit = sum((g.ravel() * strides[a] for g, a in zip(grids, axes[:-1], strict=True)),
                   np.zeros(int(np.prod(other)), dtype=np.int64)).astype(np.int64)
    cells = np.array([int(np.prod(other[level:])) for level in range(n)], dtype=np.int64)
    g_off = np.concatenate([[0], np.cumsum(cells)[:-1]]).astype(np.int64)
    shapes, shapes_lo = shape_table(dims)
    feasible = shapes_lo[1:] > shapes_lo[:-1]
    units, words, cap = spec.units, n_words(spec.units), cover_capacity(spec.units)
    depth = 2 + sum(int(d).bit_length() for d in dims)  # halvings, plus pending halves
    vector = functools.partial(np.zeros, n, dtype=np.int64)
    machine = MaximalMachine(
        units=units, words=words, counts_only=False, wrap=spec.wrap,
        dims=np.array(dims, dtype=np.int64), strides=strides, axes=axes, row_unit=row_unit,
        cells=cells, g_off=g_off, g=np.zeros(int(cells.sum()), dtype=np.uint64),
        start=vector(), length=vector(),
        lo=np.zeros((2, cap, n), dtype=np.int64), ext=np.zeros((2, cap, n), dtype=np.int64),
        vol=np.zeros((2, cap), dtype=np.int64), order=np.zeros((2, cap), dtype=np.int64),
        n_cover=np.full(2, -1, dtype=np.int64), cover_for=np.zeros((2, words), dtype=np.uint64),
        blocked=np.zeros(words, dtype=np.uint64),
        shapes=shapes, shapes_lo=shapes_lo, feasible=feasible[: units + 1].copy(),
        base=vector(), first=vector(), count=vector(),
        stack_first=np.zeros((depth, n), dtype=np.int64),
        stack_count=np.zeros((depth, n), dtype=np.int64),
        best=vector(), offset=vector())
    feasible_sizes = np.flatnonzero(machine.feasible)
    size = feasible_sizes[np.searchsorted(feasible_sizes, jobs.size)]
    return machine, size, size


# ---- the family of maximal free boxes -------------------------------------------------


@kernel
def _is_set(bits, u):
    return (bits[u >> 6] >> np.uint64(u & 63)) & np.uint64(1)


@kernel
def _fill_rows(m, busy):
    """Row r of m.g: bit k set where unit row_unit[r] + k * stride (bit axis) is free."""
    g, row_unit = m.g, m.row_unit
    axis = m.axes[m.axes.shape[0] - 1]
    side, stride = m.dims[axis], m.strides[axis]
    for r in range(m.cells[0]):
        word = np.uint64(0)
        u = row_unit[r]
        for k in range(side):
            if not _is_set(busy, u):
                word |= np.uint64(1) << np.uint64(k)
            u += stride
        g[r] = word


@kernel
def _limit(side, start, wrap):
    """Longest extent from `start` on an axis of `side` units (a full-length extent of a
    torus axis only from base 0)."""
    if not wrap:
        return side - start
    return side if start == 0 else side - 1


@kernel
def _advance(m, level):
    """Next extent at `level` (base, then length) whose AND of rows is not empty, written
    below the level; False when the level is exhausted."""
    g, start, length = m.g, m.start, m.length
    side = m.dims[m.axes[level]]
    src, dst, c = m.g_off[level], m.g_off[level + 1], m.cells[level + 1]
    while start[level] < side:
        if length[level] >= _limit(side, start[level], m.wrap):
            start[level] += 1
            length[level] = 0
            continue
        x = (start[level] + length[level]) % side
        row = src + x * c
        seen = np.uint64(0)
        if length[level] == 0:
            for i in range(c):
                v = g[row + i]
                g[dst + i] = v
                seen |= v
        else:
            for i in range(c):
                v = g[dst + i] & g[row + i]
                g[dst + i] = v
                seen |= v
        length[level] += 1
        if seen:
            return True
        start[level] += 1
        length[level] = 0
    return False


@kernel
def _contained(g, dst, row, c):
    """Whether the c words at dst are all within those at row."""
    for i in range(c):
        if g[dst + i] & ~g[row + i]:
            return False
    return True


@kernel
def _extendable(m, level):
    """Whether the AND below `level` stays the same one unit further along the level's
    axis (then no box with this extent is maximal)."""
    g, s, n = m.g, m.start[level], m.length[level]
    side = m.dims[m.axes[level]]
    src, dst, c = m.g_off[level], m.g_off[level + 1], m.cells[level + 1]
    if m.wrap:
        if n == side:
            return False
        return (_contained(g, dst, src + ((s - 1) % side) * c, c)
                or _contained(g, dst, src + ((s + n) % side) * c, c))
    return ((s > 0 and _contained(g, dst, src + (s - 1) * c, c))
            or (s + n < side and _contained(g, dst, src + (s + n) * c, c)))


@kernel
def _emit(m, which, count, word):
    """Add a box per maximal run of ones of `word` along the bit axis, with the extents
    chosen at every level; return the new count."""
    axes, dims = m.axes, m.dims
    n = axes.shape[0]
    axis = axes[n - 1]
    side = dims[axis]
    full = (np.uint64(1) << np.uint64(side)) - np.uint64(1) if side < 64 else ~np.uint64(0)
    if word == full:
        return _record(m, which, count, 0, side)
    # Start scanning just after a zero bit, so that on a torus a run crossing the end is
    # seen whole.
    first = 0
    if m.wrap:
        while (word >> np.uint64(first)) & np.uint64(1):
            first += 1
        first += 1
    run_base = -1
    for step in range(side):
        k = (first + step) % side if m.wrap else step
        if (word >> np.uint64(k)) & np.uint64(1):
            if run_base < 0:
                run_base = k
        elif run_base >= 0:
            count = _record(m, which, count, run_base, (k - run_base) % side)
            run_base = -1
    if run_base >= 0:  # (on a torus every run ends at the zero bit scanned last)
        count = _record(m, which, count, run_base, side - run_base)
    return count


@kernel
def _record(m, which, count, base, length):
    if count >= m.vol.shape[1]:
        raise RuntimeError("maximal free boxes: more than the capacity the machine reserved")
    axes = m.axes
    n = axes.shape[0]
    volume = length
    for level in range(n - 1):
        a = axes[level]
        m.lo[which, count, a] = m.start[level]
        m.ext[which, count, a] = m.length[level]
        volume *= m.length[level]
    m.lo[which, count, axes[n - 1]] = base
    m.ext[which, count, axes[n - 1]] = length
    m.vol[which, count] = volume
    m.order[which, count] = count
    return count + 1


@kernel
def _sort_by_volume(order, vol, n):
    """Shell sort of order[:n] by volume, largest first, then index."""
    gap = 1
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap > 0:
        for i in range(gap, n):
            x = order[i]
            k = i
            while k >= gap:
                y = order[k - gap]
                if vol[y] > vol[x] or (vol[y] == vol[x] and y < x):
                    break
                order[k] = y
                k -= gap
            order[k] = x
        gap //= 3


@kernel
def cover(m, which, busy):
    """Family `which` (FREE or ROOM): free boxes of occupancy `busy` containing every
    maximal one, in m.lo / m.ext / m.vol, m.order[which] by volume, kept while `busy`
    stays the same; returns its size."""
    if m.n_cover[which] >= 0:
        same = True
        for w in range(busy.shape[0]):
            if m.cover_for[which, w] != busy[w]:
                same = False
                break
        if same:
            return m.n_cover[which]
    copy_into(m.cover_for[which], busy)
    _fill_rows(m, busy)
    last = m.axes.shape[0] - 1  # levels 0 .. last - 1 choose extents; then the runs
    count = 0
    if last == 0:
        if m.g[0]:
            count = _emit(m, which, 0, m.g[0])
    else:
        level = 0
        m.start[0] = 0
        m.length[0] = 0
        while level >= 0:
            if not _advance(m, level):
                level -= 1
                continue
            if _extendable(m, level):
                continue
            if level == last - 1:
                count = _emit(m, which, count, m.g[m.g_off[last]])
            else:
                level += 1
                m.start[level] = 0
                m.length[level] = 0
    _sort_by_volume(m.order[which], m.vol[which], count)
    m.n_cover[which] = count
    return count


# ---- candidates ---------------------------------------------------------------------


@kernel
def _piece(side, wrap, m_lo, m_len, c_lo, c_len):
    """Longest part of extent [m_lo, m_lo + m_len) outside [c_lo, c_lo + c_len) on a ring
    of `side` (the extents intersect); meshes' extents never wrap, so ring arithmetic is
    exact for them too, but a full mesh extent is no ring."""
    if wrap and m_len == side:
        return side - c_len
    r = (c_lo - m_lo) % side  # C's base relative to M's
    wrapped = max(0, r + c_len - side)  # C covers M's first `wrapped` units
    if r < m_len:
        return max(0, r - wrapped, m_len - (r + c_len))
    return max(0, m_len - wrapped)


@kernel
def _overlap(side, m_lo, m_len, c_lo, c_len):
    """Whether two extents on a ring of `side` intersect."""
    if m_len == side:
        return True
    r = (c_lo - m_lo) % side
    return r < m_len or r + c_len > side


@kernel
def _left(m, n_cover, base, shape, floor):
    """The largest free box disjoint from candidate (base, shape): its volume if above
    `floor`, else some value at most `floor`."""
    dims, lo, ext, vol, order = m.dims, m.lo[FREE], m.ext[FREE], m.vol[FREE], m.order[FREE]
    n = dims.shape[0]
    best = 0
    for k in range(n_cover):
        b = order[k]
        v = vol[b]
        if v <= best or v <= floor:
            break
        cut = 0
        disjoint = False
        for a in range(n):
            if not _overlap(dims[a], lo[b, a], ext[b, a], base[a], shape[a]):
                disjoint = True
                break
            cut = max(cut, _piece(dims[a], m.wrap, lo[b, a], ext[b, a], base[a], shape[a])
                      * (v // ext[b, a]))
        if disjoint:
            return v
        best = max(best, cut)
    return best


@kernel
def _lex_less(a, b):
    """Whether base a precedes base b lexicographically."""
    for k in range(a.shape[0]):
        if a[k] != b[k]:
            return a[k] < b[k]
    return False


@kernel
def _bound(m, n_cover, first, count, shape, floor):
    """An upper bound of what any candidate of `shape` with a base in the range (first,
    count per axis) leaves free, exact enough to prune; some value at most `floor` if
    none can leave more than `floor`."""
    dims, lo, ext, vol, order = m.dims, m.lo[FREE], m.ext[FREE], m.vol[FREE], m.order[FREE]
    n = dims.shape[0]
    bound = 0
    for k in range(n_cover):
        b = order[k]
        v = vol[b]
        if v <= bound or v <= floor:
            break
        cut = 0
        for a in range(n):
            side = dims[a]
            piece = 0
            for o in range(count[a]):
                c = (first[a] + o) % side
                if not _overlap(side, lo[b, a], ext[b, a], c, shape[a]):
                    return v  # some candidate misses this box, the largest left
                piece = max(piece, _piece(side, m.wrap, lo[b, a], ext[b, a], c, shape[a]))
            cut = max(cut, piece * (v // ext[b, a]))
        bound = max(bound, cut)
    return bound


@kernel
def _best_of_volume(m, n_cover, room, n_room, q, ceiling):
    """Krevat's choice among the boxes of volume q in family `room` (the free units, or
    those neither busy nor reserved): the first (shape, then base) leaving the largest free
    partition largest. Returns its shape index (-1: none) and leaves its base in m.best.

    The boxes of a shape in the room are those whose base lies in the base range of a
    family box that holds the shape (every such box lies in a maximal one). Each range is
    searched
    branch and bound: halved along its first axis of more than one base, the earlier half
    first, and dropped when `_bound` shows that none of its bases can beat the best so
    far (or tie with it from an earlier base). Ranges may overlap and a torus range may
    wrap, so bases are compared explicitly for the tie-break.
    """
    dims, lo, ext, vol, order = m.dims, m.lo[room], m.ext[room], m.vol[room], m.order[room]
    base, first, count, best = m.base, m.first, m.count, m.best
    stack_first, stack_count = m.stack_first, m.stack_count
    n = dims.shape[0]
    best_left = -1
    best_shape = -1
    for s in range(m.shapes_lo[q], m.shapes_lo[q + 1]):
        shape = m.shapes[s]
        for k in range(n_room):
            b = order[k]
            if vol[b] < q:
                break
            fits = True
            for a in range(n):
                if ext[b, a] < shape[a]:
                    fits = False
                    break
            if not fits:
                continue
            for a in range(n):
                if m.wrap and ext[b, a] == dims[a]:
                    stack_first[0, a] = 0
                    stack_count[0, a] = 1 if shape[a] == dims[a] else dims[a]
                else:
                    stack_first[0, a] = lo[b, a]
                    stack_count[0, a] = ext[b, a] - shape[a] + 1
            top = 1
            while top > 0:
                top -= 1
                split = -1
                for a in range(n):
                    first[a] = stack_first[top, a]
                    count[a] = stack_count[top, a]
                    base[a] = 0 if first[a] + count[a] > dims[a] else first[a]  # earliest
                    if split < 0 and count[a] > 1:
                        split = a
                earlier = best_shape == s and _lex_less(base, best)
                floor = best_left - 1 if earlier else best_left
                if split >= 0:
                    if best_left >= 0 and _bound(m, n_cover, first, count, shape,
                                                 floor) <= floor:
                        continue
                    half = count[split] // 2
                    for a in range(n):  # the later half below the earlier one
                        stack_first[top, a] = first[a]
                        stack_count[top, a] = count[a]
                        stack_first[top + 1, a] = first[a]
                        stack_count[top + 1, a] = count[a]
                    stack_first[top, split] = (first[split] + half) % dims[split]
                    stack_count[top, split] = count[split] - half
                    stack_count[top + 1, split] = half
                    top += 2
                    continue
                left = _left(m, n_cover, first, shape, floor)
                if left > floor:
                    best_left = left
                    best_shape = s
                    copy_into(best, first)
        if best_left == ceiling:
            break
    return best_shape


@kernel
def _write_box(m, base, shape, out):
    """out = the unit bits of the box (base, shape)."""
    dims, strides, offset = m.dims, m.strides, m.offset
    n = dims.shape[0]
    clear(out)
    for k in range(n):
        offset[k] = 0
    while True:
        u = 0
        for k in range(n):
            u += ((base[k] + offset[k]) % dims[k]) * strides[k]
        out[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
        k = n - 1
        while k >= 0:
            offset[k] += 1
            if offset[k] < shape[k]:
                break
            offset[k] = 0
            k -= 1
        if k < 0:
            break


@implements(place, MaximalMachine)
@kernel
def place_maximal(m, st, j, units, busy, growth, forbidden, out):
    """Krevat's heuristic over every box of the smallest volume from `units` to
    `units + growth` that has a free candidate (as `simcore.machines.boxes.allocator.place_box`)."""
    n_cover = cover(m, FREE, busy)
    if n_cover == 0:
        return -1
    ceiling = m.vol[FREE, m.order[FREE, 0]]
    room, n_room = FREE, n_cover
    if forbidden.shape[0] > 0:
        blocked = m.blocked
        for w in range(blocked.shape[0]):
            blocked[w] = busy[w] | forbidden[w]
        room, n_room = ROOM, cover(m, ROOM, blocked)
        if n_room == 0:
            return -1
    top = min(units + growth, m.vol[room, m.order[room, 0]])
    for q in range(units, top + 1):
        if not m.feasible[q]:
            continue
        s = _best_of_volume(m, n_cover, room, n_room, q, ceiling)
        if s >= 0:
            _write_box(m, m.best, m.shapes[s], out)
            return q
    return -1


@implements(largest_free, MaximalMachine)
@kernel
def largest_free_maximal(m, st, busy):
    """Volume of the largest free box in `busy`: the first of the family."""
    n_cover = cover(m, FREE, busy)
    return m.vol[FREE, m.order[FREE, 0]] if n_cover > 0 else 0


@implements(blocked_cause, MaximalMachine)
@kernel
def blocked_maximal(m, st, j):
    """A job that cannot be placed lacks a free box."""
    return BLOCKED_NO_BOX
