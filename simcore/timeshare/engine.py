"""The time-sharing engine: gang scheduling, spin-block and FCS on the BSP job model.

Time moves from event to event: arrivals, completions and, for gang scheduling and FCS,
the ends of time slices. Every slice the matrix's next non-empty row becomes active (a
round robin over the rows holding jobs; spin-block has no slices). A processor pays the
global context switch (the policy parameter `switch_cost_s`) at a slice start when what
it runs changes from something to something else (`simcore.timeshare.rates.slice_modes`:
one job's exclusive process to another's, or to FCS's local scheduling, or back); a
processor keeping its process, starting from none or staying in local scheduling pays
nothing, so a job alone runs in exactly its isolated time. Between events every job's
progress is linear in time at the rates of `simcore.timeshare.rates`, computed once per
row and configuration (residents, processes with work, FCS classes) and reused while
they last. Once a whole round of slices has run in one configuration and can
repeat unchanged (no arrival, completion or class change in sight), the engine moves
over as many rounds as it safely can at once.

Jobs are admitted by `simcore.timeshare.matrix` at arrivals and completions (gang with
`matrix: alternate` first moves jobs down to rows freed by completions), and FCS
re-classifies the processes of the active row's jobs at the end of each slice
(`simcore.timeshare.fcs`). Per run: capacity utilized counts each job's isolated run
time, so every overhead of time-sharing (context switches, spinning, blocking,
imbalance, idle cells) shows as lost capacity; unused capacity is the integral of
max(0, empty processors - processes of waiting jobs).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array
from simcore.base.bitset import n_words
from simcore.base.errors import SimcoreError, SpecError
from simcore.base.jit import kernel
from simcore.core.placements import PlacementLog
from simcore.core.state import (
    DECISIONS,
    EPOCH,
    QLEN,
    QUEUED_UNITS,
    STATUS,
    STATUS_STUCK,
    UNUSED_AREA,
    enqueue,
)
from simcore.jobs.jobs import Jobs
from simcore.machines.contract import check_memory
from simcore.timeshare import fcs
from simcore.timeshare.matrix import admit, leave, pack
from simcore.timeshare.rates import FCS, NOTHING, SPIN_BLOCK, Mode, phase_rates, slice_modes
from simcore.timeshare.state import (
    ACTIVE,
    N_RESIDENT,
    SLICE_END,
    SLICE_EPOCH,
    SLICES,
    STEADY,
    SWITCHES,
    new_state,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec
    from simcore.schedulers.contract import Policy

_ROUNDING = 1e-9  # relative work left that counts as done (sums of rate x time round)
CLASSES = ("CS", "F", "DC")


class TimeSharePolicy(NamedTuple):
    mode: int  # GANG, SPIN_BLOCK or FCS
    easy: bool  # queue: EASY backfilling (else FCFS)
    slice_s: float  # T_slice
    spin_s: float  # T_spin
    switch_s: float  # global context switch cost
    f_always: bool  # FCS: F processes served first in every local slot
    quantum_s: float  # the local scheduler's quantum
    block_cost_s: float  # CPU cost of blocking and being woken
    alternate: bool  # gang: alternate scheduling and row packing (`matrix: alternate`)


class TimeShareJobs(NamedTuple):
    """Per-job arrays in priority order, as the kernels read them."""

    submit: np.ndarray  # float64 s
    estimate: np.ndarray  # float64 s: estimated run time x mpl
    size: np.ndarray  # int64 processes
    sync: np.ndarray  # bool: the processes wait for each other
    n_iter: np.ndarray  # float64: iterations in all (never-waiting jobs: work / compute)
    r_ded: np.ndarray  # float64: iterations/s on dedicated processors
    even_s: np.ndarray  # float64: compute per iteration, even blocks
    odd_s: np.ndarray  # float64: odd blocks
    block: np.ndarray  # int64: processes per block (0: balanced)
    comm_s: np.ndarray  # float64: synchronisation once every partner has arrived


@kernel
def _free_processors(st):
    free = 0
    for p in range(st.cells.load.shape[0]):
        if st.cells.load[p] == 0:
            free += 1
    return free


@kernel
def _rotation(st, a):
    """The non-empty rows from row `a` on, cyclically, into scratch.rows; their count."""
    rows, row_free = st.scratch.rows, st.cells.row_free
    total = row_free.shape[0]
    procs = st.cells.job.shape[1]
    count = 0
    for k in range(total):
        r = (a + k) % total
        if row_free[r] < procs:
            rows[count] = r
            count += 1
    return count


@kernel
def _next_row(st, a):
    """The first non-empty row after row `a`, cyclically (-1: none)."""
    total = st.cells.row_free.shape[0]
    for k in range(1, total + 1):
        r = (a + k) % total
        if st.cells.row_free[r] < st.cells.job.shape[1]:
            return r
    return -1


@kernel
def _previous_row(st, a):
    """The last non-empty row before row `a`, cyclically (a itself when alone)."""
    total = st.cells.row_free.shape[0]
    for k in range(1, total + 1):
        r = (a - k) % total
        if st.cells.row_free[r] < st.cells.job.shape[1]:
            return r
    return a


@kernel
def _switches(old, new):
    """Whether a processor going from slice mode `old` to `new` pays the switch."""
    return old != NOTHING and new != NOTHING and old != new


@kernel
def _start_slice(pol, st, jobs, t):
    """Make the next non-empty row active for a slice from t; cost the switches."""
    cells, ctr, modes = st.cells, st.ctr, st.scratch.modes
    a = _next_row(st, ctr[ACTIVE])
    ctr[ACTIVE] = a
    prev = _previous_row(st, a)
    slice_modes(pol, st, jobs, prev)
    slice_modes(pol, st, jobs, a)
    steady = True
    for p in range(cells.job.shape[1]):
        new = modes[a, p]
        if cells.assigned[p] != modes[prev, p]:
            steady = False
        cells.switched[p] = _switches(cells.assigned[p], new)
        if cells.switched[p]:
            ctr[SWITCHES] += 1
        cells.assigned[p] = new
    ctr[STEADY] = 1 if steady else 0
    ctr[SLICE_EPOCH] = ctr[EPOCH]
    ctr[SLICES] += 1
    st.acc[SLICE_END] = t + pol.slice_s


@kernel
def _rates(pol, st, jobs, a):
    """The cache index of the rates while row `a` is active (spin-block: the last),
    computed if the cache has none for this epoch. Entries computed from a switch pattern
    that later visits of the row will not repeat are used once and not kept."""
    cache, ctr = st.cache, st.ctr
    index = a if a >= 0 else cache.epoch.shape[0] - 1
    if cache.epoch[index] != ctr[EPOCH]:
        keep = a < 0 or (ctr[STEADY] == 1 and ctr[SLICE_EPOCH] == ctr[EPOCH])
        phase_rates(pol, st, jobs, a, cache.rate[index], cache.share[index])
        cache.epoch[index] = ctr[EPOCH] if keep else -1
    return index


@kernel
def _next_completion(st, jobs, index):
    """Time until the first resident job completes at the rates of cache entry `index`."""
    runs, cells = st.runs, st.cells
    rate, share = st.cache.rate[index], st.cache.share[index]
    soonest = np.inf
    for i in range(st.ctr[N_RESIDENT]):
        j = runs.resident[i]
        if jobs.sync[j]:
            if rate[j] > 0.0:
                soonest = min(soonest, (jobs.n_iter[j] - runs.done[j]) / rate[j])
            continue
        if runs.procs_left[j] == 0:
            return 0.0
        r = runs.row[j]
        for p in range(cells.job.shape[1]):
            if cells.job[r, p] == j and cells.left[r, p] > 0.0 and share[r, p] > 0.0:
                soonest = min(soonest, cells.left[r, p] / share[r, p])
    return soonest


@kernel
def _advance(st, jobs, index, dt):
    """Integrate progress over dt at the rates of cache entry `index`."""
    runs, cells = st.runs, st.cells
    rate, share = st.cache.rate[index], st.cache.share[index]
    for i in range(st.ctr[N_RESIDENT]):
        j = runs.resident[i]
        if jobs.sync[j]:
            if rate[j] > 0.0:
                runs.done[j] += rate[j] * dt
                runs.iters[j] += rate[j] * dt
                runs.busy[j] += dt
            continue
        r = runs.row[j]
        for p in range(cells.job.shape[1]):
            if cells.job[r, p] == j and cells.left[r, p] > 0.0 and share[r, p] > 0.0:
                cells.left[r, p] -= share[r, p] * dt
                if cells.left[r, p] <= _ROUNDING * jobs.n_iter[j] * max(jobs.even_s[j],
                                                                        jobs.odd_s[j]):
                    cells.left[r, p] = 0.0
                    runs.procs_left[j] -= 1
                    st.ctr[EPOCH] += 1  # its processor's others get its share
    free = _free_processors(st)
    idle = free - st.ctr[QUEUED_UNITS]
    if idle > 0:
        st.acc[UNUSED_AREA] += idle * dt


@kernel
def _complete(st, jobs, t):
    """Complete the jobs whose work is done (to rounding) at t; return whether any were."""
    runs = st.runs
    any_done = False
    i = 0
    while i < st.ctr[N_RESIDENT]:
        j = runs.resident[i]
        if jobs.sync[j]:
            finished = jobs.n_iter[j] - runs.done[j] <= _ROUNDING * jobs.n_iter[j]
        else:
            finished = runs.procs_left[j] == 0
        if finished:
            leave(st, jobs, j, t)
            any_done = True
        else:
            i += 1
    return any_done


@kernel
def _rotation_deltas(pol, st, jobs, a):
    """Progress of every resident job over one steady rotation starting with row a, and
    until the end of its own slot in it (scratch.d_*, scratch.part_*), from the rates the
    stepwise loop cached for this epoch; returns (rotation time, rows, unused area per
    rotation), the time 0 if some row's rates are not cached yet."""
    sc, runs, cells, cache = st.scratch, st.runs, st.cells, st.cache
    count = _rotation(st, a)
    n = st.ctr[N_RESIDENT]
    for i in range(n):
        j = runs.resident[i]
        sc.d_iters[j] = 0.0
        sc.d_busy[j] = 0.0
        sc.part_iters[j] = 0.0
        sc.part_busy[j] = 0.0
    for r in range(cells.job.shape[0]):
        for p in range(cells.job.shape[1]):
            sc.d_left[r, p] = 0.0
    for k in range(count):
        r = sc.rows[k]
        if cache.epoch[r] != st.ctr[EPOCH]:
            return 0.0, count, 0.0
        rate, share = cache.rate[r], cache.share[r]
        for i in range(n):
            j = runs.resident[i]
            if jobs.sync[j]:
                if rate[j] > 0.0:
                    sc.d_iters[j] += rate[j] * pol.slice_s
                    sc.d_busy[j] += pol.slice_s
            else:
                row = runs.row[j]
                for p in range(cells.job.shape[1]):
                    if cells.job[row, p] == j and cells.left[row, p] > 0.0:
                        sc.d_left[row, p] += share[row, p] * pol.slice_s
            if runs.row[j] == r:
                sc.part_iters[j] = sc.d_iters[j]
                sc.part_busy[j] = sc.d_busy[j]
    unused = max(0, _free_processors(st) - st.ctr[QUEUED_UNITS]) * pol.slice_s * count
    return pol.slice_s * count, count, unused


