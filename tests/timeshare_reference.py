"""A plain-Python reference of the time-sharing engine (simcore.timeshare), for comparison.

It follows the semantics documented in simcore/timeshare (matrix and queue, roles of
processes, the fluid rates, FCS classification) the simplest way: every event is
stepped (no skipping of rotations, no caching of rates) and each fair share is found by
bisection instead of by sorting demands. Slow; meant for a few jobs on a few
processors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

CS, F, DC = 0, 1, 2


@dataclass
class Job:
    submit: float
    run: float
    size: int
    sync: bool
    even: float
    odd: float
    block: int
    comm: float
    estimate: float  # already x mpl
    iters_total: float = 0.0
    r_ded: float = 0.0
    row: int = -1
    done: float = 0.0
    left: dict = field(default_factory=dict)  # processor -> CPU work left (never-waiting)
    iters: float = 0.0
    busy: float = 0.0
    tslots: int = 0
    cls: list = field(default_factory=lambda: [CS, CS])
    cslots: list = field(default_factory=lambda: [0, 0])
    reset: list = field(default_factory=lambda: [(0.0, 0.0), (0.0, 0.0)])
    start: float = math.nan
    end: float = math.nan
    ranks: dict = field(default_factory=dict)  # processor -> rank


def compute(job, rank):
    if job.block > 0 and (rank // job.block) % 2 == 1:
        return job.odd
    return job.even


def has_odd(job):
    return job.block > 0 and job.size > job.block


def simulate(jobs, processors, mode, mpl, easy, slice_s, spin_s, f_always, switch_s,
             quantum_s, block_s, fcs, alternate=False):
    """Start and end times and final classes of `jobs` (Job, in priority order);
    `alternate`: gang's alternate scheduling and row packing."""
    heaviest = [max(j.even, j.odd) if has_odd(j) else j.even for j in jobs]
    for j, h in zip(jobs, heaviest, strict=True):
        iteration = h + (j.comm if j.sync else 0.0)
        j.iters_total = j.run / iteration
        j.r_ded = 1.0 / iteration
    cells = [[-1] * processors for _ in range(mpl)]
    assigned = [-1] * processors
    switched = [False] * processors
    queue, resident = [], []
    t = jobs[0].submit
    arrived = finished = 0
    active = -1
    slice_end = math.inf
    changed = False
    unused = 0.0

    def load(p):
        return sum(1 for r in range(mpl) if cells[r][p] >= 0)

    def row_free(r):
        return sum(1 for p in range(processors) if cells[r][p] < 0)

    def first_row(size, skip=-1):
        return next((r for r in range(mpl) if r != skip and row_free(r) >= size), -1)

    def enter(k, r):
        job = jobs[k]
        free = [p for p in range(processors) if cells[r][p] < 0]
        chosen = sorted(sorted(free, key=lambda p: (load(p), p))[:job.size])
        for rank, p in enumerate(chosen):
            cells[r][p] = k
            job.ranks[p] = rank
            if not job.sync and compute(job, rank) > 0:
                job.left[p] = job.iters_total * compute(job, rank)
        job.row, job.start = r, t
        queue.remove(k)
        resident.append(k)

    def admit():
        i = 0
        while i < len(queue):
            r = first_row(jobs[queue[i]].size)
            if r < 0:
                break
            enter(queue[i], r)
        if not (easy and queue):
            return
        head = queue[0]
        free = [row_free(r) for r in range(mpl)]
        shadow, reserved, extra = math.inf, -1, 0
        ends = sorted((jobs[k].start + jobs[k].estimate, k) for k in resident)
        for n, (when, k) in enumerate(ends):
            free[jobs[k].row] += jobs[k].size
            if n + 1 < len(ends) and ends[n + 1][0] == when:
                continue
            fits = [r for r in range(mpl) if free[r] >= jobs[head].size]
            if fits:
                shadow, reserved, extra = when, fits[0], free[fits[0]] - jobs[head].size
                break
        for k in list(queue[1:]):
            size = jobs[k].size
            if t + jobs[k].estimate <= shadow:
                r = first_row(size)
            else:
                r = first_row(size, reserved)
                if r < 0 and reserved >= 0 and size <= extra and row_free(reserved) >= size:
                    r, extra = reserved, extra - size
            if r >= 0:
                enter(k, r)

    def working(k, p):
        job = jobs[k]
        return job.sync or job.left.get(p, 0.0) > 0.0

    def group(k, p):
        job = jobs[k]
        return (job.ranks[p] // job.block) % 2 if job.block > 0 else 0

    def roles():
        role = {}
        if mode == "gang":
            for p, k in enumerate(slice_modes(active)):
                if k >= 0:
                    role[(jobs[k].row, p)] = "solo"
            return role
        for p in range(processors):
            here = [r for r in range(mpl) if cells[r][p] >= 0 and working(cells[r][p], p)]
            x = cells[active][p] if active >= 0 and active in here else -1
            if mode == "fcs" and x >= 0 and jobs[x].cls[group(x, p)] == CS:
                role[(active, p)] = "solo"
                continue
            local = [r for r in here if mode != "fcs"
                     or jobs[cells[r][p]].cls[group(cells[r][p], p)] != CS]
            if len(local) == 1:
                role[(local[0], p)] = "solo"
            elif len(local) > 1:
                for r in local:
                    k = cells[r][p]
                    first = mode == "fcs" and jobs[k].cls[group(k, p)] == F and (
                        r == active or f_always)
                    role[(r, p)] = "tier1" if first else "tier2"
        return role

    def cpu(k, p):  # CPU per iteration of a synchronising process on a shared processor
        return compute(jobs[k], jobs[k].ranks[p]) + spin_s + block_s

    def burst(k, p):
        job = jobs[k]
        return min(compute(job, job.ranks[p]), quantum_s) if job.sync else quantum_s

    def demand(k, p, rate):
        return rate[k] * cpu(k, p) if jobs[k].sync else math.inf

    def level(demands, avail):
        """max-min fair share: L with sum(min(d, L)) = avail, by bisection"""
        if all(d < math.inf for d in demands) and sum(demands) <= avail:
            return math.inf
        lo, hi = 0.0, max(avail, 0.0)
        for _ in range(200):
            mid = (lo + hi) / 2
            if sum(min(d, mid) for d in demands) < avail:
                lo = mid
            else:
                hi = mid
        return hi

    def caps(role, rate):
        fresh = {k: jobs[k].r_ded for k in resident if jobs[k].sync}
        share, delay = {}, {}
        for p in range(processors):
            factor = 1.0 - switch_s / slice_s if switched[p] else 1.0
            tier = {kind: [r for r in range(mpl) if role.get((r, p)) == kind]
                    for kind in ("tier1", "tier2")}
            level1 = level([demand(cells[r][p], p, rate) for r in tier["tier1"]], factor)
            used1 = sum(min(demand(cells[r][p], p, rate), level1) for r in tier["tier1"])
            avail = {"tier1": factor, "tier2": max(0.0, factor - min(used1, factor))}
            levels = {"tier1": level1,
                      "tier2": level([demand(cells[r][p], p, rate) for r in tier["tier2"]],
                                     avail["tier2"])}

            def computing(r, p=p, levels=levels):
                k = cells[r][p]
                use = min(demand(k, p, rate), levels[role[(r, p)]])
                return use * compute(jobs[k], jobs[k].ranks[p]) / cpu(k, p) if jobs[k].sync \
                    else use

            for r in range(mpl):
                k = cells[r][p]
                if k < 0:
                    continue
                kind = role.get((r, p))
                if kind is None:
                    if jobs[k].sync:
                        fresh[k] = 0.0
                    continue
                if kind == "solo" or (kind == "tier1" and len(tier["tier1"]) == 1):
                    if jobs[k].sync:
                        fresh[k] = min(fresh[k], factor * jobs[k].r_ded)
                    else:
                        share[(r, p)] = factor
                    continue
                mine = level([math.inf] + [demand(cells[o][p], p, rate) for o in tier[kind]
                                           if o != r], avail[kind])
                if not jobs[k].sync:
                    share[(r, p)] = mine
                    continue
                fresh[k] = min(fresh[k], mine / cpu(k, p))
                ahead = tier["tier1"] + (tier["tier2"] if kind == "tier2" else [])
                delay[(r, p)] = 0.5 * sum(computing(o) * burst(cells[o][p], p)
                                          for o in ahead if o != r)
        for k in fresh:  # an iteration waits for the last process through its delay
            job = jobs[k]
            if fresh[k] > 0 and any(delay.get((job.row, p), 0) > 0 for p in job.ranks):
                last = max(compute(job, job.ranks[p]) + (
                    block_s + delay[(job.row, p)] if delay.get((job.row, p), 0) > 0 else 0)
                           for p in job.ranks)
                fresh[k] = min(fresh[k], 1 / (job.comm + last))
        return fresh, share

    def rates():
        role = roles()
        rate = {k: jobs[k].r_ded for k in resident if jobs[k].sync}
        for n in range(2000):
            fresh, share = caps(role, rate)
            if all(abs(fresh[k] - rate[k]) <= 1e-14 * max(fresh.values()) for k in rate):
                return fresh, share
            rate = {k: fresh[k] if n < 10 else (rate[k] + fresh[k]) / 2 for k in rate}
        raise AssertionError("reference rates did not converge")

    def end_of_slot(a):
        for k in resident:
            job = jobs[k]
            if job.row != a:
                continue
            job.tslots += 1
            for g in (0, 1):
                if g == 1 and not has_odd(job):
                    continue
                job.cslots[g] += 1
                if job.sync:
                    made = job.iters - job.reset[g][0]
                    if made <= 0:
                        continue
                    granularity = (job.busy - job.reset[g][1]) / made
                    cpu = job.odd if g == 1 else job.even
                else:
                    granularity = cpu = math.inf
                new = job.cls[g]
                if job.cslots[g] >= fcs["cslots_min"]:
                    if job.tslots % fcs["tslots_max"] == 0 or granularity < fcs["cs"]:
                        new = CS
                    elif granularity < fcs["dc"] and cpu < fcs["f"]:
                        new = F
                    else:
                        new = DC
                if new != job.cls[g]:
                    job.cls[g], job.cslots[g] = new, 0
                    job.reset[g] = (job.iters, job.busy)

    def own_mode(a, p):
        """The job of the one process p runs, -2 for several scheduled locally (FCS), -1
        for nothing."""
        x = cells[a][p]
        if x >= 0 and working(x, p) and (mode == "gang" or jobs[x].cls[group(x, p)] == CS):
            return x
        local = [cells[r][p] for r in range(mpl) if mode == "fcs" and cells[r][p] >= 0
                 and working(cells[r][p], p)
                 and jobs[cells[r][p]].cls[group(cells[r][p], p)] != CS]
        return -1 if not local else local[0] if len(local) == 1 else -2

    def slice_modes(a):
        """What each processor runs while row a is active; with `alternate`, whole jobs
        of rows a + 1, a + 2, ... (cyclically), each row's by first processor, on
        processors idle in row a."""
        modes = [own_mode(a, p) for p in range(processors)]
        if mode == "gang" and alternate:
            for r in [(a + k) % mpl for k in range(1, mpl)]:
                for k in dict.fromkeys(x for x in cells[r] if x >= 0):
                    mine = [p for p in range(processors) if cells[r][p] == k]
                    if all(modes[p] == -1 for p in mine):
                        for p in mine:
                            modes[p] = k
        return modes

    def pack():
        """Move jobs down to the lowest row free on all their processors, passes over
        rows 1, 2, ... (each row's jobs by first processor) until none moves."""
        moved = True
        while moved:
            moved = False
            for r in range(1, mpl):
                for k in dict.fromkeys(x for x in cells[r] if x >= 0):
                    mine = [p for p in range(processors) if cells[r][p] == k]
                    low = next((low for low in range(r)
                                if all(cells[low][p] < 0 for p in mine)), -1)
                    if low >= 0:
                        for p in mine:
                            cells[low][p], cells[r][p] = k, -1
                        jobs[k].row = low
                        moved = True

    def next_row(a):
        for step in range(1, mpl + 1):
            r = (a + step) % mpl
            if row_free(r) < processors:
                return r
        return -1

    while finished < len(jobs):
        if mode != "spin-block" and t >= slice_end:
            if mode == "fcs":
                end_of_slot(active)
            slice_end = math.inf
        while arrived < len(jobs) and jobs[arrived].submit <= t:
            queue.append(arrived)
            arrived += 1
            changed = True
        if changed and queue:
            admit()
        changed = False
        next_arrival = jobs[arrived].submit if arrived < len(jobs) else math.inf
        queued = sum(jobs[k].size for k in queue)
        if not resident:
            unused += max(0, processors - queued) * (next_arrival - t)
            t, slice_end = next_arrival, math.inf
            continue
        if mode != "spin-block" and slice_end == math.inf:
            active = next_row(active)
            for p, new in enumerate(slice_modes(active)):
                switched[p] = assigned[p] != -1 and new != -1 and assigned[p] != new
                assigned[p] = new
            slice_end = t + slice_s
        rate, share = rates()
        step = next_arrival - t
        if mode != "spin-block":
            step = min(step, slice_end - t)
        for k in resident:
            job = jobs[k]
            if job.sync and rate[k] > 0:
                step = min(step, (job.iters_total - job.done) / rate[k])
            for p, left in job.left.items():
                s = share.get((job.row, p), 0.0)
                if left > 0 and s > 0:
                    step = min(step, left / s)
        free = sum(1 for p in range(processors) if load(p) == 0)
        unused += max(0, free - queued) * step
        for k in resident:
            job = jobs[k]
            if job.sync and rate[k] > 0:
                job.done += rate[k] * step
                job.iters += rate[k] * step
                job.busy += step
            for p in job.left:
                job.left[p] = max(0.0, job.left[p] - share.get((job.row, p), 0.0) * step)
                if job.left[p] <= 1e-9 * job.iters_total * max(job.even, job.odd):
                    job.left[p] = 0.0
        t = slice_end if mode != "spin-block" and step == slice_end - t else (
            next_arrival if step == next_arrival - t else t + step)
        for k in list(resident):
            job = jobs[k]
            done = (job.iters_total - job.done <= 1e-9 * job.iters_total if job.sync
                    else all(left == 0.0 for left in job.left.values()))
            if done:
                job.end = t
                resident.remove(k)
                for p in range(processors):
                    if cells[job.row][p] == k:
                        cells[job.row][p] = -1
                    if assigned[p] == k:
                        assigned[p] = -1
                finished += 1
                changed = True
        if changed and mode == "gang" and alternate:
            pack()
    return jobs, unused
