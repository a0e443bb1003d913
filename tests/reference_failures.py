"""Plain-Python references for machines that fail (simcore.core.failures).

`flat_failure_schedule` runs FCFS or EASY on a flat machine with outage events, written
from the documented rules: at one time, completions, then outages (a repaired unit is free
again; a failure hits the running job holding unit floor(u x in-service units), the busy
units counted first job by job in job order, which is requeued at its arrival position or
killed, and takes one unit out of service), then arrivals, then the scheduler.
`check_outages` replays a result's placement log against the outages: no run uses a unit
out of service, no unit is held by two runs at once, and every run cut short was hit by a
failure of one of its units.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def flat_failure_schedule(submit, run, estimate, size, units, easy, events, requeue):
    """(start, end, killed, hits) per job (given in priority order) on a flat machine of
    `units` units, under FCFS or EASY, with `events` = [(time, domain, repair, draw)] in
    order (simcore.core.failures' event order)."""
    n = len(submit)
    start, end = [math.nan] * n, [math.nan] * n
    killed, hits = [False] * n, [0] * n
    running = {}  # job -> (end, estimated end)
    queue = []
    free, down, arrived, e = units, 0, 0, 0

    def begin(j, t):
        nonlocal free
        start[j], end[j] = t, t + run[j]
        running[j] = (t + run[j], t + estimate[j])
        free -= size[j]
        queue.remove(j)

    while arrived < n or running or queue:
        times = [r[0] for r in running.values()] + ([submit[arrived]] if arrived < n else [])
        times += [events[e][0]] if e < len(events) else []
        if not times:
            raise AssertionError("stuck")
        t = min(times)
        for j in [j for j, r in running.items() if r[0] == t]:
            del running[j]
            free += size[j]
        while e < len(events) and events[e][0] <= t:
            _, _, repair, draw = events[e]
            e += 1
            if repair:
                free, down = free + 1, down - 1
                continue
            busy = sum(size[j] for j in running)
            unit = int(draw * (busy + free))
            for j in sorted(running):
                if unit < size[j]:
                    del running[j]
                    free += size[j]
                    hits[j] += 1
                    if requeue:
                        queue.append(j)
                        queue.sort()
                        start[j] = end[j] = math.nan
                    else:
                        end[j], killed[j] = t, True
                    break
                unit -= size[j]
            free, down = free - 1, down + 1
        while arrived < n and submit[arrived] == t:
            queue.append(arrived)
            arrived += 1
        while queue and size[queue[0]] <= free:
            begin(queue[0], t)
        if easy and queue:
            head = queue[0]
            available, shadow = free, math.inf
            for estimated_end, j in sorted((r[1], j) for j, r in running.items()):
                available += size[j]
                if available >= size[head]:
                    shadow = estimated_end
                    break
            extra = free + sum(size[j] for j, r in running.items() if r[1] <= shadow) \
                - size[head]
            for j in list(queue[1:]):
                if size[j] > free:
                    continue
                if t + estimate[j] <= shadow:
                    begin(j, t)
                elif size[j] <= extra:
                    extra -= size[j]
                    begin(j, t)
        if queue and not running and arrived == n and down == 0:
            raise AssertionError("stuck")
    return np.array(start), np.array(end), np.array(killed), np.array(hits)


def check_outages(result, masks: np.ndarray, events) -> int:
    """Replay the placement log of `result` against the
    outage `events` = (time, domain, repair) arrays and the domains' resource `masks`:
    each placement lasts until the job's next placement (a migration move, or a new run
    after a failure of one of its resources cut it short) or its end; the last one ends
    no later than such a failure. No placement uses a resource out of service or one held
    by another. Returns the placements checked."""
    log = result.placements
    time, domain, repair = events
    ends = dict(zip(result.jobs.column("job_id").to_pylist(),
                    result.jobs.column("end_s").to_numpy(), strict=True))
    bits = log.bits()
    domain_bits = [np.flatnonzero(np.unpackbits(m.view(np.uint8), bitorder="little"))
                   for m in masks]
    outages = {}  # resource -> [[from, to]]
    for t, d, r in zip(time, domain, repair, strict=True):
        if d < 0:
            continue
        for b in domain_bits[d]:
            if not r:
                outages.setdefault(int(b), []).append([t, math.inf])
            else:
                outages[int(b)][-1][1] = t
    fails_at = {b: np.array([lo for lo, _ in spans]) for b, spans in outages.items()}
    following = {}  # entry -> the job's next entry (a migration move or a new run)
    for i in range(len(log.time_s) - 1, -1, -1):
        job = log.job_id[i]
        following[i] = following.get(("job", job))
        following[("job", job)] = i
    spans = {}  # resource -> [(from, until, job)]
    for i, (t, job) in enumerate(zip(log.time_s, log.job_id, strict=True)):
        used = np.flatnonzero(bits[i])
        cut = math.inf  # the first failure of one of its resources after t
        for b in used:
            times = fails_at.get(int(b))
            if times is not None:
                k = np.searchsorted(times, t, side="right")
                cut = min(cut, times[k]) if k < times.size else cut
        after = following[i]
        if after is None:  # the last run: it completes, or it is killed, by the cut
            until = ends[job]
            assert until <= cut, f"job {job} run from {t} outlived a failure at {cut}"
        else:  # moved by a migration before the cut, or cut short and placed again
            until = min(log.time_s[after], cut)
        for b in used:
            assert not any(lo <= t < hi for lo, hi in outages.get(int(b), [])), \
                f"job {job} placed at {t} on resource {b}, out of service"
            spans.setdefault(int(b), []).append((t, until, job))
    for b, held in spans.items():
        held.sort()
        for (_, until, job), (t2, _, job2) in itertools.pairwise(held):
            assert t2 >= until, f"jobs {job} and {job2} hold resource {b} at once at {t2}"
    return len(log.time_s)
