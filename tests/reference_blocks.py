"""A plain-Python reference for Slurm's topology/block rule (`block_choice`), written from
the rules as docs/modern.md states them, with sets and sorted lists rather than the
kernel's scratch arrays."""

from __future__ import annotations

import math


def _levels_for(n, plan, levels):
    """(level or None for the whole machine, low level, low-level blocks allowed)."""
    wanted = math.ceil(math.log2(math.ceil(n / plan))) if n > plan else 0
    level = min((k for k in levels if k >= wanted), default=None)
    low = max((k for k in levels if k <= wanted - 1), default=0)
    return level, low, math.ceil(n / (plan << low))


def _groups(blocks, level, lo, hi):
    """The blocks of `level` (None: [lo, hi) whole) within [lo, hi), as lists of base blocks."""
    if level is None:
        return [list(range(lo, hi))]
    out = {}
    for b in range(lo, hi):
        out.setdefault(b >> level, []).append(b)
    return list(out.values())


def _whole(n, free, nodes_free, plan, levels, lo, hi):
    """Nodes for n nodes within base blocks [lo, hi), or None; `free[b]` counts and
    `nodes_free[b]` the sorted free nodes of each base block."""
    level, low, limit = _levels_for(n, plan, levels)
    best = None
    for group in _groups(len(free), level, lo, hi):
        lows = {}
        for b in group:
            lows[b >> low] = lows.get(b >> low, 0) + free[b]
        room = sum(sorted(lows.values(), reverse=True)[:limit]) if len(lows) > limit \
            else sum(free[b] for b in group)
        total = sum(free[b] for b in group)
        if room >= n and (best is None or total <= best[0]):
            best = (total, group)
    if best is None:
        return None
    group = best[1]
    lows = {}
    for b in group:
        lows[b >> low] = lows.get(b >> low, 0) + free[b]
    rule, touched, left, taken, used = len(lows) > limit, set(), n, [], set()

    def better(b, best):
        """Base block b preferred to `best` (later ones win ties: the higher index)."""
        i, j = b >> low, best >> low
        if rule and i != j:
            if (i in touched) != (j in touched):
                return i in touched
            if i not in touched and lows[i] != lows[j]:
                if (lows[i] >= left) != (lows[j] >= left):
                    return lows[i] >= left
                return lows[i] < lows[j] if lows[i] >= left else lows[i] > lows[j]
        if (free[b] >= left) != (free[best] >= left):
            return free[b] >= left
        return free[b] <= free[best] if free[b] >= left else free[b] >= free[best]

    while left > 0:
        chosen = None
        for b in group:
            if b in used or not free[b] or (rule and len(touched) >= limit
                                             and (b >> low) not in touched):
                continue
            if chosen is None or better(b, chosen):
                chosen = b
        if chosen is None:
            return None
        used.add(chosen)
        touched.add(chosen >> low)
        take = min(left, free[chosen])
        taken += nodes_free[chosen][:take]
        left -= take
    return taken


def block_choice(blocks, block, plan, levels, n, segment, placement, busy):
    """The nodes the rule gives a job of n nodes (`segment` nodes per segment, 0: whole;
    `placement` as the option) on `blocks` base blocks of `block` nodes when `busy` are
    taken, or None."""
    def state(taken, closed=()):
        nodes = [[u for u in range(b * block, (b + 1) * block) if u not in taken]
                 if b not in closed else [] for b in range(blocks)]
        return [len(x) for x in nodes], nodes

    if not segment:
        return _whole(n, *state(busy), plan, levels, 0, blocks)

    def segments(lo, hi, count, shut=()):
        taken, closed, out = set(busy), set(shut), []
        for _ in range(count):
            got = _whole(segment, *state(taken, closed), plan, levels, lo, hi)
            if got is None:
                return None
            out += got
            taken |= set(got)
            if "spread" in placement:
                closed.add(got[0] // block)
        return out

    k = n // segment
    if "consolidate" not in placement:
        return segments(0, blocks, k)
    whole = k * math.ceil(segment / plan) * plan if "spread" in placement else n
    level = _levels_for(whole, plan, levels)[0]
    groups = _groups(blocks, level, 0, blocks)
    free = state(busy)[0]
    shut = {b for g in groups if sum(free[b] for b in g) < n for b in g}
    while True:
        first = segments(0, blocks, 1, shut)
        if first is None:
            return None
        group = next(g for g in groups if first[0] // block in g)
        got = segments(group[0], group[-1] + 1, k)
        if got is not None:
            return got
        shut |= set(group)
