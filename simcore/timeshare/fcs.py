"""FCS's process classification (Algorithm 2, Figure 1, the constants of Table 2).

Every process starts as CS. At the end of each of its job's assigned slots a process's
`cslots` and its job's `tslots` grow by one and it is re-evaluated from what it measured
since its class began: the granularity g (time per synchronisation: compute plus wait)
and the compute per synchronisation T_cpu:

    cslots < cslots_MIN                          -> unchanged
    tslots mod tslots_MAX == 0 or g < CS_thresh  -> CS
    g < DC_thresh and T_cpu < F_thresh           -> F
    otherwise                                    -> DC

A class change restarts `cslots` and the measurements. In the fluid model a process of a
synchronising job synchronises once per iteration, so T_cpu is its compute per
iteration and g the job's time spent progressing divided by the iterations it made
(measured only while it progresses); a process that never synchronises has g = T_cpu =
infinity. The processes of one job that compute alike (one block parity, a "group") are
evaluated at the same moments with the same measurements, so they share one class.
"""

from __future__ import annotations

import math

import numpy as np

from simcore.base.jit import kernel
from simcore.timeshare.rates import CS, DC, F

T_SLICE_S = 0.1
T_SPIN_S = 120e-6
CSLOTS_MIN = 20
DC_THRESH_S = 1.0
CS_THRESH_S = 2e-3
F_THRESH_S = 0.85 * CS_THRESH_S
TSLOTS_MAX = 32768


@kernel
def classify(cls, cslots, tslots, granularity, cpu):
    """Algorithm 2: the class of a process after an assigned slot (see the docstring)."""
    if cslots < CSLOTS_MIN:
        return cls
    if tslots % TSLOTS_MAX == 0 or granularity < CS_THRESH_S:
        return CS
    if granularity < DC_THRESH_S and cpu < F_THRESH_S:
        return F
    return DC


@kernel
def group_exists(jobs, j, group):
    """Whether job j has processes of block parity `group`."""
    return group == 0 or (jobs.block[j] > 0 and jobs.size[j] > jobs.block[j])


@kernel
def group_compute_s(jobs, j, group):
    return jobs.odd_s[j] if group == 1 else jobs.even_s[j]


@kernel
def measured(jobs, runs, j, group, iters, busy):
    """(g, T_cpu) of job j's group from cumulative `iters` and `busy`; g is NaN when the
    group made no progress since its class began (nothing measured: no evaluation)."""
    if not jobs.sync[j]:
        return np.inf, np.inf
    made = iters - runs.reset_iters[j, group]
    if made <= 0.0:
        return np.nan, 0.0
    return (busy - runs.reset_busy[j, group]) / made, group_compute_s(jobs, j, group)


@kernel
def end_of_slot(st, jobs, j):
    """Job j's assigned slot ended: count it and re-evaluate both groups; return whether
    a class changed."""
    runs = st.runs
    runs.tslots[j] += 1
    changed = False
    for group in range(2):
        if not group_exists(jobs, j, group):
            continue
        runs.cslots[j, group] += 1
        g, cpu = measured(jobs, runs, j, group, runs.iters[j], runs.busy[j])
        if np.isnan(g):
            continue
        new = classify(runs.cls[j, group], runs.cslots[j, group], runs.tslots[j], g, cpu)
        if new != runs.cls[j, group]:
            runs.cls[j, group] = new
            runs.cslots[j, group] = 0
            runs.reset_iters[j, group] = runs.iters[j]
            runs.reset_busy[j, group] = runs.busy[j]
            changed = True
    return changed


@kernel
def _below(b0, i0, db, di, threshold, x):
    return b0 + x * db < threshold * (i0 + x * di)


@kernel
def _flip(b0, i0, db, di, threshold, x0, limit):
    """First x in [x0, limit] at which (g(x) < threshold) differs from its value at x0,
    g(x) = (b0 + x db) / (i0 + x di) with i0 + x di > 0; limit + 1 if none. The sign of a
    linear function changes at most once; the root is checked against rounding."""
    start = _below(b0, i0, db, di, threshold, x0)
    slope = db - threshold * di
    offset = b0 - threshold * i0
    if slope == 0.0 or (start and slope < 0.0) or (not start and slope > 0.0):
        return limit + 1
    root = -offset / slope
    if not root < limit + 1:
        return limit + 1
    x = max(x0, math.ceil(root) - 1)
    while x > x0 and _below(b0, i0, db, di, threshold, x - 1) != start:
        x -= 1
    while x <= limit and _below(b0, i0, db, di, threshold, x) == start:
        x += 1
    return x


@kernel
def stable_rotations(st, jobs, j, part_iters, part_busy, d_iters, d_busy, limit):
    """How many whole rotations job j's processes can run, with `d_*` per rotation and
    `part_*` until the end of the job's slot in the first one, before an evaluation
    changes a class: the first rotation m (1-based) whose evaluation would, minus one;
    `limit` if none up to limit."""
    runs = st.runs
    first = limit + 1
    for group in range(2):
        if not group_exists(jobs, j, group):
            continue
        cls = runs.cls[j, group]
        m0 = max(1, CSLOTS_MIN - runs.cslots[j, group])
        if m0 > limit:
            continue
        reset = m0 + (-(runs.tslots[j] + m0)) % TSLOTS_MAX  # tslots + m a multiple
        if cls != CS:
            first = min(first, reset)
        if not jobs.sync[j]:
            if cls != DC:
                first = min(first, m0)
            continue
        # the m-th evaluation sees i0 + (m - 1) di iterations and b0 + (m - 1) db time
        i0 = runs.iters[j] + part_iters - runs.reset_iters[j, group]
        b0 = runs.busy[j] + part_busy - runs.reset_busy[j, group]
        x0 = m0 - 1
        if i0 + x0 * d_iters <= 0.0:
            if d_iters > 0.0:
                first = min(first, m0)  # the first evaluation with something measured
            continue
        g0 = (b0 + x0 * d_busy) / (i0 + x0 * d_iters)
        if classify(cls, CSLOTS_MIN, 1, g0, group_compute_s(jobs, j, group)) != cls:
            first = min(first, m0)
            continue
        x = _flip(b0, i0, d_busy, d_iters, CS_THRESH_S, x0, limit)
        if group_compute_s(jobs, j, group) < F_THRESH_S:
            x = min(x, _flip(b0, i0, d_busy, d_iters, DC_THRESH_S, x0, limit))
        first = min(first, x + 1)
    return min(limit, first - 1)
