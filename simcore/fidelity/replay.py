"""A log replayed whole under one policy: its schedule, compared with the log's recorded
starts (`compare`) and beside the noise floor of the replay (`noise_floor`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.errors import SpecError
from simcore.fidelity.compare import Fidelity, compare
from simcore.fidelity.noise import noise_floor
from simcore.jobs.swf import job_size
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.spec import WorkloadSpec
from simcore.workload.transforms import prepare


@dataclass(frozen=True)
class Replay:
    """What `replay` found: the `schedule` (a run's per-job table), its `fidelity` and
    the `noise_floor` (`simcore.fidelity.noise.noise_floor`'s mapping)."""

    schedule: pa.Table
    fidelity: Fidelity
    noise_floor: dict[str, dict[str, dict]]


def replay(log: pa.Table, machine: MachineSpec, policy: PolicySpec, seed: int = 0) -> Replay:
    """Simulate the cleaned `log` whole, its jobs as recorded, on `machine` under
    `policy`, and compare; `seed` draws the noise floor's shaken arrivals."""
    jobs = prepare(log, WorkloadSpec(), machine)
    schedule = simulate(jobs, machine, policy).jobs
    return Replay(schedule, compare(log, schedule),
                  noise_floor(log, jobs, machine, policy, schedule, seed))


def check_fits(log: pa.Table, machine: MachineSpec, where: str, remedy: str = "") -> None:
    """Every job of the cleaned `log` must fit `machine`: an error at `where` names the
    first that does not, the smallest machine that holds them all and `remedy`."""
    size = job_size(log)
    larger = np.flatnonzero(size > machine.units)
    if larger.size:
        i = int(larger[0])
        raise SpecError(
            f"{where}: job {numpy_array(log.column('job_number'))[i]} needs {size[i]} "
            f"processors, the machine has {machine.units} ({larger.size} such jobs); "
            f"expected a machine of at least {int(size.max())} units{remedy}")