@kernel
def _try_jump(pol, st, jobs, t, next_arrival):
    """At the start of a steady slice, once every row's rates are cached for this
    configuration: move over as many whole rotations as leave every arrival, completion
    and class change to the stepwise loop; return the new time."""
    runs, cells, sc = st.runs, st.cells, st.scratch
    a = st.ctr[ACTIVE]
    period, count, unused = _rotation_deltas(pol, st, jobs, a)
    if period == 0.0:
        return t  # a row not visited since the configuration changed
    limit = np.inf
    if next_arrival < np.inf:
        limit = np.floor((next_arrival - t) / period) - 1
    n = st.ctr[N_RESIDENT]
    moving = False
    for i in range(n):
        j = runs.resident[i]
        if jobs.sync[j]:
            if sc.d_iters[j] > 0.0:
                moving = True
                limit = min(limit, np.floor((jobs.n_iter[j] - runs.done[j]) / sc.d_iters[j])
                            - 1)
        else:
            r = runs.row[j]
            for p in range(cells.job.shape[1]):
                if cells.job[r, p] == j and sc.d_left[r, p] > 0.0:
                    moving = True
                    limit = min(limit, np.floor(cells.left[r, p] / sc.d_left[r, p]) - 1)
    if not moving and limit == np.inf:
        st.ctr[STATUS] = STATUS_STUCK
        return t
    if limit < 1:
        return t
    rounds = np.int64(min(limit, 2.0**52))
    if pol.mode == FCS:
        for i in range(n):
            j = runs.resident[i]
            rounds = fcs.stable_rotations(st, jobs, j, sc.part_iters[j], sc.part_busy[j],
                                          sc.d_iters[j], sc.d_busy[j], rounds)
            if rounds < 1:
                return t
    for i in range(n):
        j = runs.resident[i]
        runs.done[j] += rounds * sc.d_iters[j]
        runs.iters[j] += rounds * sc.d_iters[j]
        runs.busy[j] += rounds * sc.d_busy[j]
        runs.tslots[j] += rounds
        for group in range(2):
            runs.cslots[j, group] += rounds
        if not jobs.sync[j]:
            r = runs.row[j]
            for p in range(cells.job.shape[1]):
                if cells.job[r, p] == j:
                    cells.left[r, p] -= rounds * sc.d_left[r, p]
    for k in range(count):
        slice_modes(pol, st, jobs, sc.rows[k])
    switches = 0
    for p in range(cells.job.shape[1]):
        for k in range(count):
            if _switches(sc.modes[sc.rows[(k + count - 1) % count], p],
                         sc.modes[sc.rows[k], p]):
                switches += 1
    st.ctr[SWITCHES] += rounds * switches
    st.ctr[SLICES] += rounds * count
    st.acc[UNUSED_AREA] += rounds * unused
    st.acc[SLICE_END] += rounds * period
    return t + rounds * period


