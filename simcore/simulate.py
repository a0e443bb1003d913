"""One call from a workload, a machine and a policy to schedules and metrics."""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from simcore.cleaning import clean, cleaning_report
from simcore.engine import BACKFILL, BM, FCFS, MIGRATION, KernelJobs, KernelPolicy, run_events
from simcore.errors import SimcoreError, SpecError
from simcore.jobs import Jobs
from simcore.machines.allocate import BOX, LINKS, Allocator, allocator
from simcore.machines.links import place_links
from simcore.machines.spec import MachineSpec
from simcore.metrics import bounded_slowdown, capacity, mean_interval, span_s, summarize
from simcore.placements import PlacementLog
from simcore.policy import PolicySpec
from simcore.state import (
    BLOCKED_LINKS,
    BLOCKED_NO_BOX,
    CABLE_AREA,
    DECISIONS,
    LOG_LEN,
    MIGRATIONS_ATTEMPTED,
    MIGRATIONS_SUCCESSFUL,
    STATUS,
    UNUSED_AREA,
    new_state,
)

SCHEDULER_CODES = {"fcfs": FCFS, "backfill": BACKFILL, "migration": MIGRATION, "bm": BM}


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Per-job schedule (`jobs`, one row per job in priority order) and run `summary`.

    `summary` holds only deterministic values; `timing` the wall-clock cost of the
    simulation (kernel time and time per scheduler decision), which varies run to run.
    `placements`, when recorded, lists every placement in time order: from `time_s` on,
    job `job_id` holds the resources (unit bits, then cable bits) of that row of `masks`.
    """

    jobs: pa.Table
    summary: dict[str, Any]
    migration_times_s: np.ndarray
    timing: dict[str, float]
    placements: PlacementLog | None = None


def simulate(
    jobs: Jobs | pa.Table,
    machine: str | MachineSpec,
    policy: str | PolicySpec,
    seed: int = 0,
    record_placements: bool = False,
) -> SimulationResult:
    """Simulate `jobs` on `machine` under `policy`.

    `jobs` may be an SWF table (sizes in processors = units), which is cleaned with the
    default rules first unless it already was (see `simcore.cleaning`). Deterministic: the same
    inputs give bit-identical results; `seed` is recorded in the summary (the engine itself
    draws no random numbers; seeded randomness lives in workload preparation).
    `record_placements` keeps a log of every placement, for checking and for locality
    studies (it costs memory: one bitset per placement).
    """
    spec = MachineSpec.parse(machine) if isinstance(machine, str) else machine
    policy = PolicySpec.from_params(policy) if isinstance(policy, str) else policy
    if isinstance(jobs, pa.Table):
        jobs = Jobs.from_swf(jobs if cleaning_report(jobs) else clean(jobs))
    alloc = allocator(spec)
    if policy.scheduler in ("migration", "bm") and alloc.kind != BOX:
        raise SpecError(f"scheduler {policy.scheduler} migrates jobs on torus and mesh "
                        f"machines only, not on {spec}")
    kernel_jobs = kernel_inputs(jobs, alloc, spec, policy)
    classes = kernel_jobs.n_classes
    log_capacity = 0
    if record_placements:  # every start, plus at most every running job per migration
        moves = (2 * len(jobs) + 1) * spec.units if policy.scheduler in ("migration", "bm") else 0
        log_capacity = len(jobs) + moves
    state = new_state(len(jobs), spec.units, alloc.words, alloc.box_masks.shape[0], classes,
                      log_capacity)
    kernel_policy = KernelPolicy(
        SCHEDULER_CODES[policy.scheduler], policy.reservation, policy.max_growth,
        policy.fn_tor, policy.fn_max, policy.start_delay_s,
    )
    began = time.perf_counter()
    run_events(alloc, state, kernel_jobs, kernel_policy)
    elapsed = time.perf_counter() - began
    if state.ctr[STATUS]:
        raise SimcoreError(f"simulation of {spec} under {policy} stopped: jobs wait on an idle "
                           "machine that can never place them")
    result = _result(jobs, kernel_jobs, state, alloc, spec, policy, seed, elapsed)
    if not record_placements:
        return result
    n = state.ctr[LOG_LEN]
    log = PlacementLog(state.log_s[:n].copy(), jobs.job_id[state.log_job[:n]],
                       state.log_mask[:n].copy())
    return dataclasses.replace(result, placements=log)


def kernel_inputs(jobs: Jobs, alloc: Allocator, spec: MachineSpec,
                  policy: PolicySpec) -> KernelJobs:
    """Per-job kernel arrays: the size each job needs on this machine, its orientations."""
    n = len(jobs)
    too_big = np.flatnonzero(jobs.size > spec.units)
    if too_big.size:
        i = int(too_big[0])
        raise SpecError(f"job {jobs.job_id[i]} requests {jobs.size[i]} units; machine {spec} "
                        f"has {spec.units} ({too_big.size} such jobs)")
    rotations = np.zeros((n, 6, 3), dtype=np.int64)
    n_rotations = np.zeros(n, dtype=np.int64)
    torus = np.zeros(n, dtype=np.bool_)
    if alloc.kind == LINKS:
        size, placement_class = _orient(jobs, alloc, spec, rotations, n_rotations, torus)
    elif alloc.kind == BOX:
        feasible = np.flatnonzero(alloc.feasible)
        size = feasible[np.searchsorted(feasible, jobs.size)]  # rounded up at arrival
        placement_class = size
    else:
        size = jobs.size
        placement_class = np.zeros(n, dtype=np.int64)
    classes, dense = np.unique(placement_class, return_inverse=True)
    return KernelJobs(
        submit=jobs.submit_s, run=jobs.run_s, estimate=jobs.estimates(policy.estimates),
        size=np.ascontiguousarray(size, dtype=np.int64), request=jobs.size,
        rotations=rotations, n_rotations=n_rotations, torus=torus,
        placement_class=dense.astype(np.int64).ravel(), n_classes=len(classes),
    )


def _orient(jobs: Jobs, alloc: Allocator, spec: MachineSpec, rotations: np.ndarray,
            n_rotations: np.ndarray, torus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotations of each job's shape that fit the machine; reject jobs that never fit."""
    if jobs.shape is None:
        raise SpecError(f"machine {spec} allocates job shapes; the workload has none "
                        "(add shapes with simcore.workload.shapes)")
    dims = spec.dims3
    torus[:] = jobs.torus
    keys, placement_class = np.unique(
        np.column_stack([np.sort(jobs.shape, axis=1), jobs.torus]), axis=0, return_inverse=True)
    empty = np.zeros(alloc.words, dtype=np.uint64)
    out = np.zeros(alloc.words, dtype=np.uint64)
    for cls, key in enumerate(keys):
        members = np.flatnonzero(placement_class == cls)
        shape = tuple(int(v) for v in jobs.shape[members[0]])
        fits = [r for r in dict.fromkeys(itertools.permutations(shape))
                if all(r[d] <= dims[d] for d in range(3))]
        if fits:
            rotations[members, : len(fits)] = fits
        n_rotations[members] = len(fits)
        if not fits or place_links(alloc.links, empty, rotations[members[0]], len(fits),
                                   bool(key[3]), out) < 0:
            raise SpecError(
                f"job {jobs.job_id[members[0]]} wants a {'x'.join(map(str, shape))} "
                f"{'torus' if key[3] else 'mesh'}, which machine {spec} cannot connect even "
                f"when empty ({members.size} such jobs)")
    return jobs.shape.prod(axis=1), placement_class.ravel()


