"""One call from a workload, a machine and a policy to schedules and metrics."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array
from simcore.base.errors import SimcoreError, SpecError
from simcore.base.jit import engine_cache, kernel_ready
from simcore.core.columns import MODULE_METRICS, registered_job_columns, reported, with_absent
from simcore.core.engine import KernelJobs, run_events, unplaceable
from simcore.core.failures import FailureProcess, OutagePlan, down_resources, down_set
from simcore.core.metrics import chu_statistics, mean_interval, span_s
from simcore.core.placements import OutageEvents, PlacementLog
from simcore.core.result import SimulationResult, schedule_metrics, schedule_table
from simcore.core.state import (
    ABORTED,
    ABORTED_WORK,
    BLOCKED_LINKS,
    BLOCKED_NO_BOX,
    DECISIONS,
    FAILED_AREA,
    FAILURES,
    LOG_AT,
    LOG_CODE_LEN,
    LOG_JOB,
    LOG_LEN,
    MIGRATIONS_ATTEMPTED,
    MIGRATIONS_SUCCESSFUL,
    OUTAGE_HORIZON,
    OUTAGE_POS,
    STARTS,
    STATUS,
    T_PREV,
    UNUSED_AREA,
    grown_log,
    log_half_full,
    log_short,
    log_size,
    new_state,
)
from simcore.jobs.cleaning import clean, cleaning_report
from simcore.jobs.jobs import Jobs
from simcore.machines.contract import check_memory
from simcore.machines.registry import Allocator, check_compatible
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec, Scheduler

#: Event times per kernel call when progress is reported: a few milliseconds of work.
PROGRESS_STEP = 20_000
#: Most code words per job a run's placement log starts with, and most in all: room for
#: every start's longest code twice over on machines of up to 2,000 units (pages of it a
#: run never writes cost no memory), for a few runs per start on larger ones, and never
#: above 128 MiB; it grows as the run needs.
LOG_WORDS_PER_JOB = 64
LOG_WORDS_AT_FIRST = 2**24


class Execution(NamedTuple):
    """One pass of the event loop (`_execute`): the structs it ran on and the state it
    left, the kernel's wall time and, apart from it, the time compiling the kernel or
    loading it from the cache took."""

    machine: Any
    policy: Any
    jobs: KernelJobs
    state: Any
    elapsed_s: float
    ready_s: float


def simulate(
    jobs: Jobs | pa.Table,
    machine: str | MachineSpec,
    policy: str | PolicySpec,
    seed: int = 0,
    progress: Callable[[int, int, float], None] | None = None,
    progress_step: int = PROGRESS_STEP,
) -> SimulationResult:
    """Simulate `jobs` on `machine` under `policy`.

    `jobs` may be an SWF table (sizes in processors = units), which is cleaned with the
    default rules first unless it already was (see `simcore.jobs.cleaning`). Deterministic: the same
    inputs give bit-identical results; `seed` is recorded in the summary (the engine itself
    draws no random numbers; seeded randomness lives in workload preparation).
    The result keeps the placement log (`result.placements`): every start and migration
    move, each as a few words (runs of the resources' bits). Allocators that measure their
    placements (a module function `job_metrics(struct, state, jobs)`, e.g. the curve
    allocators' locality) add per-job columns and run metrics from it;
    `timing["metrics_s"]` is what measuring cost. Run metrics the allocator's and
    the scheduler's modules report (`observables`) join the summary; each must be a
    registered run metric (`simcore.core.columns.RUN_METRICS`). `progress`, if given, is
    called every `progress_step` event times with (jobs started, jobs, simulated seconds so far);
    with a step of 1 it sees every scheduler decision (`simcore bench` times them).
    Jobs the machine refuses (sizes a placement menu does not list) are left out of the
    run and counted (`refused_jobs`). A machine with a failure process (`simcore.core.failures`)
    draws it from `seed`.
    """
    spec = MachineSpec.parse(machine) if isinstance(machine, str) else machine
    policy = PolicySpec.from_params(policy) if isinstance(policy, str) else policy
    if isinstance(jobs, pa.Table):
        jobs = Jobs.from_swf(jobs if cleaning_report(jobs) else clean(jobs))
    with engine_cache(engine_modules(spec.allocator_row, policy.row)):
        return _simulate(jobs, spec, policy, seed, progress, progress_step)


def engine_modules(allocator: Allocator, scheduler: Scheduler) -> tuple[str, ...]:
    """The kernel modules the engine of an allocator row and a scheduler row compiles:
    the event loop (`simcore.core.engine`) with the allocator's module (and its orderings'
    module) and the scheduler's, whose kernels numba compiles into it; for a scheduler
    with an engine of its own (time sharing), its module alone (it reads no allocator).
    Their import closure names the engine's kernel cache (`simcore.base.jit.engine_cache`)."""
    if scheduler.engine:
        return (scheduler.module,)
    named = {"simcore.core.engine", allocator.module, scheduler.module}
    if allocator.ordering:
        named.add(allocator.ordering)
    return tuple(sorted(named))


def _simulate(jobs: Jobs, spec: MachineSpec, policy: PolicySpec, seed: int,
              progress: Callable[[int, int, float], None] | None,
              progress_step: int) -> SimulationResult:
    """`simulate` once its inputs are resolved, in the engine's kernel cache."""
    check_compatible(spec, policy.row.needs, f"scheduler {policy.scheduler}")
    too_big = np.flatnonzero(jobs.size > spec.units)
    if too_big.size:
        i = int(too_big[0])
        raise SpecError(f"job {jobs.job_id[i]} requests {jobs.size[i]} units; machine {spec} "
                        f"has {spec.units} ({too_big.size} such jobs)")
    scheduling = policy.implementation
    if scheduling.engine:
        return scheduling.simulate(jobs, spec, policy, seed)
    allocation = spec.implementation
    refused = allocation.refused(spec, jobs) | _never_placed(spec, jobs, seed)
    if refused.all():
        raise SpecError(f"machine {spec} refuses every job of the workload ({len(jobs)}): "
                        "no size it runs")
    if refused.any():
        jobs = jobs.select(~refused)
    log = None
    compile_s = 0.0
    while True:
        run = _execute(jobs, spec, policy, seed, log, progress, progress_step)
        machine_struct, kernel_policy, kernel_jobs, state = (run.machine, run.policy,
                                                             run.jobs, run.state)
        elapsed = run.elapsed_s
        compile_s += run.ready_s
        if not log_short(state):
            break
        # one decision placed more than half the log could hold: run again with room
        log = (2 * int(state.ctr[LOG_LEN]), 2 * int(state.ctr[LOG_CODE_LEN]))
    if state.ctr[STATUS]:
        raise SimcoreError(f"simulation of {spec} under {policy} stopped: jobs wait on an idle "
                           "machine that can never place them")
    span = span_s(jobs.submit_s, state.out.end_s)
    observed = {**reported(allocation.observables(machine_struct, span), allocation.what),
                **reported(scheduling.observables(kernel_policy), scheduling.what)}
    began = time.perf_counter()
    columns, measured = allocation.job_metrics(machine_struct, state, kernel_jobs)
    metrics_s = time.perf_counter() - began
    registered_job_columns(columns, allocation.what)
    result = _result(jobs, kernel_jobs, state, spec, policy, seed, elapsed, observed)
    result.summary.update(reported(measured, allocation.what))
    result.summary["refused_jobs"] = int(refused.sum())
    result.timing["metrics_s"] = metrics_s
    result.timing["compile_s"] = compile_s
    table = result.jobs
    for name, values in columns.items():
        table = table.append_column(name, values)
    n, used = int(state.ctr[LOG_LEN]), int(state.ctr[LOG_CODE_LEN])
    out = state.out
    rows = out.log_entry[:n, LOG_JOB]
    log = PlacementLog(out.log_s[:n].copy(), jobs.job_id[rows],
                       out.log_entry[:n + 1, LOG_AT].copy(), out.log_code[:used].copy(),
                       machine_struct.words, _applied_outages(spec, state))
    for name, values in log.job_columns(rows, len(jobs)).items():
        table = table.append_column(name, values)
    return dataclasses.replace(result, jobs=table, placements=log)


def _applied_outages(spec: MachineSpec, state: Any) -> OutageEvents | None:
    """The outage events the run applied (None on a machine that never fails)."""
    if not spec.fails():
        return None
    o, n = state.outages, int(state.ctr[OUTAGE_POS])
    domain = o.domain[:n]
    return OutageEvents(o.time[:n].copy(), o.repair[:n].copy(), o.draw[:n].copy(),
                        o.masks[domain].copy(), o.units[domain].copy(), bool(o.drain))


def _execute(jobs: Jobs, spec: MachineSpec, policy: PolicySpec, seed: int,
             log: tuple[int, int] | None, progress: Callable[[int, int, float], None] | None,
             progress_step: int = PROGRESS_STEP) -> Execution:
    """Build the machine, the policy and the state, and run the event loop to its end
    (drawing the failure process further whenever the run outlasts it, and growing the
    placement log as it fills: `log` entries and code words at first, None for as many as
    it most likely needs; a log one decision overfilled ends the loop early,
    `log_short`)."""
    machine_struct, size, placement_class = spec.implementation.build(spec, jobs)
    classes, dense = np.unique(placement_class, return_inverse=True)
    estimates = policy.params().get("estimates", "requested")
    kernel_jobs = KernelJobs(
        submit=jobs.submit_s, run=jobs.run_s, estimate=jobs.estimates(estimates), size=size,
        request=jobs.size, placement_class=dense.astype(np.int64).ravel(),
        n_classes=len(classes), rank=jobs.rank())
    kernel_policy = policy.implementation.kernel_policy(policy, len(jobs))
    outages = _outages(spec, machine_struct, jobs, seed)
    if log is None:
        per_job = min(2 * (1 + machine_struct.words), LOG_WORDS_PER_JOB)
        log = (2 * len(jobs) + 2, min(len(jobs) * per_job, LOG_WORDS_AT_FIRST) + 64)
    _check_log(spec, *log)
    state = new_state(len(jobs), spec.units, machine_struct.words, len(classes), *log,
                      None if outages is None else outages.initial(machine_struct.words))
    step = progress_step if progress is not None else 1 << 62  # else all in one call
    ready_s = kernel_ready(run_events, kernel_policy, machine_struct, state, kernel_jobs, step)
    began = time.perf_counter()
    while not run_events(kernel_policy, machine_struct, state, kernel_jobs, step):
        if state.ctr[OUTAGE_HORIZON]:
            state.ctr[OUTAGE_HORIZON] = 0
            state = state._replace(outages=outages.extended(state.outages))
        if log_short(state):
            break  # made again by the caller
        if log_half_full(state):  # double whichever part is half full
            capacity, room = state.out.log_s.shape[0], state.out.log_code.shape[0]
            log = (capacity * (1 + (2 * state.ctr[LOG_LEN] > capacity)),
                   room * (1 + (2 * state.ctr[LOG_CODE_LEN] > room)))
            _check_log(spec, *log)
            state = grown_log(state, *log)
        if progress is not None:
            progress(int(state.ctr[STARTS]), len(jobs),
                     float(state.acc[T_PREV] - jobs.submit_s[0]))
    return Execution(machine_struct, kernel_policy, kernel_jobs, state,
                     time.perf_counter() - began, ready_s)


def _check_log(spec: MachineSpec, capacity: int, room: int) -> None:
    """Refuse a placement log above the memory limit before it is allocated."""
    check_memory(f"the placement log of machine {spec} ({capacity:,} placements)",
                 log_size(capacity, room))


def _never_placed(spec: MachineSpec, jobs: Jobs, seed: int) -> np.ndarray:
    """The jobs the machine's static down set leaves no room for (bool per job)."""
    process = FailureProcess.of(spec)
    if process is None or process.down_fraction == 0:
        return np.zeros(len(jobs), dtype=bool)
    allocation = spec.implementation
    struct, size, placement_class = allocation.build(spec, jobs)
    masks, units = allocation.failure_domains(struct)
    bits, down_units = down_resources(masks, units, down_set(process, units.shape[0], seed))
    _, first, dense = np.unique(np.stack([placement_class, size], axis=1), axis=0,
                                return_index=True, return_inverse=True)
    state = new_state(len(jobs), spec.units, struct.words, len(first))
    never = np.zeros(first.shape[0], dtype=np.bool_)
    unplaceable(struct, state, first.astype(np.int64), size[first], spec.units - down_units,
                bits, np.zeros_like(bits), never)
    return never[dense.ravel()]


def _outages(spec: MachineSpec, struct: Any, jobs: Jobs, seed: int) -> OutagePlan | None:
    """The machine's failure process for this run (None if it never fails), drawn first
    up to the span of the arrivals plus the jobs' total run time (a bound on the end of a
    run without failures)."""
    process = FailureProcess.of(spec)
    if process is None:
        return None
    check_memory(f"the failure domains of machine {spec}", spec.units * struct.words * 8)
    masks, units = spec.implementation.failure_domains(struct)
    horizon = float(jobs.submit_s[-1] - jobs.submit_s[0] + jobs.run_s.sum())
    return OutagePlan(process, masks, units, seed, float(jobs.submit_s[0]), horizon)


def _result(jobs: Jobs, kj: KernelJobs, st, spec: MachineSpec, policy: PolicySpec,
            seed: int, elapsed: float, observed: dict[str, Any]) -> SimulationResult:
    out = st.out
    migrations = out.migration_s[: st.ctr[MIGRATIONS_SUCCESSFUL]].copy()
    decisions = int(st.ctr[DECISIONS])
    summary: dict[str, Any] = {
        "machine": str(spec),
        "policy": {"scheduler": policy.scheduler, **policy.params()},
        "seed": seed,
        "jobs": len(jobs),
        **schedule_metrics(jobs, out.start_s, out.end_s, spec.units,
                           float(st.acc[UNUSED_AREA]), ~out.killed, float(st.acc[ABORTED_WORK]),
                           float(st.acc[FAILED_AREA])),
        "failures": int(st.ctr[FAILURES]),
        "runs_cut_short": int(st.ctr[ABORTED]),
        "killed_jobs": int(out.killed.sum()),
        **chu_statistics(jobs.submit_s, out.sched_s, out.end_s, jobs.size, out.alloc,
                         spec.units, jobs.warmup_jobs),
        "rounded_jobs": int((kj.size > jobs.size).sum()),  # no partition of their size exists
        "grown_jobs": int((out.alloc > kj.size).sum()),  # grown to be placed (FCFS, backfill)
        "migrations_attempted": int(st.ctr[MIGRATIONS_ATTEMPTED]),
        "migrations_successful": int(st.ctr[MIGRATIONS_SUCCESSFUL]),
        "mean_time_between_migrations_s": mean_interval(migrations),
        "decisions": decisions,
        "blocked_no_box": int(st.ctr[BLOCKED_NO_BOX]),
        "blocked_links": int(st.ctr[BLOCKED_LINKS]),
        **with_absent(observed, MODULE_METRICS),
        "resources_left_busy": int(np.unpackbits(
            (st.run.occ & ~st.outages.down).view(np.uint8)).sum()),
    }
    table = schedule_table(jobs, out.sched_s, out.start_s, out.end_s, kj.estimate, out.alloc,
                           out.reserved_s)
    if jobs.shape is not None:
        for column, values in (("requested_units", jobs.requested_units),
                               ("shape_a", jobs.shape[:, 0]), ("shape_b", jobs.shape[:, 1]),
                               ("shape_c", jobs.shape[:, 2]), ("torus", jobs.torus)):
            table = table.append_column(column, arrow_array(values))
    if spec.fails():
        table = table.append_column("failures_hit", arrow_array(out.hit))
        table = table.append_column("killed", arrow_array(out.killed))
    timing = {"simulate_s": elapsed,
              "s_per_decision": elapsed / decisions if decisions else float("nan")}
    return SimulationResult(table, summary, migrations, timing)
