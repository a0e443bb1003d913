"""A log replayed with what it records beyond the textbook: each factor a switch.

The textbook replay runs every job of a cleaned log on one flat machine of its size under
one queue in arrival order. A `Model` adds, each only where switched on:

- `partitions`: jobs of each partition (SWF field 16) on a machine of their own, of the
  processors the header gives it (SDSC-Par: 48 interactive, 352 batch);
- `node_processors`: whole-node allocation, sizes rounded up to nodes of this many
  processors on a machine of nodes (SDSC-BLUE: 144 nodes of 8);
- `capacity`: the share of the processors the log's jobs had (nodes down, or kept for
  other work, that the log does not record);
- `queue_scale`, `user_scale`, `group_scale`: priorities by queue (field 15), user (field
  12) and group (field 13) as head starts (`Jobs.priority_s`) under `priority-backfill`:
  queue q's jobs are ranked `queue_scale` x (the longest queue mean wait - q's mean wait)
  ahead, from the recorded waits of the first half only (a queue with fewer than
  `MIN_QUEUE_JOBS` jobs there, or none, takes the half's mean); users and groups alike,
  a static stand-in for fair share;
- `outage_gap_s`: outages inferred from the recorded starts (`simcore.fidelity.outages`,
  stretches of at least this long), as drains of every unit, from the first half only.

A job larger than its machine (a partition, or what the capacity leaves) is clamped to it,
in every model alike, so that every model is scored on the same jobs.

Two diagnostics, never scored as predictions: `outages_from_whole_log` infers the outages
from the second half's starts too, and `recorded_order` ranks the queue by each job's
recorded start (a job whose wait is unknown at its submit time), a bound on what a queue
order can do.

Every other input of the second half's jobs is one a scheduler had when they arrived:
submit, run and requested times, sizes, queue, user, group and partition; never their recorded
waits or starts.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.errors import SpecError
from simcore.fidelity.compare import halves
from simcore.fidelity.outages import drain_trace, infer_outages
from simcore.jobs.swf import MISSING
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.spec import WorkloadSpec
from simcore.workload.transforms import prepare

#: A queue needs this many jobs in the fitted half for its own mean wait.
MIN_QUEUE_JOBS = 30
#: The columns of a model's schedule: what `compare` reads.
SCHEDULE = ("job_id", "submit_s", "start_s")
#: The SWF field of each priority factor (a Model field).
PRIORITY_FIELDS = {"queue_scale": "queue", "user_scale": "user_id", "group_scale": "group_id"}
#: The scheduler of a model with queue priorities: EASY in priority order.
PRIORITY_SCHEDULER = "priority-backfill"


@dataclass(frozen=True)
class Model:
    """The factors of one replay (module docstring); the defaults are the textbook's."""

    partitions: tuple[tuple[int, int], ...] = ()
    node_processors: int = 1
    queue_scale: float = 0.0
    user_scale: float = 0.0
    group_scale: float = 0.0
    capacity: float = 1.0
    outage_gap_s: float | None = None
    outages_from_whole_log: bool = False
    recorded_order: bool = False

    def label(self) -> str:
        """The fitted values, as the ablation table states them."""
        parts = []
        if self.partitions:
            parts.append("partitions " + ", ".join(
                f"{p}: {n}" for p, n in self.partitions))
        if self.node_processors > 1:
            parts.append(f"whole nodes of {self.node_processors}")
        if self.queue_scale:
            parts.append(f"queue scale {self.queue_scale:g}")
        if self.user_scale:
            parts.append(f"user scale {self.user_scale:g}")
        if self.group_scale:
            parts.append(f"group scale {self.group_scale:g}")
        if self.capacity < 1:
            parts.append(f"capacity {self.capacity:.0%}")
        if self.outage_gap_s is not None:
            parts.append(f"outage gap {self.outage_gap_s / 3600:g} h"
                         + (" (whole log)" if self.outages_from_whole_log else ""))
        if self.recorded_order:
            parts.append("queue in recorded start order")
        return "; ".join(parts) or "-"


def fit_cutoff(log: pa.Table) -> float:
    """The first submit time of the second half: the fitted half's jobs were all
    submitted, and its inferred outages end, before it."""
    second = halves(log) == 2
    return float(numpy_array(log.column("submit_time"))[second].min())


