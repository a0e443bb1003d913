"""Independent checks of simulation results, in plain Python and numpy.

`flat_schedule` is a small reference implementation of FCFS and EASY on a flat machine
written straight from Mu'alem and Feitelson's description (in arrival or Cplant's order);
`conservative_schedule` one of conservative backfilling with the event semantics of
simcore.schedulers.conservative, planning with a list of intervals instead of a profile.
The `check_*` functions replay a result's schedule and placement log without using any
simcore state.
"""

from __future__ import annotations

import math

import numpy as np


def flat_schedule(submit, run, estimate, size, units, easy, delay=0.0, cplant=False):
    """Allocation times of jobs (given in priority order) under FCFS or EASY; with
    `cplant` the queue is kept in Cplant's order (size, estimate, arrival)."""
    n = len(submit)
    alloc_at = [math.nan] * n
    running = []  # (end, estimated end, job)
    queue = []
    free = units
    arrived = 0

    def start(j, t):
        nonlocal free
        alloc_at[j] = t
        free -= size[j]
        running.append((t + delay + run[j], t + delay + estimate[j], j))
        queue.remove(j)

    while arrived < n or running:
        t = min([end for end, _, _ in running] + ([submit[arrived]] if arrived < n else []))
        for job in [r for r in running if r[0] == t]:
            running.remove(job)
            free += size[job[2]]
        while arrived < n and submit[arrived] == t:
            queue.append(arrived)
            arrived += 1
        if cplant:
            queue.sort(key=lambda j: (size[j], estimate[j], j))
        while queue and size[queue[0]] <= free:
            start(queue[0], t)
        if not (easy and queue):
            continue
        head = queue[0]
        available, shadow = free, math.inf
        for estimated_end, job in sorted((r[1], r[2]) for r in running):
            available += size[job]
            if available >= size[head]:
                shadow = estimated_end
                break
        extra = free + sum(size[r[2]] for r in running if r[1] <= shadow) - size[head]
        for j in list(queue[1:]):
            if size[j] > free:
                continue
            if t + delay + estimate[j] <= shadow:
                start(j, t)
            elif size[j] <= extra:
                extra -= size[j]
                start(j, t)
    return np.array(alloc_at)


def conservative_schedule(submit, run, estimate, size, units, delay=0.0):
    """(allocation times, first reservations, reservations moved later) of jobs given in
    priority order under conservative backfilling on a flat machine of `units` units."""
    n = len(submit)
    alloc_at, first = [math.nan] * n, [math.nan] * n
    res = {}  # waiting job -> current reservation
    est_end, end = {}, {}
    running = []  # started jobs not yet completed, in start order
    queue = []
    arrived = 0
    delayed = 0

    def stay(j, begin):
        return begin, (begin + delay) + estimate[j]

    def busy_at(tau, intervals):
        return sum(s for (a, b, s) in intervals if a <= tau < b)

    def plan(t, exclude=()):
        intervals = [(t, est_end[j], size[j]) for j in running if est_end[j] > t]
        intervals += [(*stay(j, r), size[j]) for j, r in res.items() if j not in exclude]
        return intervals

    def earliest(j, t, intervals):
        candidates = sorted({t} | {b for (_, b, _) in intervals if b > t})
        for begin in candidates:
            a, b = stay(j, begin)
            points = [begin] + [x for (x, _, _) in intervals if a < x < b]
            if all(busy_at(p, intervals) + size[j] <= units for p in points):
                return begin
        raise AssertionError("a job larger than the machine")

    def compress(t):
        nonlocal delayed
        order = sorted(res, key=lambda j: (res[j], j))
        before = {j: res.pop(j) for j in order}
        for j in order:
            res[j] = earliest(j, t, plan(t))
            delayed += res[j] > before[j]

    while arrived < n or running:
        t = min([end[j] for j in running] + ([submit[arrived]] if arrived < n else []))
        while arrived < n and submit[arrived] == t:
            queue.append(arrived)
            arrived += 1
        stale = False
        for j in running:
            if est_end[j] <= t < end[j]:
                est_end[j] = math.nextafter(t, math.inf)
                stale = True
        if stale or any(r < t for r in res.values()):
            compress(t)
        for j in [j for j in running if end[j] <= t]:
            running.remove(j)
            if end[j] < est_end[j]:
                compress(t)
        for j in queue:
            if j not in res:
                res[j] = first[j] = earliest(j, t, plan(t))
        free = units - sum(size[j] for j in running)
        for j in list(queue):
            if res[j] <= t and size[j] <= free:
                free -= size[j]
                alloc_at[j] = t
                end[j] = (t + delay) + run[j]
                est_end[j] = (t + delay) + estimate[j]
                running.append(j)
                queue.remove(j)
                del res[j]
    return np.array(alloc_at), np.array(first), delayed


