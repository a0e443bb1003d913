"""Locality of a job's processors on a mesh or torus (Leung et al. 2002), as numba kernels.

A placement is a set of p processors with ranks r_0 < ... < r_{p-1} along the machine's
ordering (of N processors) and coordinates (x, y, z) on its X x Y x Z grid. Per job:

- linear span s^l = r_{p-1} - r_0 + 1: the processors a message along a line passes;
- ring span s^w = N - max(max_i (r_{i+1} - r_i - 1), N - 1 - r_{p-1} + r_0): the same on a
  ring (the paper's "span"); stretch span = s^w / p;
- bounding box: per dimension the extent of the coordinates (on a torus the shortest arc of
  the ring that holds them); its volume and the sum of its sides (along the machine's
  sides longer than one);
- bounding cube: side = the longest side of the box, volume side^d (d: the machine's
  sides longer than one), and its ratio to the smallest cube any p processors of this
  machine fit in (Leung et al.'s Figure 1);
- connected components of the processors under face adjacency (wrapping only on tori);
- mean pairwise hop distance: L1 on meshes, shortest wrapped distance per dimension on
  tori, over the p(p-1)/2 pairs (0 for one processor).

Distances are summed per dimension from coordinate histograms, so a job costs O(p + the
sides' lengths), not O(p^2). Kernels take their scratch from the caller and allocate
nothing.
"""

from __future__ import annotations

import numpy as np

from simcore.base.jit import kernel
from simcore.core.state import decode_bits

SPAN_LINEAR, SPAN_RING, STRETCH_SPAN, BBOX_VOLUME, BBOX_SIDES, BCUBE_VOLUME, BCUBE_RATIO, \
    COMPONENTS, MEAN_HOPS = range(9)
N_METRICS = 9


def curve_dims(sides: tuple[int, int, int]) -> int:
    """Dimensions of the machine that count for cubes: its sides longer than one (>= 1)."""
    return max(1, sum(1 for s in sides if s > 1))


def smallest_cubes(sides: tuple[int, int, int]) -> np.ndarray:
    """smallest[p] for p = 0..N: volume side^d of the smallest cube that p processors of
    the machine fit in (the cube's side limited by the machine's sides)."""
    units = sides[0] * sides[1] * sides[2]
    d = curve_dims(sides)
    out = np.zeros(units + 1)
    side = 1
    for p in range(1, units + 1):
        while min(side, sides[0]) * min(side, sides[1]) * min(side, sides[2]) < p:
            side += 1
        out[p] = float(side) ** d
    return out


@kernel
def unpack(mask, n, out):
    """Write the set bits of `mask` below n (ascending) to `out`; return how many."""
    p = 0
    for w in range(mask.shape[0]):
        word = mask[w]
        if word == 0:
            continue
        for b in range(64):
            if (word >> np.uint64(b)) & np.uint64(1):
                r = w * 64 + b
                if r < n:
                    out[p] = r
                    p += 1
    return p


