"""A plain-Python reference of Chu's queue disciplines on a flat machine (counts only),
written from simcore/schedulers/queues.py's module docstring: lists and loops, no memo."""

from __future__ import annotations

import math


def queue_schedule(submit, run, size, estimate, units, scheduler, wtl=None, queues=1,
                   scan="down", blocking=False, scan_all=False):
    """Allocation times of jobs (given in arrival order) under `scheduler` (immediate-fit,
    scan-all, mq, smallest-jf, largest-jf, sjf, smallest-sdjf) with its parameters."""
    limit = math.inf if wtl is None else wtl
    n = len(submit)
    immediate = scheduler in ("immediate-fit", "scan-all", "mq") or scan_all
    passes_all = scheduler in ("scan-all",) or (scheduler == "mq" and not blocking) or scan_all

    def key(j):
        if scheduler == "mq":
            index = min(max(math.ceil(size[j] * queues / units), 1), queues)
            return queues - index + 1 if scan == "down" else index
        return {"smallest-jf": size[j], "largest-jf": -size[j], "sjf": estimate[j],
                "smallest-sdjf": estimate[j] * size[j]}.get(scheduler, 0)

    alloc_at = [math.nan] * n
    running = []  # (end, job)
    waiting = []  # in the discipline's order
    free = units
    arrived = 0

    def start(j, t):
        nonlocal free
        alloc_at[j] = t
        free -= size[j]
        running.append((t + run[j], j))

    def pass_(t):
        for j in list(waiting):
            if size[j] <= free:
                start(j, t)
                waiting.remove(j)
            elif not passes_all or t - submit[j] >= limit:
                return

    while arrived < n or running:
        t = min([end for end, _ in running] + ([submit[arrived]] if arrived < n else []))
        done = [r for r in running if r[0] == t]
        for r in done:
            running.remove(r)
            free += size[r[1]]
        if done and waiting:
            pass_(t)
        new = []
        while arrived < n and submit[arrived] <= t:
            new.append(arrived)
            arrived += 1
        for j in new:
            older = [k for k in range(n) if math.isnan(alloc_at[k]) and submit[k] <= t
                     and k != j and (k in waiting)]
            if immediate and not (older and t - submit[min(older)] >= limit) \
                    and size[j] <= free:
                start(j, t)
                continue
            position = len(waiting)
            while position > 0 and key(waiting[position - 1]) > key(j):
                position -= 1
            waiting.insert(position, j)
        if new and not immediate:
            pass_(t)
    return alloc_at