@kernel
def run_timeshare(pol, st, jobs):
    """Simulate every job; results are left in `st` (see the module docstring).

    At one time: the ending slice's FCS evaluation, then arrivals, then a queue pass (if
    anything arrived or completed), then the next slice; then progress to the next event.
    """
    ctr, acc = st.ctr, st.acc
    submit, size = jobs.submit, jobs.size
    n = submit.shape[0]
    slicing = pol.mode != SPIN_BLOCK
    arrived = 0
    finished = 0
    t = submit[0] if n else 0.0
    changed = False
    while finished < n:
        if slicing and t >= acc[SLICE_END]:
            if pol.mode == FCS:
                _end_of_slot(st, jobs, ctr[ACTIVE])
            acc[SLICE_END] = np.inf
        while arrived < n and submit[arrived] <= t:
            enqueue(st, arrived, size[arrived])
            arrived += 1
            changed = True
        if changed and ctr[QLEN] > 0:
            admit(pol, st, jobs, t)
        changed = False
        next_arrival = submit[arrived] if arrived < n else np.inf
        if ctr[N_RESIDENT] == 0:
            if arrived == n:
                ctr[STATUS] = STATUS_STUCK
                return
            idle = _free_processors(st) - ctr[QUEUED_UNITS]
            if idle > 0:
                acc[UNUSED_AREA] += idle * (next_arrival - t)
            t = next_arrival
            acc[SLICE_END] = np.inf
            continue
        fresh_slice = slicing and acc[SLICE_END] == np.inf
        if fresh_slice:
            _start_slice(pol, st, jobs, t)
        index = _rates(pol, st, jobs, ctr[ACTIVE] if slicing else -1)
        if fresh_slice and ctr[STEADY] == 1:
            jumped = _try_jump(pol, st, jobs, t, next_arrival)
            if ctr[STATUS] == STATUS_STUCK:
                return
            if jumped > t:
                t = jumped
                continue
        step = min(_next_completion(st, jobs, index), next_arrival - t)
        if slicing:
            step = min(step, acc[SLICE_END] - t)
        if step == np.inf:
            ctr[STATUS] = STATUS_STUCK
            return
        _advance(st, jobs, index, step)
        if slicing and step == acc[SLICE_END] - t:
            t = acc[SLICE_END]
        elif step == next_arrival - t:
            t = next_arrival
        else:
            t = t + step
        before = ctr[N_RESIDENT]
        if _complete(st, jobs, t):
            finished += before - ctr[N_RESIDENT]
            changed = True
            if pol.alternate:
                pack(st, jobs)


