"""A log replayed whole under one policy: its schedule, compared with the log's recorded
starts (`compare`) and beside the noise floor of the replay (`noise_floor`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from simcore.fidelity.compare import Fidelity, compare
from simcore.fidelity.noise import noise_floor
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
    schedule = simulate(prepare(log, WorkloadSpec(), machine), machine, policy).jobs
    return Replay(schedule, compare(log, schedule),
                  noise_floor(log, machine, policy, schedule, seed))
