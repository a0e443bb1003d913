"""Das Sharma and Pradhan's priority scheduling with reservations on 2D meshes (row
`priority`), as Chu's thesis describes it (sections 2.5.4 and 5.4).

A job that arrives is started if the allocator finds it a free submesh (reserved processors
excluded). If not, and reservations are on, it reserves a submesh: among every w x h
position holding no reserved processor, the one with the fewest free processors (reserving
free processors idles them), then the one overlapping the fewest running jobs, then the
first with the least x, then y [Inf: the thesis gives no last tie-break, nor the
orientation; the job's own is used]. Reserved processors are reserved once and given to no
other job. A job with a reservation joins the reservation list; otherwise the waiting list.

Priority: each waiting job counts the jobs arriving after it that were started or reserved
while it waited. Once the first job of the waiting list has counted more than MAX_PRI,
nothing else is started or reserved until it is: arrivals join the waiting list, passes
stop at it. (MAX_PRI null: never; then, without reservations, this is Scan All with no
waiting-time limit, as Chu notes.)

On completions, three phases: (1) jobs whose reserved submesh is wholly free get it; (2)
the other reserving jobs are given any free submesh the allocator finds, their own
reservation counting as free [Inf: "determine if any of the reserved submeshes can be
allocated due to the processors released"]; (3) waiting jobs are started in order, those
that do not fit skipped, then reservations are made for the waiting jobs in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import intersects
from simcore.base.jit import implements, kernel
from simcore.core.allocate import place
from simcore.core.decide import decide
from simcore.core.state import DECISIONS, FREE_UNITS, N_ACTIVE, STARTS, compact_queue, start_job
from simcore.machines.submesh import assign, busy_list, fill_grid, write_rect

if TYPE_CHECKING:
    from simcore.schedulers.contract import Policy

WAITING, RESERVING, SEEN, ACTIVE = range(4)


class PriorityPolicy(NamedTuple):
    start_delay: float
    max_pri: int  # -1: never blocks
    reserve: bool
    waiting: np.ndarray  # (jobs,) int64: the waiting list, in arrival order
    reserving: np.ndarray  # (jobs,) int64: the reservation list, in reservation order
    held: np.ndarray  # (jobs, 4) int64: each reserving job's submesh x, y, w, h
    passed: np.ndarray  # (jobs,) int64: later arrivals started or reserved while it waited
    count: np.ndarray  # (4,) int64: WAITING, RESERVING listed, SEEN arrivals, ACTIVE jobs


def kernel_policy(policy: Policy, n_jobs: int) -> PriorityPolicy:
    max_pri = policy.max_pri
    return PriorityPolicy(
        policy.start_delay_s, -1 if max_pri is None else max_pri, policy.reserve,
        np.zeros(n_jobs, dtype=np.int64), np.zeros(n_jobs, dtype=np.int64),
        np.zeros((n_jobs, 4), dtype=np.int64), np.zeros(n_jobs, dtype=np.int64),
        np.zeros(4, dtype=np.int64))


@implements(decide, PriorityPolicy)
@kernel
def decide_priority(policy, m, st, jobs, t):
    """The three phases after completions, then the arrivals (see the module docstring)."""
    ctr, count = st.ctr, policy.count
    ctr[DECISIONS] += 1
    starts = ctr[STARTS]
    if ctr[N_ACTIVE] < count[ACTIVE]:
        for phase in (1, 2):
            i = 0
            while i < count[RESERVING]:
                if claim(policy, m, st, jobs, policy.reserving[i], t, phase == 2):
                    _remove(policy.reserving, count, RESERVING, i)
                else:
                    i += 1
        waiting_pass(policy, m, st, jobs, t)
    n = jobs.submit.shape[0]
    while count[SEEN] < n and jobs.submit[count[SEEN]] <= t:
        j = count[SEEN]
        count[SEEN] += 1
        policy.passed[j] = 0
        policy.waiting[count[WAITING]] = j
        count[WAITING] += 1
        if not blocked(policy, count[WAITING] - 1) and (
                try_start(policy, m, st, jobs, j, t) or try_reserve(policy, m, st, jobs, j, t)):
            count[WAITING] -= 1
    count[ACTIVE] = ctr[N_ACTIVE]
    if ctr[STARTS] != starts:
        compact_queue(st)


@kernel
def blocked(policy, position):
    """Whether the waiting job at `position` may not go now: the list's first job has
    counted more than MAX_PRI later arrivals going ahead, and this is not that job."""
    if policy.max_pri < 0 or position == 0 or policy.count[WAITING] == 0:
        return False
    return policy.passed[policy.waiting[0]] > policy.max_pri


@kernel
def waiting_pass(policy, m, st, jobs, t):
    """Phase 3: start the waiting jobs that fit, then reserve for the others, in order."""
    count, waiting = policy.count, policy.waiting
    for reserving in (False, True):
        if reserving and not policy.reserve:
            return
        i = 0
        while i < count[WAITING]:
            if blocked(policy, i):
                break
            j = waiting[i]
            if try_reserve(policy, m, st, jobs, j, t) if reserving else \
                    try_start(policy, m, st, jobs, j, t):
                _remove(waiting, count, WAITING, i)
            else:
                i += 1


@kernel
def _remove(items, count, which, i):
    for k in range(i, count[which] - 1):
        items[k] = items[k + 1]
    count[which] -= 1


@kernel
def _went_ahead(policy, j):
    """Job j was started or reserved: every waiting job that arrived before it counts it."""
    waiting = policy.waiting
    for i in range(policy.count[WAITING]):
        if waiting[i] < j:
            policy.passed[waiting[i]] += 1


@kernel
def try_start(policy, m, st, jobs, j, t):
    """Start job j in a free submesh avoiding reserved processors; whether it did."""
    if jobs.size[j] > st.ctr[FREE_UNITS]:
        return False
    mask = st.scratch.mask
    alloc = place(m, st, j, jobs.size[j], st.run.occ, 0, m.mesh.reserved, mask)
    if alloc < 0:
        return False
    start_job(st, jobs, policy.start_delay, j, t, alloc, mask)
    _went_ahead(policy, j)
    return True


@kernel
def claim(policy, m, st, jobs, j, t, anywhere):
    """Start reserving job j in its reserved submesh if that is free (phase 1) or, with
    `anywhere`, wherever the allocator finds room, its own reservation freed (phase 2)."""
    mesh, held, mask = m.mesh, policy.held, st.scratch.mask
    write_rect(mesh, held[j, 0], held[j, 1], held[j, 2], held[j, 3], st.scratch.tmp)
    for k in range(mask.shape[0]):
        mesh.reserved[k] &= ~st.scratch.tmp[k]
    if not anywhere:
        if intersects(st.scratch.tmp, st.run.occ):
            alloc = -1
        else:
            alloc = assign(mesh, j, held[j, 0], held[j, 1], held[j, 2], held[j, 3], mask)
    elif jobs.size[j] > st.ctr[FREE_UNITS]:
        alloc = -1
    else:
        alloc = place(m, st, j, jobs.size[j], st.run.occ, 0, mesh.reserved, mask)
    if alloc < 0:
        write_rect(mesh, held[j, 0], held[j, 1], held[j, 2], held[j, 3], st.scratch.tmp)
        for k in range(mask.shape[0]):
            mesh.reserved[k] |= st.scratch.tmp[k]
        return False
    start_job(st, jobs, policy.start_delay, j, t, alloc, mask)
    return True


@kernel
def try_reserve(policy, m, st, jobs, j, t):
    """Reserve a submesh for job j (see the module docstring); whether it got one."""
    if not policy.reserve:
        return False
    mesh = m.mesh
    w, h = mesh.job_w[j], mesh.job_h[j]
    x, y = reservation(mesh, st, w, h)
    if x < 0:
        return False
    held = policy.held
    held[j, 0], held[j, 1], held[j, 2], held[j, 3] = x, y, w, h
    write_rect(mesh, x, y, w, h, st.scratch.tmp)
    for k in range(st.scratch.tmp.shape[0]):
        mesh.reserved[k] |= st.scratch.tmp[k]
    policy.reserving[policy.count[RESERVING]] = j
    policy.count[RESERVING] += 1
    if np.isnan(st.out.reserved_s[j]):
        st.out.reserved_s[j] = t
    _went_ahead(policy, j)
    return True


@kernel
def reservation(mesh, st, w, h):
    """The base of the w x h submesh to reserve, or (-1, -1) if every one holds a reserved
    processor: the fewest free processors, then the fewest running jobs overlapped, then
    the least x, then y."""
    width, height = mesh.width, mesh.height
    if w > width or h > height:
        return -1, -1
    fill_grid(mesh, st.run.occ, st.scratch.nothing)
    n = busy_list(mesh, st, st.run.occ, st.scratch.nothing)
    busy, reserved = mesh.sums[0], mesh.sums[1]
    stride = height + 1
    for x in range(width + 1):
        for y in range(height + 1):
            if x == 0 or y == 0:
                busy[x * stride + y] = 0
                reserved[x * stride + y] = 0
                continue
            u = (x - 1) * height + y - 1
            r = (mesh.reserved[u >> 6] >> np.uint64(u & 63)) & np.uint64(1)
            busy[x * stride + y] = busy[(x - 1) * stride + y] + busy[x * stride + y - 1] \
                - busy[(x - 1) * stride + y - 1] + mesh.grid[u]
            reserved[x * stride + y] = reserved[(x - 1) * stride + y] + \
                reserved[x * stride + y - 1] - reserved[(x - 1) * stride + y - 1] + r
    best_x, best_y, best_free, best_jobs = -1, -1, w * h + 1, 0
    for x in range(width - w + 1):
        for y in range(height - h + 1):
            x2, y2 = x + w, y + h
            if reserved[x2 * stride + y2] - reserved[x * stride + y2] - \
                    reserved[x2 * stride + y] + reserved[x * stride + y]:
                continue
            free = w * h - (busy[x2 * stride + y2] - busy[x * stride + y2]
                            - busy[x2 * stride + y] + busy[x * stride + y])
            if free > best_free:
                continue
            jobs_hit = 0
            blist = mesh.blist
            for k in range(n):
                if blist[k, 0] < x2 and x <= blist[k, 2] and blist[k, 1] < y2 and y <= blist[k, 3]:
                    jobs_hit += 1
            if free < best_free or jobs_hit < best_jobs:
                best_x, best_y, best_free, best_jobs = x, y, free, jobs_hit
    return best_x, best_y
