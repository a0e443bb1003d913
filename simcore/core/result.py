"""What a run produces, whatever engine ran it: the per-job schedule table, the run
metrics derived from it, and the result object that carries both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array, arrow_table
from simcore.core.metrics import bounded_slowdown, capacity, span_s, summarize
from simcore.core.placements import PlacementLog
from simcore.jobs.jobs import Jobs


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Per-job schedule (`jobs`, one row per job in priority order) and run `summary`.

    `summary` holds only deterministic values; `timing` the wall-clock cost of the
    simulation (kernel time and time per scheduler decision), which varies run to run.
    `placements` lists every placement in time order (`PlacementLog`; None on time-sharing
    runs, whose jobs share processors in time).
    """

    jobs: pa.Table
    summary: dict[str, Any]
    migration_times_s: np.ndarray
    timing: dict[str, float]
    placements: PlacementLog | None = None


def schedule_metrics(jobs: Jobs, start_s: np.ndarray, end_s: np.ndarray, units: int,
                     unused_area: float, completed: np.ndarray | None = None,
                     cut_short_work: float = 0.0, failed_area: float = 0.0
                     ) -> dict[str, float]:
    """The run metrics every engine derives from its schedule: capacity utilized, unused,
    lost and failed, goodput, accepted load, wait, bounded slowdown and response
    statistics, makespan. `completed` marks the jobs that completed (default: all; a job a
    failure killed did not), `cut_short_work` and `failed_area` are the unit-seconds of runs
    failures cut short and of units out of service. Wait, slowdown and response cover the
    jobs after the warm-up (`jobs.warmup_jobs`); capacity covers the whole run."""
    response = end_s - jobs.submit_s
    first = jobs.warmup_jobs
    work = jobs.size * jobs.run_s
    busy = work if jobs.bsp is None else jobs.bsp.busy_s(jobs.size, jobs.run_s)
    if completed is not None:
        work, busy = np.where(completed, work, 0.0), np.where(completed, busy, 0.0)
    utilized, unused, lost, failed, goodput = capacity(
        busy, jobs.submit_s, end_s, units, unused_area, cut_short_work, failed_area)
    span = span_s(jobs.submit_s, end_s)
    return {
        "utilization": utilized,
        "unused": unused,
        "lost": lost,
        "failed": failed,
        "goodput": goodput,
        "accepted_load": (float(work.sum()) + cut_short_work) / (span * units) if span > 0
        else float("nan"),
        **summarize((start_s - jobs.submit_s)[first:], "wait_s"),
        **summarize(bounded_slowdown(response, jobs.run_s)[first:], "bsld"),
        **summarize(response[first:], "response_s"),
        "makespan_s": span,
    }


def schedule_table(jobs: Jobs, sched_s: np.ndarray, start_s: np.ndarray, end_s: np.ndarray,
                   estimate_s: np.ndarray, alloc: np.ndarray,
                   reserved_s: np.ndarray | None = None) -> pa.Table:
    """The per-job schedule every engine reports (JOB_COLUMNS; null reservations where
    `reserved_s` is None)."""
    response = end_s - jobs.submit_s
    return arrow_table({
        "job_id": jobs.job_id,
        "submit_s": jobs.submit_s,
        "sched_s": sched_s,
        "start_s": start_s,
        "end_s": end_s,
        "run_s": jobs.run_s,
        "estimate_s": estimate_s,
        "wait_s": start_s - jobs.submit_s,
        "response_s": response,
        "bsld": bounded_slowdown(response, jobs.run_s),
        "size": jobs.size,
        "alloc_size": alloc,
        "reserved_s": (pa.nulls(len(jobs), pa.float64()) if reserved_s is None
                       else arrow_array(reserved_s, null=np.isnan(reserved_s))),  # never reserved
    })
