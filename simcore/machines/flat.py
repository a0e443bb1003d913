"""Flat machines: N fully connected units; any free units will do, so only counts matter.

No unit bits are kept (one empty word): the schedulers see `counts_only` and check free
units themselves, and a placement is just the number of units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.jobs.jobs import Jobs

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


class FlatMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool


def memory_bytes(spec: MachineSpec) -> int:
    """Tables of a flat machine: none, whatever its size."""
    return 0


def build(spec: MachineSpec, jobs: Jobs) -> tuple[FlatMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's size on it (as requested) and one placement class."""
    return FlatMachine(spec.units, 1, True), jobs.size, np.zeros(len(jobs), dtype=np.int64)


def failure_domains(struct: FlatMachine) -> tuple[np.ndarray, np.ndarray]:
    """One domain per unit, without bits (units have no identity): a failure takes one
    unit of the pool (see simcore.core.failures)."""
    return (np.zeros((struct.units, struct.words), dtype=np.uint64),
            np.ones(struct.units, dtype=np.int64))


@implements(place, FlatMachine)
@kernel
def place_flat(m, st, j, units, busy, growth, forbidden, out):
    """Any `units` free units (the caller has checked there are that many)."""
    return units
