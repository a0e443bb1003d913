"""Placements read from a shard's per-job rows, checked as no run makes them otherwise.

A run's per-job rows (`jobs.parquet`) hold its placement log (`placed_at`, `placed_s`,
`placed_code`); the codes are checked against their bitset's size where they are decoded
(`simcore.core.placements`). Before a schedule is exported from them, this module checks
what a run guarantees: every time finite, each entry between its job's submission and
end and the entries in time order (`check_times`, before the log is replayed), and, on
the replayed segments, each job holding exactly its allocated units on bits of the machine's
units (or, on a wired machine, its cables) and no unit held by two jobs at once
(`check_holdings`). Each fault is a SimcoreError naming the file, the job and the column.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa

from simcore.base.errors import SimcoreError
from simcore.schedules.export import Schedule


def check_times(table: pa.Table, log_time_s: np.ndarray, log_job_id: np.ndarray,
                where: Path) -> None:
    """The per-job rows' times and sizes, and the log's entry times (`log_time_s` of
    jobs `log_job_id`, in entry order), as a run writes them."""
    ids = table.column("job_id").to_numpy()
    chain = ("submit_s", "sched_s", "start_s", "end_s")
    times = [table.column(name).to_numpy() for name in chain]
    ordered = np.isfinite(times[0])
    for before, after in itertools.pairwise(times):
        ordered &= np.isfinite(after) & (before <= after)
    bad = np.flatnonzero(~ordered)
    if bad.size:
        k = int(bad[0])
        raise SimcoreError(f"{where}: job {ids[k]}: " + ", ".join(
            f"{name} {float(values[k])!r}" for name, values in zip(chain, times, strict=True))
            + "; expected finite times in this order")
    submit, end = times[0], times[-1]
    alloc = table.column("alloc_size").to_numpy()
    bad = np.flatnonzero(alloc < 1)
    if bad.size:
        k = int(bad[0])
        raise SimcoreError(f"{where}: job {ids[k]}: alloc_size {alloc[k]}; expected at least 1")
    row = {j: i for i, j in enumerate(ids.tolist())}
    placed = np.array([row[j] for j in log_job_id.tolist()], dtype=np.int64)
    bad = np.flatnonzero(~((log_time_s >= submit[placed]) & (log_time_s <= end[placed])))
    if bad.size:
        e = int(bad[0])
        raise SimcoreError(f"{where}: job {log_job_id[e]}: placed_s {float(log_time_s[e])!r}; "
                           f"expected a time from its submit_s ({float(submit[placed[e]])!r}) to "
                           f"its end_s ({float(end[placed[e]])!r})")
    bad = np.flatnonzero(np.diff(log_time_s) < 0)
    if bad.size:
        e = int(bad[0]) + 1
        raise SimcoreError(f"{where}: job {log_job_id[e]}: placed_s {float(log_time_s[e])!r} of "
                           f"entry {e} (placed_at) is before entry {e - 1}'s "
                           f"({float(log_time_s[e - 1])!r}); expected the entries in time order")


def check_holdings(schedule: Schedule, where: Path) -> None:
    """Each placement's bits within the machine, each segment on as many units as its job
    was allocated, and no unit held by two jobs at once."""
    log, units = schedule.placements, schedule.numbering
    if not schedule.machine.row.wired:
        inside = np.packbits(np.arange(64 * log.words) < (0 if units.packing else units.units),
                             bitorder="little").view("<u8")
        beyond = np.flatnonzero((log.masks & ~inside).any(axis=1))
        if beyond.size:
            e = int(beyond[0])
            raise SimcoreError(f"{where}: job {log.job_id[e]}: placed_code of entry {e} sets "
                               "bits beyond the machine's units; expected "
                               + ("none (a flat machine's units have no bits)" if units.packing
                                  else f"bits below {units.units}"))
    table = schedule.result.jobs
    alloc = dict(zip(table.column("job_id").to_pylist(), table.column("alloc_size").to_pylist(),
                     strict=True))
    spans = sorted(((s.from_s, job, s) for job, runs in schedule.segments.items()
                    for s in runs), key=lambda span: span[0])
    until = np.full(units.units, -np.inf)
    holder = np.full(units.units, -1, dtype=np.int64)
    for from_s, job, segment in spans:
        if segment.units.size != alloc[job]:
            raise SimcoreError(f"{where}: job {job}: placed_code holds {segment.units.size} "
                               f"units from {float(from_s)!r}; expected its alloc_size "
                               f"({alloc[job]})")
        if segment.until_s == from_s:
            continue  # placed and moved at one event time: held at no moment
        taken = segment.units[until[segment.units] > from_s]
        if taken.size:
            unit = int(taken[0])
            raise SimcoreError(f"{where}: job {job}: placed_code holds unit {unit} from "
                               f"{float(from_s)!r} while job {holder[unit]} holds it until "
                               f"{float(until[unit])!r}; expected each unit held by one "
                               "job at a time")
        until[segment.units] = np.maximum(until[segment.units], segment.until_s)
        holder[segment.units] = job