def check_exclusive(result) -> int:
    """Every unit (and cable) is held by at most one job at a time; returns entries checked."""
    log = result.placements
    table = result.jobs
    held_until = log.held_until(table.column("job_id").to_numpy(),
                                table.column("end_s").to_numpy())
    bits = log.bits()
    for resource in np.flatnonzero(bits.any(axis=0)):
        rows = np.flatnonzero(bits[:, resource])
        order = np.argsort(log.time_s[rows], kind="stable")
        begin, finish = log.time_s[rows][order], held_until[rows][order]
        overlap = np.flatnonzero(begin[1:] < finish[:-1])
        assert not overlap.size, (
            f"resource {resource} held by jobs {log.job_id[rows][order][overlap[0]]} and "
            f"{log.job_id[rows][order][overlap[0] + 1]} at {begin[overlap[0] + 1]}")
    return int(log.time_s.shape[0])


def check_capacity(result, units: int) -> None:
    """Recompute unused capacity from the schedule alone; utilized + unused + lost = 1."""
    t = result.jobs
    submit = t.column("submit_s").to_numpy()
    sched = t.column("sched_s").to_numpy()
    end = t.column("end_s").to_numpy()
    size = t.column("size").to_numpy()
    alloc = t.column("alloc_size").to_numpy()
    times = np.concatenate([submit, sched, end])
    d_free = np.concatenate([np.zeros_like(size), -alloc, alloc])
    d_queued = np.concatenate([size, -size, np.zeros_like(size)])
    order = np.argsort(times, kind="stable")
    times, d_free, d_queued = times[order], d_free[order], d_queued[order]
    free = units + np.cumsum(d_free)
    queued = np.cumsum(d_queued)
    idle = np.maximum(0, free - queued)[:-1] * np.diff(times)
    span = end.max() - submit.min()
    s = result.summary
    if span == 0:  # capacity over an empty time span is undefined
        assert np.isnan([s["utilization"], s["unused"], s["lost"]]).all()
        return
    unused = idle.sum() / (span * units)
    assert abs(unused - s["unused"]) < 1e-9, (unused, s["unused"])
    utilized = (size * t.column("run_s").to_numpy()).sum() / (span * units)
    assert abs(utilized - s["utilization"]) < 1e-9
    assert abs(s["utilization"] + s["unused"] + s["lost"] - 1) < 1e-12
    assert s["lost"] > -1e-9 and 0 <= s["unused"] <= 1 and 0 <= s["utilization"] <= 1


def check_timing(result) -> None:
    """Nothing is allocated before it arrives; start = allocation + delay; end = start + run."""
    t = result.jobs
    submit, sched = t.column("submit_s").to_numpy(), t.column("sched_s").to_numpy()
    start, end = t.column("start_s").to_numpy(), t.column("end_s").to_numpy()
    assert np.isfinite(start).all()
    assert (sched >= submit).all()
    assert (start >= sched).all()
    assert np.array_equal(end, start + t.column("run_s").to_numpy())
    assert (t.column("alloc_size").to_numpy() >= 0).all()


def check_reservations(result) -> int:
    """No job is allocated later than the first reservation it got as the blocked head."""
    t = result.jobs
    reserved = t.column("reserved_s").to_numpy(zero_copy_only=False)
    sched = t.column("sched_s").to_numpy()
    has = ~np.isnan(reserved)
    late = np.flatnonzero(has & (sched > reserved))
    assert not late.size, f"job {t.column('job_id')[late[0]]} allocated at {sched[late[0]]} " \
                          f"after its reservation {reserved[late[0]]}"
    return int(has.sum())


def curve_choice(free, p, rule, ring=False):
    """Ranks a curve allocator gives p processors when `free[r]` says whether rank r is
    free, by brute force: every interval of free ranks, every p-subset for the fallback."""
    from itertools import combinations

    n = len(free)
    ranks = [r for r in range(n) if free[r]]
    if len(ranks) < p:
        return None
    if rule == "free-list":
        return ranks[:p]
    intervals = []  # (start, length) of maximal runs, in rank order
    for r in ranks:
        if intervals and intervals[-1][0] + intervals[-1][1] == r:
            intervals[-1] = (intervals[-1][0], intervals[-1][1] + 1)
        else:
            intervals.append((r, 1))
    fits = [(s, length) for s, length in intervals if length >= p]
    if fits:
        if rule == "first-fit":
            start = fits[0][0]
        elif rule == "best-fit":
            start = min(fits, key=lambda f: f[1])[0]  # min keeps the earliest of ties
        else:
            def squares_after(chosen):
                lengths = [length - p if s == chosen else length for s, length in intervals]
                return sum(lengths.count(size) ** 2 for size in set(lengths) if size > 0)
            start = min((s for s, _ in fits), key=squares_after)
        return list(range(start, start + p))

    def spans(subset):  # (span, first rank) of every way to read the subset as an arc
        if not ring:
            return [(max(subset) - min(subset), min(subset))]
        return [(max((x - s) % n for x in subset), s) for s in subset]

    best = min((span, first, subset)
               for subset in combinations(ranks, p) for span, first in spans(subset))
    return list(best[2])


