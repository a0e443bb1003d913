"""One run's outputs as `simcore run` writes them: the JSON report (its fields besides the
run metrics: `simcore.report.listing.RUN_JSON`) and the per-job schedule file."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from simcore.base.atomic import atomic_path
from simcore.workload.spec import WorkloadSpec

if TYPE_CHECKING:  # an annotation only: the result module loads numba, `simcore list` not
    from simcore.core.result import SimulationResult

#: The report lists each job's termination time up to this many jobs.
LISTED_JOBS = 100


def run_report(result: SimulationResult, source: str, workload: WorkloadSpec
               ) -> dict[str, Any]:
    """The run as `simcore run --json` prints it: the summary, the turnaround, each job's
    end time by job id (null above LISTED_JOBS jobs), the workload (`source` and every
    transform's value) and the timing."""
    listed = result.jobs.num_rows <= LISTED_JOBS
    return {**result.summary, "turnaround_s": result.summary["makespan_s"],
            "termination_s": dict(zip(map(str, result.jobs.column("job_id").to_pylist()),
                                      result.jobs.column("end_s").to_pylist(), strict=True))
            if listed else None,
            "workload": {"source": source, **json.loads(workload.key())},
            "timing": result.timing}


def write_schedule(result: SimulationResult, path: str | os.PathLike[str]) -> None:
    """Write the run's per-job schedule to `path` as zstd Parquet, atomically."""
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(result.jobs, tmp, compression="zstd")