def _result(jobs: Jobs, kj: KernelJobs, st, alloc: Allocator, spec: MachineSpec,
            policy: PolicySpec, seed: int, elapsed: float) -> SimulationResult:
    wait = st.start_s - jobs.submit_s
    response = st.end_s - jobs.submit_s
    bsld = bounded_slowdown(response, jobs.run_s)
    utilized, unused, lost = capacity(jobs.size, jobs.run_s, jobs.submit_s, st.end_s,
                                      spec.units, float(st.acc[UNUSED_AREA]))
    span = span_s(jobs.submit_s, st.end_s)
    migrations = st.migration_s[: st.ctr[MIGRATIONS_SUCCESSFUL]].copy()
    decisions = int(st.ctr[DECISIONS])
    summary: dict[str, Any] = {
        "machine": str(spec),
        "policy": policy.key(),
        "seed": seed,
        "jobs": len(jobs),
        "utilization": utilized,
        "unused": unused,
        "lost": lost,
        **summarize(wait, "wait_s"),
        **summarize(bsld, "bsld"),
        "mean_response_s": float(response.mean()),
        "makespan_s": span,
        "rounded_jobs": int((kj.size > jobs.size).sum()),  # no box of their size exists
        "grown_jobs": int((st.alloc > kj.size).sum()),  # grown to be placed (FCFS, backfill)
        "migrations_attempted": int(st.ctr[MIGRATIONS_ATTEMPTED]),
        "migrations_successful": int(st.ctr[MIGRATIONS_SUCCESSFUL]),
        "mean_time_between_migrations_s": mean_interval(migrations),
        "decisions": decisions,
        "blocked_no_box": int(st.ctr[BLOCKED_NO_BOX]),
        "blocked_links": int(st.ctr[BLOCKED_LINKS]),
        "cable_utilization": (float(st.acc[CABLE_AREA]) / (span * alloc.links.n_cables)
                              if alloc.kind == LINKS and span > 0 else float("nan")),
        "resources_left_busy": int(np.unpackbits(st.occ.view(np.uint8)).sum()),
    }
    table = pa.table({
        "job_id": jobs.job_id,
        "submit_s": jobs.submit_s,
        "sched_s": st.sched_s,
        "start_s": st.start_s,
        "end_s": st.end_s,
        "run_s": jobs.run_s,
        "estimate_s": kj.estimate,
        "wait_s": wait,
        "response_s": response,
        "bsld": bsld,
        "size": jobs.size,
        "alloc_size": st.alloc,
        "reserved_s": pa.array(st.reserved_s, from_pandas=True),  # null: never reserved
    })
    if jobs.shape is not None:
        for column, values in (("requested_units", jobs.requested_units),
                               ("shape_a", jobs.shape[:, 0]), ("shape_b", jobs.shape[:, 1]),
                               ("shape_c", jobs.shape[:, 2]), ("torus", jobs.torus)):
            table = table.append_column(column, pa.array(values))
    timing = {"simulate_s": elapsed,
              "s_per_decision": elapsed / decisions if decisions else float("nan")}
    return SimulationResult(table, summary, migrations, timing)