def locality_of(nodes, order, sides, wrap):
    """Every locality metric of a job on processors `nodes` (indices), computed directly:
    pairs, arcs and a flood fill, for comparison with simcore.machines.curves.locality."""
    n = len(order)
    rank_of = {int(index): r for r, index in enumerate(order)}
    ranks = sorted(rank_of[u] for u in nodes)
    p = len(ranks)
    coords = [(u % sides[0], u // sides[0] % sides[1], u // (sides[0] * sides[1]))
              for u in nodes]
    gaps = [ranks[i + 1] - ranks[i] - 1 for i in range(p - 1)] + [n - 1 - ranks[-1] + ranks[0]]

    def dist(a, b, k):
        d = abs(a - b)
        return min(d, sides[k] - d) if wrap else d

    def extent(k):
        values = {c[k] for c in coords}
        if not wrap:
            return max(values) - min(values) + 1
        return min(max((v - s) % sides[k] for v in values) + 1 for s in values)

    box = [extent(k) for k in range(3)]
    d = max(1, sum(s > 1 for s in sides))
    smallest = next(s for s in range(1, max(sides) + 1)
                    if math.prod(min(s, side) for side in sides) >= p) ** d
    pairs = [(a, b) for i, a in enumerate(coords) for b in coords[i + 1:]]
    hops = sum(sum(dist(a[k], b[k], k) for k in range(3)) for a, b in pairs)
    members, seen, components = set(coords), set(), 0
    for start in coords:
        if start in seen:
            continue
        components += 1
        todo = [start]
        seen.add(start)
        while todo:
            c = todo.pop()
            for k in range(3):
                for step in (-1, 1):
                    v = list(c)
                    v[k] += step
                    if wrap:
                        v[k] %= sides[k]
                    v = tuple(v)
                    if v in members and v not in seen:
                        seen.add(v)
                        todo.append(v)
    return {
        "span_linear": ranks[-1] - ranks[0] + 1,
        "span_ring": n - max(gaps),
        "stretch_span": (n - max(gaps)) / p,
        "bbox_volume": math.prod(box),
        "bbox_sides": sum(b for b, side in zip(box, sides, strict=True) if side > 1),
        "bcube_volume": max(box) ** d,
        "bcube_ratio": max(box) ** d / smallest,
        "components": components,
        "mean_hops": hops / len(pairs) if pairs else 0.0,
    }


def box_units(base, shape, dims):
    """Unit indices (row-major) of the box at `base` of `shape`, wrapping around."""
    from itertools import product

    strides = [int(np.prod(dims[k + 1:])) for k in range(len(dims))]
    return frozenset(sum(((b + o) % d) * s for b, o, d, s in zip(base, off, dims, strides,
                                                                  strict=True))
                     for off in product(*[range(n) for n in shape]))


def boxes_of_volume(q, dims, wrap):
    """Every distinct box of volume q, by shape then base (both lexicographic)."""
    from itertools import product

    for shape in product(*[range(1, d + 1) for d in dims]):
        if int(np.prod(shape)) != q:
            continue
        bases = [[0] if wrap and s == d else range(d if wrap else d - s + 1)
                 for s, d in zip(shape, dims, strict=True)]
        for base in product(*bases):
            yield box_units(base, shape, dims)


def largest_free_box(free, dims, wrap):
    """Volume of the largest box within the unit set `free`, by checking every box."""
    for q in range(len(free), 0, -1):
        if any(box <= free for box in boxes_of_volume(q, dims, wrap)):
            return q
    return 0


def krevat_place(busy, dims, wrap, units, growth, forbidden=frozenset()):
    """Krevat's largest-free-partition rule by brute force: (units allocated, unit set) or
    (-1, None). Among the free boxes of the smallest volume from `units` to `units +
    growth` that has one avoiding `forbidden`, the first (shape, then base) leaving the
    largest free box largest."""
    free = frozenset(range(int(np.prod(dims)))) - busy
    ceiling = largest_free_box(free, dims, wrap)
    for q in range(units, min(units + growth, ceiling) + 1):
        best, best_left = None, -1
        for box in boxes_of_volume(q, dims, wrap):
            if not box <= free or box & forbidden:
                continue
            left = largest_free_box(free - box, dims, wrap)
            if left > best_left:
                best, best_left = box, left
                if left == ceiling:
                    break
        if best is not None:
            return q, best
    return -1, None
