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
fast as on dedicated processors. Processes that share a processor are served round
robin, in up to two tiers (the F processes served first, then the others): a process
that never waits (its job does not synchronise) runs for the scheduler's quantum
`QUANTUM_S`; a synchronising one, whose partners are not coscheduled, computes its
iteration (in turns of at most a quantum), spins T_spin, blocks and costs `BLOCK_COST_S`
to switch out and back in, and so completes at most one iteration per n = max(1, w / Q)
rounds. The round a process waits through is its own burst plus a burst of every other
process of its tier, those of jobs slowed down elsewhere only as often as they come back
(a job at rate r joins a round of length C with probability min(1, r n C)); the tier
below gets what the tier above leaves. A job goes at the rate of its slowest process,
never faster than on dedicated processors; the rates of jobs that share processors depend
on each other and are found by iterating to the fixed point (to 1e-10 relative, from the
row's previous rates; plain rounds, then averaged ones against oscillation, recomputing
only processors whose jobs moved). Processors that paid the global context switch at the
start of the slice lose `switch_s / slice` of it.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from simcore.base.jit import kernel
from simcore.timeshare.state import N_RESIDENT

#: The local scheduler's effective quantum, derived once from scenario 3 under
#: spin-block (docs/timesharing.md): what a process that never waits runs before a
#: woken one gets the processor.
QUANTUM_S = 2.4e-3
#: CPU cost of blocking and being woken (two local context switches), derived once from
#: scenario 1 under spin-block (docs/timesharing.md).
BLOCK_COST_S = 20e-6

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
def _turns_and_bursts(pol, st, jobs):
    """For every process: the turns it needs per iteration (one, or as many quanta as its
    computing takes when that is longer: the scheduler preempts it; 0 for a process that
    never waits) and the CPU it holds per turn (a quantum, or its iteration's compute,
    spin and block spread over its turns), into scratch.turns and scratch.burst."""
    cells, turns, burst = st.cells, st.scratch.turns, st.scratch.burst
    for r in range(cells.job.shape[0]):
        for p in range(cells.job.shape[1]):
            j = cells.job[r, p]
            if j < 0 or not jobs.sync[j]:
                turns[r, p] = 0.0
                burst[r, p] = QUANTUM_S
                continue
            w = compute_s(jobs, j, cells.rank[r, p])
            turns[r, p] = max(1.0, w / QUANTUM_S)
            burst[r, p] = (w + pol.spin_s + BLOCK_COST_S) / turns[r, p]


@kernel
def round_length(pol, st, jobs, p, me, tier_role, avail, rate):
    """Time between two turns of the process in row `me` of processor p among the
    processes of `tier_role` there, with `avail` of the processor for that tier: the
    solution of C = (own burst + sum of others' bursts x min(1, r n C)) / avail, a
    synchronising process at rate r taking n turns per iteration (concave in C, one
    solution, found on the segment where it lies)."""
    if avail <= 0.0:
        return np.inf
    cells, role, turns, bursts = st.cells, st.scratch.role, st.scratch.turns, st.scratch.burst
    bound, burst = st.scratch.bound, st.scratch.member_burst
    fixed = bursts[me, p]
    m = 0
    for r in range(cells.job.shape[0]):
        if r == me or role[r, p] != tier_role:
            continue
        j = cells.job[r, p]
        if not jobs.sync[j]:
            fixed += QUANTUM_S
        elif rate[j] > 0.0:  # insertion by 1 / (r n): the length from which it always joins
            joins = rate[j] * turns[r, p]
            k = m
            while k > 0 and bound[k - 1] > 1.0 / joins:
                bound[k] = bound[k - 1]
                burst[k] = burst[k - 1]
                k -= 1
            bound[k] = 1.0 / joins
            burst[k] = bursts[r, p]
            m += 1
    # with the first s members (the smallest bounds) joining every round
    for s in range(m, -1, -1):
        numerator = fixed
        slope = 0.0
        for k in range(m):
            if k < s:
                numerator += burst[k]
            else:
                slope += burst[k] / bound[k]
        if avail - slope <= 0.0:
            continue
        length = numerator / (avail - slope)
        low = bound[s - 1] if s > 0 else 0.0
        high = bound[s] if s < m else np.inf
        if length >= low * (1.0 - 1e-12) and length <= high * (1.0 + 1e-12):
            return length
    numerator = fixed  # numerically no segment: every member joining every round
    for k in range(m):
        numerator += burst[k]
    return numerator / avail


@kernel
def _cpu_use(pol, jobs, j, w, rate):
    """Fraction of a processor a first-tier process of job j (compute w) uses at `rate`:
    it computes, then spins through a short wait or spins T_spin and blocks."""
    if rate <= 0.0:
        return 0.0
    slack = 1.0 / rate - w
    if slack <= pol.spin_s:
        return 1.0
    return min(1.0, rate * (w + pol.spin_s + BLOCK_COST_S))


@kernel
def _processor(pol, st, jobs, p, factor, rate, share_out):
    """Caps of processor p's processes given the jobs' rates: the rate each synchronising
    process allows its job into scratch.cap, the CPU share of each never-waiting one into
    share_out."""
    cells, role, cap = st.cells, st.scratch.role, st.scratch.cap
    rows = cells.job.shape[0]
    first = 0
    use = 0.0
    for r in range(rows):
        if role[r, p] == TIER1:
            first += 1
            j = cells.job[r, p]
            use += _cpu_use(pol, jobs, j, compute_s(jobs, j, cells.rank[r, p]), rate[j])
    second_avail = max(0.0, factor - min(use, 1.0) * factor)
    for r in range(rows):
        j = cells.job[r, p]
        if j < 0:
            continue
        share_out[r, p] = 0.0
        cap[r, p] = 0.0
        kind = role[r, p]
        if kind == OFF:
            continue
        if kind == SOLO or (kind == TIER1 and first == 1):
            if jobs.sync[j]:
                cap[r, p] = factor * jobs.r_ded[j]
            else:
                share_out[r, p] = factor
            continue
        length = round_length(pol, st, jobs, p, r, kind, factor if kind == TIER1
                              else second_avail, rate)
        if jobs.sync[j]:
            cap[r, p] = 1.0 / (st.scratch.turns[r, p] * length)
        else:
            share_out[r, p] = QUANTUM_S / length


@kernel
def phase_rates(pol, st, jobs, a, rate_out, share_out):
    """Rates of the resident jobs while row `a` is active (a < 0: spin-block), the
    processors in st.cells.switched having paid a global context switch: iterations/s of
    synchronising jobs into rate_out[j], CPU shares of the others' processes into
    share_out[r, p]."""
    runs, cells, rate, fresh = st.runs, st.cells, st.scratch.rate, st.scratch.fresh
    cap, dirty, moved = st.scratch.cap, st.scratch.dirty, st.scratch.moved
    switched = cells.switched
    resident = runs.resident
    n = st.ctr[N_RESIDENT]
    rows, procs = cells.job.shape
    assign_roles(pol, st, jobs, a)
    _turns_and_bursts(pol, st, jobs)
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
