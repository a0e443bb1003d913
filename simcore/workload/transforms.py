"""From a job table (SWF schema) to `Jobs` for one machine: every transform named and seeded.

In order:
1. span: skip the first `skip_jobs` jobs, keep the next `first_jobs` (Krevat: 10,000);
2. sizes: processors per job (allocated, else requested) divided by
   `processors_per_unit`, rounded up (Aridor: CTC-SP2 / 4 onto 128 midplanes); jobs still
   larger than the machine are handled by `oversize`: `reject` (an error naming the
   first), `drop` or `clamp` (to the machine's size), and counted;
3. load: run and requested times multiplied by `runtime_scale` (Krevat's c), and/or
   arrival times rescaled from the first arrival so that the offered load
   sum(size x run) / (units x arrival span) equals `offered_load` (Aridor);
4. shapes, on machines that need them: slim/fat shapes with probability `p_fat`, torus
   with probability `p_torus` (see `simcore.workload.shapes`); sizes become shape volumes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from simcore.errors import SpecError
from simcore.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.workload.shapes import synthesize


@dataclass(frozen=True)
class WorkloadSpec:
    """How a job table becomes the jobs of one simulation."""

    skip_jobs: int = 0
    first_jobs: int | None = None
    processors_per_unit: int = 1
    runtime_scale: float = 1.0
    offered_load: float | None = None
    p_fat: float = 0.0
    p_torus: float = 0.0
    oversize: str = "reject"

    def __post_init__(self) -> None:
        for name in ("runtime_scale", "offered_load", "p_fat", "p_torus"):
            value = getattr(self, name)  # 1 and 1.0 must be one run: one canonical type
            if isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))
        checks = {
            "skip_jobs": self.skip_jobs >= 0,
            "first_jobs": self.first_jobs is None or self.first_jobs >= 1,
            "processors_per_unit": self.processors_per_unit >= 1,
            "runtime_scale": self.runtime_scale > 0,
            "offered_load": self.offered_load is None or self.offered_load > 0,
            "p_fat": 0 <= self.p_fat <= 1,
            "p_torus": 0 <= self.p_torus <= 1,
            "oversize": self.oversize in ("reject", "drop", "clamp"),
        }
        for name, ok in checks.items():
            if not ok:
                raise SpecError(f"workload {name}={getattr(self, name)!r} is out of range")

    def key(self) -> str:
        """Canonical JSON of every transform parameter."""
        return json.dumps(asdict(self), sort_keys=True)


def offered_load(size: np.ndarray, run_s: np.ndarray, submit_s: np.ndarray, units: int) -> float:
    """sum(size x run) / (units x (last arrival - first arrival))."""
    span = float(submit_s.max() - submit_s.min())
    if span <= 0:
        raise SpecError("offered load needs at least two distinct arrival times")
    return float((size * run_s).sum()) / (units * span)


def prepare(table: pa.Table, spec: WorkloadSpec, machine: MachineSpec, seed: int = 0) -> Jobs:
    """Apply `spec` to a job table for `machine`; `seed` drives shape synthesis."""
    span = table.slice(spec.skip_jobs, spec.first_jobs)
    if span.num_rows == 0:
        raise SpecError(f"workload span skip_jobs={spec.skip_jobs}, first_jobs="
                        f"{spec.first_jobs} holds no jobs (the table has {table.num_rows})")
    jobs = Jobs.from_swf(span, spec.processors_per_unit)
    oversize = jobs.size > machine.units
    if oversize.any() and spec.oversize == "reject":
        i = int(np.flatnonzero(oversize)[0])
        raise SpecError(
            f"job {jobs.job_id[i]} needs {jobs.size[i]} units, machine {machine} has "
            f"{machine.units} ({int(oversize.sum())} such jobs); expected workload transform "
            "oversize: drop | clamp, or a larger processors_per_unit")
    keep = ~oversize if spec.oversize == "drop" else np.ones(len(jobs), dtype=bool)
    size = np.minimum(jobs.size, machine.units)[keep]
    job_id, submit = jobs.job_id[keep], jobs.submit_s[keep]
    run = jobs.run_s[keep] * spec.runtime_scale
    requested = jobs.requested_s[keep]
    requested = np.where(requested > 0, requested * spec.runtime_scale, requested)
    shape = torus = requested_units = None
    if machine.wiring is not None:
        shape, torus = synthesize(job_id, size, machine.dims3, spec.p_fat, spec.p_torus, seed)
        requested_units, size = size, shape.prod(axis=1)
    if spec.offered_load is not None:
        first = submit.min()
        factor = offered_load(size, run, submit, machine.units) / spec.offered_load
        submit = first + (submit - first) * factor
    return Jobs.create(job_id, submit, run, requested, size, shape=shape, torus=torus,
                       requested_units=requested_units, oversize_jobs=int(oversize.sum()))