@kernel
def _histograms(index, p, sides, hist):
    """hist[k, v]: processors of index[:p] with coordinate v in dimension k."""
    for k in range(3):
        for v in range(sides[k]):
            hist[k, v] = 0
    for i in range(p):
        u = index[i]
        hist[0, u % sides[0]] += 1
        hist[1, (u // sides[0]) % sides[1]] += 1
        hist[2, u // (sides[0] * sides[1])] += 1


@kernel
def _pair_distance_sum(hist, k, length, wrap, p):
    """Sum over pairs of processors of their distance in dimension k."""
    total = 0.0
    if not wrap:
        below = 0
        for v in range(length - 1):  # pairs split by the edge between v and v + 1
            below += hist[k, v]
            total += below * (p - below)
        return total
    for v in range(length):
        if hist[k, v] == 0:
            continue
        for w in range(v + 1, length):
            d = min(w - v, length - (w - v))
            total += hist[k, v] * hist[k, w] * d
    return total


@kernel
def _extent(hist, k, length, wrap):
    """The bounding box's side in dimension k: the coordinates' extent, on a torus the
    shortest arc holding them."""
    lo = length
    hi = -1
    for v in range(length):
        if hist[k, v] > 0:
            lo = min(lo, v)
            hi = max(hi, v)
    if hi < 0:
        return 0
    if not wrap:
        return hi - lo + 1
    gap = 0  # longest cyclic run of empty coordinates
    run = 0
    for i in range(2 * length):
        if hist[k, i % length] == 0:
            run += 1
            gap = max(gap, min(run, length))
        else:
            run = 0
    return length - gap


@kernel
def mean_hops(index, p, sides, wrap, hist):
    """Mean pairwise hop distance of the processors index[:p] (0 for p < 2)."""
    if p < 2:
        return 0.0
    _histograms(index, p, sides, hist)
    total = 0.0
    for k in range(3):
        total += _pair_distance_sum(hist, k, sides[k], wrap, p)
    return total / (p * (p - 1) / 2)


@kernel
def _components(index, p, sides, wrap, mark, stamp, queue):
    """Connected components of index[:p] under face adjacency. `mark` (units,) holds
    stamps: members get stamp, visited ones stamp + 1 (stamps grow from call to call)."""
    for i in range(p):
        mark[index[i]] = stamp
    count = 0
    for i in range(p):
        if mark[index[i]] != stamp:
            continue
        count += 1
        mark[index[i]] = stamp + 1
        queue[0] = index[i]
        head, tail = 0, 1
        while head < tail:
            u = queue[head]
            head += 1
            c0 = u % sides[0]
            c1 = (u // sides[0]) % sides[1]
            c2 = u // (sides[0] * sides[1])
            for k in range(3):
                length = sides[k]
                for step in (-1, 1):
                    c = (c0, c1, c2)[k] + step
                    if c < 0 or c >= length:
                        if not wrap or length < 3:
                            continue
                        c %= length
                    v = u + (c - (c0, c1, c2)[k]) * (1, sides[0], sides[0] * sides[1])[k]
                    if mark[v] == stamp:
                        mark[v] = stamp + 1
                        queue[tail] = v
                        tail += 1
    return count


@kernel
def measure(ranks, p, n, order, sides, wrap, d, smallest, scratch_index, hist, mark, stamp,
            queue, out):
    """Every metric of one placement (ranks[:p], ascending) into out[0:N_METRICS]."""
    if p == 0:
        for k in range(N_METRICS):
            out[k] = np.nan
        return
    gap = n - 1 - ranks[p - 1] + ranks[0]
    for i in range(p - 1):
        gap = max(gap, ranks[i + 1] - ranks[i] - 1)
    out[SPAN_LINEAR] = ranks[p - 1] - ranks[0] + 1
    out[SPAN_RING] = n - gap
    out[STRETCH_SPAN] = out[SPAN_RING] / p
    for i in range(p):
        scratch_index[i] = order[ranks[i]]
    out[MEAN_HOPS] = mean_hops(scratch_index, p, sides, wrap, hist)
    if p < 2:
        _histograms(scratch_index, p, sides, hist)
    volume = 1
    total = 0
    longest = 0
    for k in range(3):
        side = _extent(hist, k, sides[k], wrap)
        volume *= side
        if sides[k] > 1:
            total += side
        longest = max(longest, side)
    out[BBOX_VOLUME] = volume
    out[BBOX_SIDES] = total
    out[BCUBE_VOLUME] = float(longest) ** d
    out[BCUBE_RATIO] = out[BCUBE_VOLUME] / smallest[p]
    out[COMPONENTS] = _components(scratch_index, p, sides, wrap, mark, stamp, queue)


@kernel
def measure_log(log_job, log_at, log_code, n, order, sides, wrap, d, smallest, ranks,
                scratch_index, hist, mark, queue, out, nodes, offsets):
    """Metrics (out[j]) and processor indices in rank order (nodes[offsets[j]:...]) of the
    placement each logged job got (its last entry)."""
    for e in range(log_job.shape[0]):
        j = log_job[e]
        p = decode_bits(log_code, log_at[e], n, ranks)
        measure(ranks, p, n, order, sides, wrap, d, smallest, scratch_index, hist, mark,
                2 * e + 1, queue, out[j])
        for i in range(p):
            nodes[offsets[j] + i] = scratch_index[i]


@kernel
def compact_hops(sides, wrap, hist, out):
    """out[p] for p = 1..N: the least mean pairwise hop distance over placements that fill
    the first p cells (x fastest, then y, then z) of a box that fits the machine: the most
    compact placement of p processors this model knows."""
    for p in range(out.shape[0]):
        out[p] = np.inf
    out[0] = 0.0
    for a in range(1, sides[0] + 1):
        for b in range(1, sides[1] + 1):
            for c in range(1, sides[2] + 1):
                for k in range(3):
                    for v in range(sides[k]):
                        hist[k, v] = 0
                total = 0.0
                p = 0
                for z in range(c):
                    for y in range(b):
                        for x in range(a):
                            coords = (x, y, z)
                            for k in range(3):  # distances from the new cell to the others
                                length = sides[k]
                                for v in range(length):
                                    if hist[k, v] > 0:
                                        delta = abs(coords[k] - v)
                                        if wrap:
                                            delta = min(delta, length - delta)
                                        total += hist[k, v] * delta
                            for k in range(3):
                                hist[k, coords[k]] += 1
                            p += 1
                            mean = total / (p * (p - 1) / 2) if p > 1 else 0.0
                            if mean < out[p]:
                                out[p] = mean
