"""Which runs of a sweep replay a log, and their fidelity as run metrics.

A run replays a log when its workload is a converted trace (a table `clean` made: it
carries the cleaning report) that records waits (SWF field 3 known for at least one job)
and its transforms keep the log's arrivals and jobs. The transforms that do not are
those of MOVED: inserted jobs and copies are not the log's jobs, and shaken or rescaled
arrivals are not its submit times, so no job's recorded start is one to meet. The others
keep a replay: the span (`skip_jobs`, `first_jobs`) and `machine_fit: drop` leave jobs out
(counted by the command as not simulated, and outside the compared jobs here), and sizes,
run times and estimates (`processors_per_unit`, `fit_to_machine`, `machine_fit: clamp`,
`runtime_scale`, `estimate_factor`), shapes, the BSP model and `warmup_jobs` change how
the machine runs the log's jobs, which is what a fidelity study varies. An extension
transform that acts may do either, so a run with one is no replay.

A replay's summary holds `simcore.fidelity.compare.run_metrics` (the columns of
`simcore.core.columns.fidelity_metrics`); every other run leaves them null.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.fidelity.compare import run_metrics
from simcore.jobs.cleaning import cleaning_report
from simcore.jobs.swf import MISSING
from simcore.workload.spec import WorkloadSpec

#: The transforms that move a log's arrivals or add or relabel its jobs, each with the
#: value that leaves them alone.
MOVED = {"insert_per_h": 0.0, "replication": 1, "arrival_shake_s": 0.0,
         "offered_load": None}


def replays_log(table: pa.Table, spec: WorkloadSpec) -> bool:
    """Whether a run of `spec` on the job table `table` replays a log (module
    docstring)."""
    return (cleaning_report(table) is not None
            and bool(np.any(numpy_array(table.column("wait_time")) != MISSING))
            and all(getattr(spec, name) == kept for name, kept in MOVED.items())
            and not spec.extensions())


def replay_metrics(table: pa.Table, spec: WorkloadSpec,
                   schedule: pa.Table) -> dict[str, Any]:
    """The fidelity run metrics of a run of `spec` on `table` whose per-job schedule is
    `schedule`: `run_metrics` for a replay of a log, else none (null in the store)."""
    return run_metrics(table, schedule) if replays_log(table, spec) else {}
