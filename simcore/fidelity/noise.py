"""The noise floor of a replay: how far one policy's schedule of a log moves under changes
no log can rule out, in `compare`'s metrics.

A log records times to the second, and its jobs submitted in the same second in an order
the log does not say the machine saw. Two replays:

- `arrivals_shaken`: every arrival moved by up to `SHAKE_S` either way, uniformly and
  seeded per job (the workload transform `arrival_shake_s`);
- `ties_reversed`: jobs submitted at the same time queued in the other order (job number
  descending, where a replay queues them ascending); nothing else changes.

Each is compared with the unperturbed replay as `compare` compares a replay with the log
(the unperturbed starts stand in for the recorded ones). Agreement with the log above its
noise floor is what no replay can promise: a fidelity target is read against it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.fidelity.compare import HALVES, compare
from simcore.jobs.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.spec import WorkloadSpec
from simcore.workload.transforms import prepare

#: The largest move of an arrival in `arrivals_shaken`: the resolution of a log's times.
SHAKE_S = 1.0
#: The replays of the noise floor, in the order `noise_floor` reports them.
PERTURBATIONS = ("arrivals_shaken", "ties_reversed")


def noise_floor(log: pa.Table, jobs: Jobs, machine: MachineSpec, policy: PolicySpec,
                replay: pa.Table, seed: int = 0) -> dict[str, dict[str, dict]]:
    """For each of `PERTURBATIONS`, `compare`'s metrics over all jobs and per half of the
    perturbed replay of the cleaned `log` against `replay`, the unperturbed schedule of its
    `jobs` (the log as `prepare` makes it, untransformed) on the same machine and policy.
    `seed` draws the shaken arrivals."""
    shaken = prepare(log, WorkloadSpec(arrival_shake_s=SHAKE_S), machine, seed)
    reversed_ties, job_number = ties_reversed(jobs)
    reversed_schedule = simulate(reversed_ties, machine, policy, seed).jobs
    original = job_number[numpy_array(reversed_schedule.column("job_id"))]
    schedules = {
        "arrivals_shaken": simulate(shaken, machine, policy, seed).jobs,
        "ties_reversed": reversed_schedule.set_column(
            reversed_schedule.schema.get_field_index("job_id"), "job_id", pa.array(original)),
    }
    floor = {}
    for name in PERTURBATIONS:
        report = compare(log, schedules[name], reference=replay).report
        floor[name] = {part: report[part] for part in ("all", *HALVES)}
    return floor


def ties_reversed(jobs: Jobs) -> tuple[Jobs, np.ndarray]:
    """The same jobs with jobs of equal submit times queued in the other order, and the
    job number of each: they are numbered 0..n-1 in their new queue order (the queue
    breaks ties by job number), so `job_number[k]` is the job numbered k."""
    order = np.lexsort((-jobs.job_id, jobs.submit_s))
    number = np.empty(len(jobs), dtype=np.int64)
    number[order] = np.arange(len(jobs))
    relabelled = Jobs.create(
        number, jobs.submit_s, jobs.run_s, jobs.requested_s, jobs.size, shape=jobs.shape,
        torus=jobs.torus, requested_units=jobs.requested_units,
        oversize_jobs=jobs.oversize_jobs, bsp=jobs.bsp, warmup_jobs=jobs.warmup_jobs)
    return relabelled, jobs.job_id[order]
