"""From a job table (SWF schema) to `Jobs` for one machine: every transform named and seeded.

In order:
0. insertion: `insert_per_h` one-processor jobs per hour of the source's arrival span,
   each running `insert_run_s`, at uniform times drawn from the run's seed, merged into
   the source in arrival order (re-inserting jobs a cleaned log removed: the NASA iPSC/860
   log's filter dropped 24,025 one-node jobs of one user and application, 10.9 an hour;
   in a workload with submesh columns they ask for 1 x 1);
1. span: skip the first `skip_jobs` jobs, keep the next `first_jobs` (Krevat: 10,000);
2. sizes: processors per job (allocated, else requested) divided by
   `processors_per_unit`, rounded up (Aridor: CTC-SP2 / 4 onto 128 midplanes), or, with
   `fit_to_machine`, mapped onto the machine whatever its size: p x units / MaxProcs
   (the workload's MaxProcs header), rounded up, so that the same job stream can be
   studied at any granularity (SDSC-SP2's 128 processors on BG/L's 65,536 nodes: p x 512;
   a 65,536-node Lublin workload on 128 supernodes: p / 512 rounded up, the rounding a
   supernode machine imposes); jobs still larger than the machine are handled by
   `machine_fit`: `reject` (an error naming the first), `drop` or `clamp` (to the machine's
   size), and counted;
3. replication (Leung et al.'s replication factor): every job is there `replication`
   times; the copies after the first get ids job id + c x 10^k (c = 1, 2, ...; 10^k above
   every id of the span) and arrive up to `replication_jitter_s` later, uniformly, drawn
   per copy id from the run's seed;
4. shaking (input shaking, Tsafrir et al. 2007): every arrival moves by a uniform amount
   in [-`arrival_shake_s`, +`arrival_shake_s`] (not below 0), drawn per job id from the
   run's seed, so that seeds give the distribution of a result a single trace can only
   sample once;
5. load: run and requested times multiplied by `runtime_scale` (Krevat's c, Leung et al.'s
   work multiple), requested times drawn from the f-model when `estimate_factor` is set,
   and/or
   arrival times rescaled from the first arrival so that the offered load
   sum(size x run) / (units x arrival span) equals `offered_load` (Aridor);
6. shapes, on machines that need them: slim/fat shapes with probability `p_fat`, torus
   with probability `p_torus`, slim jobs of their own size or of their fat shape's volume
   (`slim_size`; see `simcore.workload.shapes`); on 2D meshes with submesh
   allocators, w x h submeshes from the workload's columns or by the rule `mesh_shape`
   (see `simcore.jobs.submeshes`); sizes become shape volumes;
7. the BSP job model time-sharing schedulers need, drawn per job by the model `bsp_model`
   names (see `simcore.jobs.bsp`), for sources that carry none (copies of a job
   share its model), its compute per iteration between `bsp_granularity_min_s` and
   `bsp_granularity_max_s`.

8. extension transforms (`simcore.workload.spec`), each by its own module, in field order,
   wherever its value differs from its neutral one.

The offered load of step 5 is measured on the sample, except for unreplicated samples of a
model, without inserted jobs, that states its exact means (Chu's: n x EXTM / (N x IATM)),
where those define it. The first `warmup_jobs` jobs stay in the simulation but out of its
job statistics.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array, numpy_array
from simcore.base.contracts import load
from simcore.base.draws import STREAMS, job_uniforms
from simcore.base.errors import SpecError
from simcore.jobs.bsp import MODELS as BSP_MODELS
from simcore.jobs.bsp import BSPJobs
from simcore.jobs.cleaning import empty_workload
from simcore.jobs.jobs import Jobs
from simcore.jobs.submeshes import SHAPE_COLUMNS, rule_shapes, table_shapes
from simcore.jobs.swf import MAX_TIME_S, from_columns, header_of
from simcore.machines.spec import MachineSpec
from simcore.workload.io import SOURCE_METADATA_KEY
from simcore.workload.shapes import synthesize
from simcore.workload.spec import TransformModule, WorkloadSpec
from simcore.workload.synthetic import MODELS

REPLICA_STREAM = STREAMS["replica"]
SHAKE_STREAM = STREAMS["shake"]
ESTIMATE_STREAM = STREAMS["estimate"]
INSERT_STREAM = STREAMS["insert"]


def offered_load(size: np.ndarray, run_s: np.ndarray, submit_s: np.ndarray, units: int) -> float:
    """sum(size x run) / (units x (last arrival - first arrival))."""
    span = float(submit_s.max() - submit_s.min())
    if span <= 0:
        raise SpecError("offered load needs at least two distinct arrival times")
    return float((size * run_s).sum()) / (units * span)


def replicate(job_id: np.ndarray, submit: np.ndarray, run: np.ndarray,
              requested: np.ndarray, size: np.ndarray, copies: int, jitter_s: float,
              seed: int) -> tuple[np.ndarray, ...]:
    """Every job `copies` times (module docstring, step 3): the arrays of the originals
    followed by those of each round of copies."""
    stride = 10 ** len(str(int(job_id.max())))
    ids = np.concatenate([job_id + c * stride for c in range(copies)])
    delay = jitter_s * job_uniforms(seed, REPLICA_STREAM, ids)
    delay[: job_id.shape[0]] = 0.0
    return (ids, np.tile(submit, copies) + delay, np.tile(run, copies),
            np.tile(requested, copies), np.tile(size, copies))


def fit_to_machine(jobs: Jobs, table: pa.Table, spec: WorkloadSpec,
                   machine: MachineSpec) -> Jobs:
    """Sizes p x machine units / MaxProcs, rounded up (module docstring, step 2)."""
    max_procs = header_of(table).get_int("MaxProcs")
    if spec.processors_per_unit != 1:
        raise SpecError("workload transforms fit_to_machine and processors_per_unit="
                        f"{spec.processors_per_unit}: expected one of the two")
    if not max_procs or max_procs < 1:
        raise SpecError("workload transform fit_to_machine: the workload's header gives no "
                        "MaxProcs; expected a trace or model that states its size")
    size = -(-jobs.size * machine.units // max_procs)
    return dataclasses.replace(jobs, size=size.astype(np.int64))


def inserted_count(table: pa.Table, per_h: float) -> int:
    """Jobs `insert_jobs` adds to `table` at `per_h` per hour of its arrival span (what a
    memory estimate counts before they are made)."""
    if per_h <= 0 or table.num_rows == 0:
        return 0
    submit = numpy_array(table.column("submit_time"))
    return round(per_h * (int(submit.max()) - int(submit.min())) / 3600)


def insert_jobs(table: pa.Table, per_h: float, run_s: float, seed: int) -> pa.Table:
    """The source with round(per_h x arrival span in hours) one-processor jobs of run time
    `run_s` added (module docstring, step 0): ids above every id of the source, arrivals
    uniform over its span, merged after any source job arriving at the same time."""
    count = inserted_count(table, per_h)
    if count == 0:
        return table
    submit = numpy_array(table.column("submit_time"))
    first, last = int(submit.min()), int(submit.max())
    ids = int(numpy_array(table.column("job_number")).max()) + 1 + np.arange(count)
    at = first + np.floor(job_uniforms(seed, INSERT_STREAM, ids) * (last - first + 1))
    ones, run = np.ones(count, dtype=np.int64), np.full(count, run_s)
    added = from_columns({"job_number": ids, "submit_time": at,
                          "run_time": run, "requested_time": run, "allocated_processors": ones,
                          "requested_processors": ones}, header_of(table))
    for name in SHAPE_COLUMNS:  # where jobs carry submeshes, one processor is 1 x 1
        if name in table.column_names:
            added = added.append_column(table.schema.field(name), arrow_array(ones))
    merged = pa.concat_tables([table, added])
    return merged.take(arrow_array(np.argsort(numpy_array(merged.column("submit_time")),
                                              kind="stable")))


def prepare(table: pa.Table, spec: WorkloadSpec, machine: MachineSpec, seed: int = 0) -> Jobs:
    """Apply `spec` to a job table for `machine`; `seed` drives shape synthesis, inserted
    jobs, shaking, the copies' arrival jitter and the BSP model."""
    if table.num_rows == 0:
        raise SpecError(empty_workload(table))
    if spec.insert_per_h > 0:
        if BSPJobs.from_table(table) is not None:
            raise SpecError(f"workload transform insert_per_h={spec.insert_per_h}: the "
                            "source carries a BSP model the inserted jobs lack; expected 0")
        table = insert_jobs(table, spec.insert_per_h, spec.insert_run_s, seed)
    span = table.slice(spec.skip_jobs, spec.first_jobs)
    if span.num_rows == 0:
        raise SpecError(f"workload span skip_jobs={spec.skip_jobs}, first_jobs="
                        f"{spec.first_jobs} holds no jobs (the table has {table.num_rows})")
    jobs = Jobs.from_swf(span, spec.processors_per_unit)
    if spec.fit_to_machine:
        jobs = fit_to_machine(jobs, table, spec, machine)
    oversize = jobs.size > machine.units
    if oversize.any() and spec.machine_fit == "reject":
        i = int(np.flatnonzero(oversize)[0])
        raise SpecError(
            f"job {jobs.job_id[i]} needs {jobs.size[i]} units, machine {machine} has "
            f"{machine.units} ({int(oversize.sum())} such jobs); expected workload transform "
            "machine_fit: drop | clamp, or a larger processors_per_unit")
    keep = ~oversize if spec.machine_fit == "drop" else np.ones(len(jobs), dtype=bool)
    size = np.minimum(jobs.size, machine.units)[keep]
    job_id, submit = jobs.job_id[keep], jobs.submit_s[keep]
    run, requested = jobs.run_s[keep], jobs.requested_s[keep]
    bsp = None if jobs.bsp is None else jobs.bsp.take(keep)
    if spec.bsp_model is not None:
        if bsp is not None:
            raise SpecError(f"workload transform bsp_model={spec.bsp_model!r}: the source "
                            "carries its own BSP model; expected bsp_model: null")
        bsp = BSP_MODELS[spec.bsp_model](
            job_id, size, seed, (spec.bsp_granularity_min_s, spec.bsp_granularity_max_s))
    if spec.replication > 1:
        job_id, submit, run, requested, size = replicate(
            job_id, submit, run, requested, size, spec.replication,
            spec.replication_jitter_s, seed)
        if bsp is not None:
            bsp = bsp.take(np.tile(np.arange(len(bsp)), spec.replication))
    if spec.arrival_shake_s > 0:
        move = spec.arrival_shake_s * (2.0 * job_uniforms(seed, SHAKE_STREAM, job_id) - 1.0)
        submit = np.maximum(submit + move, 0.0)
    run = run * spec.runtime_scale
    requested = np.where(requested > 0, requested * spec.runtime_scale, requested)
    if len(run) and max(run.max(), requested.max()) > MAX_TIME_S:
        raise SpecError(f"workload transform runtime_scale={spec.runtime_scale:g} makes run "
                        f"times up to {max(run.max(), requested.max()):.3g} s; expected at most "
                        f"{MAX_TIME_S:.0e} s (the bound of a trace's times)")
    if spec.estimate_factor is not None:
        spread = (spec.estimate_factor - 1.0) * job_uniforms(seed, ESTIMATE_STREAM, job_id)
        requested = run * (1.0 + spread)
    shape = torus = requested_units = None
    if machine.wiring is not None:
        shape, torus = synthesize(job_id, size, machine.dims3, spec.p_fat, spec.p_torus, seed,
                                  slim_as_fat=spec.slim_size == "fat")
        requested_units, size = size, shape.prod(axis=1)
    elif "submeshes" in machine.capabilities:
        shape = _submeshes(span, keep, size, machine, spec.mesh_shape, spec.replication)
        torus = np.zeros(len(size), dtype=bool)
        requested_units, size = size, shape.prod(axis=1)
    if spec.offered_load is not None:
        first = submit.min()
        declared = None if spec.replication > 1 or spec.insert_per_h > 0 else \
            declared_load(table, machine.units * spec.processors_per_unit)
        current = offered_load(size, run, submit, machine.units) if declared is None \
            else declared * spec.runtime_scale
        submit = first + (submit - first) * (current / spec.offered_load)
    if spec.warmup_jobs >= len(size):
        raise SpecError(f"workload transform warmup_jobs={spec.warmup_jobs} leaves none of "
                        f"the {len(size)} jobs to measure; expected fewer")
    jobs = Jobs.create(job_id, submit, run, requested, size, shape=shape, torus=torus,
                       requested_units=requested_units, oversize_jobs=int(oversize.sum()),
                       warmup_jobs=spec.warmup_jobs, bsp=bsp)
    for name, module in spec.extensions():
        implementation = load(module, TransformModule, f"workload transform {name}")
        jobs = implementation.apply(jobs, getattr(spec, name), machine, seed)
    return jobs


def _submeshes(span: pa.Table, keep: np.ndarray, size: np.ndarray, machine: MachineSpec,
               rule: str, copies: int) -> np.ndarray:
    """(w, h, 1) per kept job (and per copy of it): the workload's submesh columns, else
    `rule` on its size."""
    width, height = machine.dims2()
    sides = table_shapes(span)
    w, h = rule_shapes(size, width, height, rule) if sides is None else \
        (np.tile(sides[0][keep], copies), np.tile(sides[1][keep], copies))
    return np.stack([w, h, np.ones_like(w)], axis=1)


def declared_load(table: pa.Table, units: int) -> float | None:
    """The offered load of a model's sample on `units` processors from the model's exact
    means (see `Model.nominal`), or None when the table is not such a sample."""
    raw = (table.schema.metadata or {}).get(SOURCE_METADATA_KEY)
    source = json.loads(raw) if raw else {}
    row = MODELS.get(source.get("model")) if source.get("kind") == "synthetic" else None
    if row is None:
        return None
    params = {p.name: source.get(p.name, p.default) for p in row.parameters}
    means = row.means(params)
    return None if means is None else means[0] / (units * means[1])
