"""Outages inferred from a log's recorded starts: stretches in which the machine started
nothing although its longest-waiting job fitted the processors the log shows free.

A log records when each job started and how long it ran, so it shows how many processors
were busy at any time. Between two consecutive recorded starts nothing started; if the
job that had waited longest (the earliest submitted among those not yet started; ties by
job number) fitted the free processors for at least `min_gap_s` of that stretch, no
first-come-first-served or backfilling scheduler that starts its head job when it fits
would have left it waiting: the machine was not taking jobs. The outage runs from the
moment that job fitted (free processors only grow in a stretch without starts) to the
next recorded start.

The inference reads recorded starts, so a fit may use it only on the half of the log it
fits on (`until_s`: jobs submitted before it, and stretches ending before it); outages
inferred from a scored half's starts are a diagnostic, never a prediction.

`drain_trace` writes outages as a failure trace of a flat machine whose every unit drains
(`on_failure: drain`, `simcore.core.failures`): no new starts, running jobs continue.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.atomic import atomic_write_bytes
from simcore.jobs.swf import MISSING, job_size


def infer_outages(log: pa.Table, processors: int, min_gap_s: float,
                  until_s: float = np.inf) -> np.ndarray:
    """The outages of the module docstring as rows (start_s, end_s) in log time, from the
    jobs of `log` submitted before `until_s` whose wait is recorded, on a machine of
    `processors`."""
    submit = numpy_array(log.column("submit_time")).astype(np.float64)
    wait = numpy_array(log.column("wait_time")).astype(np.float64)
    keep = (submit < until_s) & (wait != MISSING)
    submit, wait = submit[keep], wait[keep]
    run = np.maximum(numpy_array(log.column("run_time")).astype(np.float64)[keep], 0.0)
    size = job_size(log)[keep]
    job = numpy_array(log.column("job_number"))[keep]
    start = submit + wait
    end = start + run
    starts = np.unique(start)
    gaps = np.flatnonzero(np.diff(starts) >= min_gap_s)
    by_end = np.argsort(end, kind="stable")
    end_sorted, freed = end[by_end], np.cumsum(size[by_end])
    by_start = np.argsort(start, kind="stable")
    start_sorted, taken = start[by_start], np.cumsum(size[by_start])
    queue = np.lexsort((job, submit))
    rows = []
    for g in gaps:
        a, b = starts[g], starts[g + 1]
        if b > until_s:
            break
        waiting = queue[(submit[queue] < b) & (start[queue] >= b)]
        if waiting.size == 0:
            continue
        head = waiting[0]
        busy_at_a = _cumulative(taken, start_sorted, a) - _cumulative(freed, end_sorted, a)
        need = size[head] - (processors - busy_at_a)  # processors still to come free
        fits_at = max(a, submit[head])
        if need > 0:  # the first end in the stretch after which enough are free
            ends = np.searchsorted(end_sorted, a, side="right")
            more = np.searchsorted(freed[ends:] - (freed[ends - 1] if ends else 0), need)
            if ends + more >= end_sorted.size:
                continue
            fits_at = max(fits_at, end_sorted[ends + more])
        if b - fits_at >= min_gap_s:
            rows.append((fits_at, b))
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def _cumulative(running_sum: np.ndarray, times: np.ndarray, t: float) -> int:
    """The running sum of the events at times <= t (`times` sorted)."""
    k = int(np.searchsorted(times, t, side="right"))
    return int(running_sum[k - 1]) if k else 0


def drain_trace(outages: np.ndarray, units: int, first_arrival_s: float,
                path: str | os.PathLike[str]) -> Path:
    """Write `outages` (rows start_s, end_s in log time) as the failure trace of a flat
    machine of `units` units, each unit draining for every outage; times from
    `first_arrival_s`, the first arrival of the jobs replayed."""
    lines = [f"# {len(outages)} outages inferred from the log, every unit draining"]
    for start_s, end_s in outages:
        at = max(start_s - first_arrival_s, 0.0)
        lines.extend(f"{float(at)!r} {unit} {float(end_s - first_arrival_s - at)!r}"
                     for unit in range(units))
    path = Path(path)
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())
    return path
