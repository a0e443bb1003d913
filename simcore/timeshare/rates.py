"""How fast every resident job progresses while one row of the matrix is active.

The fluid model of a time slice. On each processor the scheduler decides who may run:

- gang: the active row's process, alone ("exclusive": it polls while it waits); with
  `matrix: alternate`, on a processor idle in the active row, the process of another
  row's job that alternate scheduling runs there (`slice_modes`), alone as well;
- spin-block: every resident process, scheduled by the processor's own scheduler;
- FCS (Algorithm 1): if the active row's process is CS, it alone; otherwise every F and
  DC process, the active row's process served first if it is F (`f_priority` "slot"), or
  every F process served first ("always").

A process that runs alone (exclusive, or the only one that may run) lets its job go as
fast as on dedicated processors. Processes that share a processor are scheduled by the
processor's own scheduler, in up to two tiers (the F processes served first, then the
others), as an operating system does:

- fair shares: the processor is split max-min fairly among a tier's processes (the
  water level of their demands): a process asking for less than an equal share gets what
  it asks for, the others split the rest equally; the tier below gets what the tier
  above leaves. A synchronising process on a shared processor uses `cpu` = its compute,
  T_spin and `block_cost_s` (blocking and being woken) of CPU per iteration, so its
  share caps its job at share / cpu iterations per second; a process that never waits
  asks for all it can get;
- wake-up: a process that blocked is woken when its message arrives and preferred over
  spinning ones, but waits for a computing one to end its burst (its compute, up to the
  quantum `quantum_s`; a quantum for a process that never waits): on average half a
  burst of each other process of its tier and those above, weighted by the fraction of
  time it computes;
- synchronisation: an iteration of the job ends when its last process is through its
  compute and, where it shares its processor, blocking and its mean wake-up delay, plus
  the job's communication, so a fine-grained job among coarse processes waits a share
  of their bursts every iteration, while an imbalanced job hides the delays of its light
  processes in their slack. Delays are taken at their means (a fluid model): the
  amplification of random delays over many synchronising processes is left out.

A job goes at the rate of its slowest constraint, never faster than on dedicated
processors; the rates of jobs that share processors depend on each other and are found
by iterating to the fixed point (to 1e-10 relative, from the row's previous rates; plain
rounds, then averaged ones against oscillation, recomputing only processors whose jobs
moved). A job's progress does not depend on how many iterations another job has, only on
the CPU and delays they cause each other. Processors that paid the global context switch
at the start of the slice lose `switch_s / slice` of it.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from simcore.base.jit import kernel
from simcore.timeshare.state import N_RESIDENT

#: How processors are shared: a time-sharing scheduler's mode (its registry row's variant).
Mode = Literal["gang", "spin-block", "fcs"]
GANG, SPIN_BLOCK, FCS = range(len(get_args(Mode)))
CS, F, DC = range(3)
OFF, SOLO, TIER1, TIER2 = range(4)
NOTHING, LOCAL = -1, -2  # slice modes besides a job's exclusive process
_MAX_ROUNDS = 200
_DAMPED_AFTER = 20  # rounds of plain iteration before averaging (against 2-cycles)
_TOLERANCE = 1e-10  # relative: far below anything a schedule shows


@kernel
def has_work(st, jobs, r, p):
    """Whether cell (r, p) holds a process that still has work."""
    j = st.cells.job[r, p]
    return j >= 0 and (jobs.sync[j] or st.cells.left[r, p] > 0.0)


@kernel
def compute_s(jobs, j, rank):
    """Compute per iteration of rank `rank` of job j."""
    block = jobs.block[j]
    if block > 0 and (rank // block) % 2 == 1:
        return jobs.odd_s[j]
    return jobs.even_s[j]


@kernel
def _own_mode(pol, st, jobs, a, p):
    """What processor p runs of its own processes while row `a` is active (see
    `slice_modes`)."""
    cells = st.cells
    x = cells.job[a, p]
    if x >= 0 and has_work(st, jobs, a, p) and (
            pol.mode == GANG or st.runs.cls[x, cells.group[a, p]] == CS):
        return x
    mode = NOTHING
    if pol.mode == FCS:
        for r in range(cells.job.shape[0]):
            if has_work(st, jobs, r, p) and \
                    st.runs.cls[cells.job[r, p], cells.group[r, p]] != CS:
                mode = cells.job[r, p] if mode == NOTHING else LOCAL
    return mode


@kernel
def slice_modes(pol, st, jobs, a):
    """What each processor runs while row `a` is active, into scratch.modes[a]: the job
    of the one process it runs (gang: the row's; FCS: the row's CS process, or the only F
    or DC one), LOCAL (FCS: several F and DC processes, scheduled locally) or NOTHING.
    Gang with `matrix: alternate` then gives processors idle in row a to whole jobs of
    other rows (alternate scheduling): candidates by row from a + 1 on, cyclically, and in
    a row by their first processor; a job runs if every processor of its processes is
    still idle. A global context switch costs where the mode changes from something to
    something else: processes are suspended and resumed."""
    cells = st.cells
    rows, procs = cells.job.shape
    mode = st.scratch.modes[a]
    for p in range(procs):
        mode[p] = _own_mode(pol, st, jobs, a, p)
    if pol.mode != GANG or not pol.alternate:
        return
    for k in range(1, rows):
        r = (a + k) % rows
        for p in range(procs):
            j = cells.job[r, p]
            if j < 0 or cells.rank[r, p] != 0:  # rank 0 holds a job's first processor
                continue
            idle = True
            for q in range(p, procs):
                if cells.job[r, q] == j and mode[q] != NOTHING:
                    idle = False
            if idle:
                for q in range(p, procs):
                    if cells.job[r, q] == j:
                        mode[q] = j


@kernel
def assign_roles(pol, st, jobs, a):
    """How each process runs while row `a` is active (a < 0: no row), into scratch.role."""
    cells, role = st.cells, st.scratch.role
    rows, procs = cells.job.shape
    cls = st.runs.cls
    if pol.mode == GANG and a >= 0:
        slice_modes(pol, st, jobs, a)
    for p in range(procs):
        for r in range(rows):
            role[r, p] = OFF
        active = a >= 0 and has_work(st, jobs, a, p)
        if pol.mode == GANG:
            j = st.scratch.modes[a, p] if a >= 0 else NOTHING
            if j >= 0:  # the slice's process runs alone
                role[st.runs.row[j], p] = SOLO
            continue
        if pol.mode == FCS and active and cls[cells.job[a, p], cells.group[a, p]] == CS:
            role[a, p] = SOLO
            continue
        count = 0
        last = -1
        for r in range(rows):
            if not has_work(st, jobs, r, p):
                continue
            if pol.mode == FCS and cls[cells.job[r, p], cells.group[r, p]] == CS:
                continue
            role[r, p] = TIER2
            count += 1
            last = r
        if count == 1:
            role[last, p] = SOLO
        elif count > 1 and pol.mode == FCS:
            for r in range(rows):
                if role[r, p] == TIER2 and cls[cells.job[r, p], cells.group[r, p]] == F \
                        and (r == a or pol.f_always):
                    role[r, p] = TIER1


@kernel
def _costs(pol, st, jobs):
    """For every process: the CPU it uses per iteration on a shared processor (compute,
    the spin before it blocks, blocking and being woken; 0 for a process that never
    waits) and its burst, how long it holds the processor once it has it (its compute up
    to a quantum; a quantum for one that never waits), into scratch.cpu and scratch.burst."""
    cells, cpu, burst = st.cells, st.scratch.cpu, st.scratch.burst
    for r in range(cells.job.shape[0]):
        for p in range(cells.job.shape[1]):
            j = cells.job[r, p]
            if j < 0 or not jobs.sync[j]:
                cpu[r, p] = 0.0
                burst[r, p] = pol.quantum_s
                continue
            w = compute_s(jobs, j, cells.rank[r, p])
            cpu[r, p] = w + pol.spin_s + pol.block_cost_s
            burst[r, p] = min(w, pol.quantum_s)


@kernel
def _demand(st, jobs, r, p, rate):
    """CPU fraction the process in cell (r, p) asks for at its job's rate (inf: it never
    waits)."""
    j = st.cells.job[r, p]
    if not jobs.sync[j]:
        return np.inf
    return rate[j] * st.scratch.cpu[r, p]


@kernel
def water_level(st, jobs, p, me, tier_role, avail, rate):
    """The fair share of processor p among its processes of `tier_role`, `avail` of the
    processor being theirs: the level L with sum(min(demand, L)) = avail, the process in
    row `me` (if any, me >= 0) asking for all it can get; inf when every demand is met
    with room to spare."""
    cells, role, sorted_demands = st.cells, st.scratch.role, st.scratch.bound
    unlimited = 1 if me >= 0 else 0
    m = 0
    for r in range(cells.job.shape[0]):
        if r == me or role[r, p] != tier_role:
            continue
        d = _demand(st, jobs, r, p, rate)
        if d == np.inf:
            unlimited += 1
            continue
        k = m  # insertion sort of the finite demands
        while k > 0 and sorted_demands[k - 1] > d:
            sorted_demands[k] = sorted_demands[k - 1]
            k -= 1
        sorted_demands[k] = d
        m += 1
    left = max(0.0, avail)
    count = unlimited + m
    for k in range(m):
        if sorted_demands[k] * count > left:
            break
        left -= sorted_demands[k]
        count -= 1
    if count == 0:
        return np.inf
    return left / count


@kernel
def _used(st, jobs, r, p, level, rate):
    """CPU fraction the process in cell (r, p) uses under fair-share level `level`, and
    the part of it spent computing."""
    d = _demand(st, jobs, r, p, rate)
    use = min(d, level)
    j = st.cells.job[r, p]
    if not jobs.sync[j]:
        return use, use
    cpu = st.scratch.cpu[r, p]
    return use, use * compute_s(jobs, j, st.cells.rank[r, p]) / cpu


@kernel
def _processor(pol, st, jobs, p, factor, rate, share_out):
    """Caps of processor p's processes given the jobs' rates: the rate each synchronising
    process's CPU share allows its job into scratch.cap and its wake-up delay into
    scratch.delay, the CPU share of each never-waiting one into share_out."""
    cells, role, cap, delay = st.cells, st.scratch.role, st.scratch.cap, st.scratch.delay
    rows = cells.job.shape[0]
    first = 0
    for r in range(rows):
        if role[r, p] == TIER1:
            first += 1
    level1 = water_level(st, jobs, p, -1, TIER1, factor, rate)
    used1 = 0.0
    for r in range(rows):
        if role[r, p] == TIER1:
            used1 += _used(st, jobs, r, p, level1, rate)[0]
    second_avail = max(0.0, factor - min(used1, factor))
    level2 = water_level(st, jobs, p, -1, TIER2, second_avail, rate)
    for r in range(rows):
        j = cells.job[r, p]
        if j < 0:
            continue
        share_out[r, p] = 0.0
        cap[r, p] = 0.0
        delay[r, p] = 0.0
        kind = role[r, p]
        if kind == OFF:
            continue
        if kind == SOLO or (kind == TIER1 and first == 1):
            if jobs.sync[j]:
                cap[r, p] = factor * jobs.r_ded[j]
            else:
                share_out[r, p] = factor
            continue
        avail = factor if kind == TIER1 else second_avail
        level = water_level(st, jobs, p, r, kind, avail, rate)
        if not jobs.sync[j]:
            share_out[r, p] = level
            continue
        cap[r, p] = level / st.scratch.cpu[r, p]
        busy = 0.0  # the others' computing time, by burst: a woken F process preempts
        for k in range(rows):  # the second tier
            if k != r and (role[k, p] == TIER1 or (role[k, p] == TIER2 and kind == TIER2)):
                busy += _used(st, jobs, k, p, level1 if role[k, p] == TIER1 else level2,
                              rate)[1] * st.scratch.burst[k, p]
        delay[r, p] = 0.5 * busy


@kernel
def _delay_bound(pol, st, jobs, j):
    """The rate job j's wake-up delays allow: one iteration per its communication plus the
    time its last process is through its compute and, where it shares its processor,
    blocking and its mean wake-up delay; inf when no process of j waits to be woken."""
    cells, delay = st.cells, st.scratch.delay
    r = st.runs.row[j]
    last = 0.0
    delayed = False
    for p in range(cells.job.shape[1]):
        if cells.job[r, p] != j:
            continue
        through = compute_s(jobs, j, cells.rank[r, p])
        if delay[r, p] > 0.0:  # only processes that share their processor wait
            through += pol.block_cost_s + delay[r, p]
            delayed = True
        last = max(last, through)
    if not delayed:
        return np.inf
    return 1.0 / (jobs.comm_s[j] + last)


@kernel
def phase_rates(pol, st, jobs, a, rate_out, share_out):
    """Rates of the resident jobs while row `a` is active (a < 0: spin-block), the
    processors in st.cells.switched having paid a global context switch (see the module
    docstring): iterations/s of
    synchronising jobs into rate_out[j], CPU shares of the others' processes into
    share_out[r, p]."""
    runs, cells, rate, fresh = st.runs, st.cells, st.scratch.rate, st.scratch.fresh
    cap, dirty, moved = st.scratch.cap, st.scratch.dirty, st.scratch.moved
    switched = cells.switched
    resident = runs.resident
    n = st.ctr[N_RESIDENT]
    rows, procs = cells.job.shape
    assign_roles(pol, st, jobs, a)
    _costs(pol, st, jobs)
    lost = pol.switch_s / pol.slice_s
    for i in range(n):  # from the row's last rates (a new configuration moves few jobs)
        j = resident[i]
        rate[j] = 0.0
        if jobs.sync[j]:
            rate[j] = rate_out[j] if 0.0 < rate_out[j] <= jobs.r_ded[j] else jobs.r_ded[j]
    for p in range(procs):
        dirty[p] = True
    for iteration in range(_MAX_ROUNDS):
        for p in range(procs):  # only processors hosting a job whose rate moved
            if dirty[p]:
                _processor(pol, st, jobs, p, 1.0 - lost if switched[p] else 1.0, rate,
                           share_out)
        for i in range(n):
            j = resident[i]
            fresh[j] = jobs.r_ded[j] if jobs.sync[j] else 0.0
        for r in range(rows):
            for p in range(procs):
                j = cells.job[r, p]
                if j >= 0 and jobs.sync[j]:
                    fresh[j] = min(fresh[j], cap[r, p])
        for i in range(n):
            j = resident[i]
            if jobs.sync[j] and fresh[j] > 0.0:
                fresh[j] = min(fresh[j], _delay_bound(pol, st, jobs, j))
        change = 0.0
        scale = 0.0
        for i in range(n):
            j = resident[i]
            change = max(change, abs(fresh[j] - rate[j]))
            scale = max(scale, fresh[j])
        if change <= _TOLERANCE * scale:
            break
        for i in range(n):
            j = resident[i]
            before = rate[j]
            rate[j] = fresh[j] if iteration < _DAMPED_AFTER else 0.5 * (rate[j] + fresh[j])
            moved[j] = rate[j] != before
        for p in range(procs):
            dirty[p] = False
            for r in range(rows):
                j = cells.job[r, p]
                if j >= 0 and moved[j]:
                    dirty[p] = True
    for i in range(n):  # the shares of non-waiting processes at the final rates
        j = resident[i]
        rate[j] = fresh[j]
    for p in range(procs):
        _processor(pol, st, jobs, p, 1.0 - lost if switched[p] else 1.0, rate, share_out)
    for i in range(n):
        j = resident[i]
        rate_out[j] = rate[j] if jobs.sync[j] else 0.0