@kernel
def _end_of_slot(st, jobs, a):
    """FCS: the slot of row a ended: re-evaluate the processes of its jobs."""
    runs = st.runs
    changed = False
    for i in range(st.ctr[N_RESIDENT]):
        j = runs.resident[i]
        if runs.row[j] == a and fcs.end_of_slot(st, jobs, j):
            changed = True
    if changed:
        st.ctr[EPOCH] += 1


def kernel_jobs(jobs: Jobs, policy: Policy) -> TimeShareJobs:
    """The kernel's view of `jobs` under `policy` (estimates x mpl)."""
    bsp = jobs.bsp
    if bsp is None:
        raise SpecError(f"scheduler {policy.scheduler} needs each job's BSP model "
                        "(pattern, compute, communication): use a workload that carries one "
                        "(fcs:scenario1..4) or the workload transform bsp_model=random")
    iteration = bsp.iteration_s(jobs.size)
    return TimeShareJobs(
        submit=jobs.submit_s, estimate=jobs.estimates(policy.estimates) * policy.mpl,
        size=jobs.size, sync=bsp.synchronising(jobs.size), n_iter=jobs.run_s / iteration,
        r_ded=1.0 / iteration, even_s=bsp.even_s, odd_s=bsp.odd_s, block=bsp.block,
        comm_s=bsp.comm_s)