def head_starts(log: pa.Table, scale: float, field: str = "queue") -> np.ndarray:
    """Each job's head start under priorities of `scale` by SWF `field` (queue, user or
    group; module docstring), from the recorded waits of the log's first half."""
    keys, key = np.unique(numpy_array(log.column(field)), return_inverse=True)
    wait = numpy_array(log.column("wait_time")).astype(np.float64)
    fitted = (halves(log) == 1) & (wait != MISSING)
    overall = float(wait[fitted].mean()) if fitted.any() else 0.0
    mean = np.full(keys.size, overall)
    for k in range(keys.size):
        mine = fitted & (key == k)
        if mine.sum() >= MIN_QUEUE_JOBS:
            mean[k] = wait[mine].mean()
    return scale * (mean.max() - mean[key])


def model_schedule(log: pa.Table, machine: MachineSpec, policy: PolicySpec,
                   model: Model) -> pa.Table:
    """The schedule of the cleaned `log` under `model` on `machine` (a flat machine of its
    processors) with `policy`, the textbook's (EASY): the `SCHEDULE` columns of a run's
    per-job table, its parts (one per partition) concatenated."""
    head_start = None
    scales = {name: getattr(model, name) for name in PRIORITY_FIELDS}
    if any(scales.values()) or model.recorded_order:
        policy = PolicySpec.from_params(PRIORITY_SCHEDULER, policy.params())
        head_start = sum(head_starts(log, scale, PRIORITY_FIELDS[name])
                         for name, scale in scales.items())
        if model.recorded_order:  # ranked by the recorded start: a diagnostic bound
            wait = numpy_array(log.column("wait_time")).astype(np.float64)
            head_start = np.where(wait == MISSING, 0.0, -wait)
    cutoff = np.inf if model.outages_from_whole_log else fit_cutoff(log)
    parts = [(log, machine.units, head_start)]
    if model.partitions:
        partition = numpy_array(log.column("partition"))
        processors = dict(model.partitions)
        outside = np.flatnonzero(~np.isin(partition, list(processors)))
        if outside.size:
            raise SpecError(
                f"job {numpy_array(log.column('job_number'))[outside[0]]} is in partition "
                f"{partition[outside[0]]} (field 16; {outside.size} such jobs); expected "
                f"one of the partitions {sorted(processors)}")
        parts = [(log.filter(pa.array(partition == p)), n,
                  None if head_start is None else head_start[partition == p])
                 for p, n in model.partitions]
    schedules = []
    with tempfile.TemporaryDirectory() as scratch:
        for k, (part, processors, heads) in enumerate(parts):
            if part.num_rows:
                schedules.append(_part_schedule(part, processors, heads, policy, model,
                                                cutoff, os.path.join(scratch, f"{k}.txt")))
    return pa.concat_tables(schedules)


def _part_schedule(log: pa.Table, processors: int, head_start: np.ndarray | None,
                   policy: PolicySpec, model: Model, cutoff: float,
                   trace: str) -> pa.Table:
    """One part of `model_schedule`: the jobs of one machine."""
    units = int(processors * model.capacity) // model.node_processors
    spec = WorkloadSpec(processors_per_unit=model.node_processors, machine_fit="clamp")
    machine = MachineSpec.parse(f"flat:{units}")
    jobs = prepare(log, spec, machine)
    if head_start is not None:
        number = numpy_array(log.column("job_number"))
        by_number = np.argsort(number, kind="stable")
        row = by_number[np.searchsorted(number, jobs.job_id, sorter=by_number)]
        jobs = dataclasses.replace(jobs, priority_s=head_start[row])
    if model.outage_gap_s is not None:
        outages = infer_outages(log, processors, model.outage_gap_s, cutoff)
        if len(outages):
            path = drain_trace(outages, units, float(jobs.submit_s[0]), trace)
            machine = MachineSpec.parse(f"flat:{units}", options={
                "failure_trace": str(path), "on_failure": "drain"})
    return simulate(jobs, machine, policy.on(machine.capabilities)).jobs.select(SCHEDULE)
