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
   with probability `p_torus` (see `simcore.workload.shapes`); sizes become shape volumes;
5. the BSP job model time-sharing schedulers need, drawn per job by the model `bsp_model`
   names (see `simcore.timeshare.bsp`), for sources that carry none.
"""

from __future__ import annotations

import json
from dataclasses import Field, asdict, dataclass, field, fields

import numpy as np
import pyarrow as pa

from simcore.errors import SpecError
from simcore.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.params import Parameter
from simcore.timeshare.bsp import MODELS as BSP_MODELS
from simcore.workload.shapes import synthesize

#: Where a transform is set in an experiment: once (`transforms:`) or as a grid axis.
FIXED, GRID = "transforms", "grid"


def _transform(parameter: Parameter, axis: str, shaped: bool = False,
               draws: bool = False) -> Field:
    """A WorkloadSpec field defined by `parameter`. `shaped`: it only matters on machines
    whose jobs ask for shapes, and values strictly between 0 and 1 draw random numbers.
    `draws`: any value but null draws random numbers."""
    return field(default=parameter.default, metadata={"parameter": parameter, "axis": axis,
                                                      "shaped": shaped, "draws": draws})


@dataclass(frozen=True)
class WorkloadSpec:
    """How a job table becomes the jobs of one simulation (see the module docstring)."""

    skip_jobs: int = _transform(Parameter(
        "skip_jobs", int, 0, "jobs skipped at the start of the source", unit="jobs",
        minimum=0), FIXED)
    first_jobs: int | None = _transform(Parameter(
        "first_jobs", int, None, "jobs kept after them (Krevat: 10,000); null: all",
        unit="jobs", minimum=1, optional=True), FIXED)
    processors_per_unit: int = _transform(Parameter(
        "processors_per_unit", int, 1, "processors per allocation unit; sizes are divided "
        "and rounded up (CTC on BG/L midplanes: 4)", unit="procs/unit", minimum=1), FIXED)
    runtime_scale: float = _transform(Parameter(
        "runtime_scale", float, 1.0, "run and requested times multiplied by this (Krevat's "
        "c)", unit="factor", minimum=0.0, exclusive_minimum=True), GRID)
    offered_load: float | None = _transform(Parameter(
        "offered_load", float, None, "arrivals rescaled so that sum(size x run) / (units x "
        "arrival span) is this (Aridor); null: arrivals kept", unit="fraction", minimum=0.0,
        exclusive_minimum=True, optional=True), GRID)
    p_fat: float = _transform(Parameter(
        "p_fat", float, 0.0, "probability that a job's shape is fat (sides >= 2) rather than "
        "slim (Aridor)", unit="prob", minimum=0.0, maximum=1.0), GRID, shaped=True)
    p_torus: float = _transform(Parameter(
        "p_torus", float, 0.0, "probability that a job wants a torus rather than a mesh "
        "(Aridor)", unit="prob", minimum=0.0, maximum=1.0), GRID, shaped=True)
    oversize: str = _transform(Parameter(
        "oversize", str, "reject", "jobs larger than the machine after size scaling: reject "
        "(an error), drop or clamp (to the machine), counted either way",
        choices=("reject", "drop", "clamp")), FIXED)
    bsp_model: str | None = _transform(Parameter(
        "bsp_model", str, None, "BSP job model (pattern, granularity, imbalance) drawn for "
        "each job, for time-sharing schedulers: 'random' (docs/timesharing.md); null: the "
        "source's own, if any", choices=tuple(BSP_MODELS), optional=True), FIXED, draws=True)

    def __post_init__(self) -> None:
        for f in fields(self):  # 1 and 1.0 must be one run: one canonical type
            try:
                object.__setattr__(self, f.name, f.metadata["parameter"].convert(
                    getattr(self, f.name)))
            except SpecError as exc:
                raise SpecError(f"workload transform {exc}") from None

    def key(self) -> str:
        """Canonical JSON of every transform parameter."""
        return json.dumps(asdict(self), sort_keys=True)

    def random(self) -> bool:
        """Whether preparing with this spec draws random numbers (a shape probability
        strictly between 0 and 1, a BSP model)."""
        return any((f.metadata["shaped"] and 0.0 < getattr(self, f.name) < 1.0)
                   or (f.metadata["draws"] and getattr(self, f.name) is not None)
                   for f in fields(self))


def transforms(axis: str | None = None) -> dict[str, Field]:
    """WorkloadSpec's fields by name (those set on `axis` when given)."""
    return {f.name: f for f in fields(WorkloadSpec) if axis is None or f.metadata["axis"] == axis}


def offered_load(size: np.ndarray, run_s: np.ndarray, submit_s: np.ndarray, units: int) -> float:
    """sum(size x run) / (units x (last arrival - first arrival))."""
    span = float(submit_s.max() - submit_s.min())
    if span <= 0:
        raise SpecError("offered load needs at least two distinct arrival times")
    return float((size * run_s).sum()) / (units * span)


def prepare(table: pa.Table, spec: WorkloadSpec, machine: MachineSpec, seed: int = 0) -> Jobs:
    """Apply `spec` to a job table for `machine`; `seed` drives shape synthesis and the
    BSP model."""
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
    bsp = None if jobs.bsp is None else jobs.bsp.take(keep)
    if spec.bsp_model is not None:
        if bsp is not None:
            raise SpecError(f"workload transform bsp_model={spec.bsp_model!r}: the source "
                            "carries its own BSP model; expected bsp_model: null")
        bsp = BSP_MODELS[spec.bsp_model](job_id, size, seed)
    return Jobs.create(job_id, submit, run, requested, size, shape=shape, torus=torus,
                       requested_units=requested_units, oversize_jobs=int(oversize.sum()),
                       bsp=bsp)