def kernel_policy(policy: Policy, mode: Mode) -> TimeSharePolicy:
    """The struct of a time-sharing policy sharing processors in `mode`."""
    values = policy.params()
    return TimeSharePolicy(
        get_args(Mode).index(mode), values["queue"] == "easy",
        values.get("time_slice_s", fcs.T_SLICE_S), values.get("spin_s", fcs.T_SPIN_S),
        values.get("switch_cost_s", 0.0),  # spin-block: no slices, no global switch
        values.get("f_priority") == "always",
        values.get("quantum_s", 0.0), values.get("block_cost_s", 0.0),  # gang: no local
        values.get("matrix") == "alternate")                            # scheduling


def run(jobs: Jobs, machine: MachineSpec, policy: Policy,
        mode: Mode) -> tuple[Any, float, float]:
    """The kernel's final state for `jobs` on `machine` under `policy` sharing processors
    in `mode`, its run time and, apart from it, the time compiling the kernel or loading
    it from the cache took."""
    from simcore.base.jit import kernel_ready

    kernel = kernel_jobs(jobs, policy)
    check_memory(f"the processors of the {len(jobs):,} jobs of a time-sharing run on "
                 f"{machine}", 2 * len(jobs) * (1 + n_words(machine.units)) * 8)
    state = new_state(len(jobs), policy.mpl, machine.units)
    struct = kernel_policy(policy, mode)
    compile_s = kernel_ready(run_timeshare, struct, state, kernel)
    began = time.perf_counter()
    run_timeshare(struct, state, kernel)
    elapsed = time.perf_counter() - began
    if state.ctr[STATUS]:
        raise SimcoreError(f"time-sharing simulation of {machine} under {policy} stopped: "
                           "resident jobs can make no progress")
    return state, elapsed, compile_s


def simulate(jobs: Jobs, machine: MachineSpec, policy: Policy, seed: int, *,
             mode: Mode) -> Any:
    """`simcore.simulate` for time-sharing schedulers (`mode`: their registry row's
    variant): the schedule, the usual run metrics (those of the event engine it has none
    of at their absent values, `simcore.core.columns.Column.absent`), and per job the FCS
    class of its even- and odd-block processes at its end, its matrix row and its
    processors (as the one entry of a placement log, which schedules do not read: jobs
    share processors in time)."""
    from simcore.core.columns import RUN_METRICS, with_absent
    from simcore.core.result import SimulationResult, schedule_metrics, schedule_table

    state, elapsed, compile_s = run(jobs, machine, policy, mode)
    out = state.out
    estimate = jobs.estimates(policy.estimates) * policy.mpl
    slices = int(state.ctr[SLICES])
    summary = {
        "machine": str(machine),
        "policy": {"scheduler": policy.scheduler, **policy.params()}, "seed": seed,
        "jobs": len(jobs),
        **schedule_metrics(jobs, out.start_s, out.end_s, machine.units,
                           float(state.acc[UNUSED_AREA])),
        **with_absent({"decisions": int(state.ctr[DECISIONS])}, RUN_METRICS),
        "resources_left_busy": int(state.cells.load.sum()),
        "time_slices": slices, "context_switches": int(state.ctr[SWITCHES]),
    }
    table = schedule_table(jobs, out.start_s, out.start_s, out.end_s, estimate, jobs.size)
    for group, name in enumerate(("even", "odd")):
        classes = [CLASSES[c] if c >= 0 else None for c in out.final_cls[:, group]]
        table = table.append_column(f"fcs_class_{name}", pa.array(classes, pa.string()))
    table = table.append_column("matrix_row", arrow_array(state.runs.row))
    placed = PlacementLog.of_masks(out.start_s, jobs.job_id, out.procs)
    for name, values in placed.job_columns(np.arange(len(jobs)), len(jobs)).items():
        table = table.append_column(name, values)
    timing = {"simulate_s": elapsed, "s_per_decision": elapsed / max(1, int(
        state.ctr[DECISIONS])), "compile_s": compile_s, "metrics_s": 0.0}
    return SimulationResult(table, summary, np.zeros(0), timing)
