"""The Ousterhout matrix and its queue: which waiting jobs enter which row, and where.

The matrix has `mpl` rows (time slots) of P cells; a job's processes occupy cells of one
row, one per processor, so a processor holds at most `mpl` processes. A job enters the
first row with enough free cells, on the free processors holding the fewest processes
(ties: lowest index), its ranks in processor order. Jobs enter in queue order at every
arrival and completion, first come first served until the first that fits no row; with
`queue=easy`, EASY backfilling follows (Mu'alem and Feitelson, with rows): the blocked head
gets a reservation, the earliest estimated end of resident jobs (start + estimate x mpl,
as the paper does) after which some row has room for it, in the first such row; a later
job that fits now enters if it will end by then, or if it avoids that row, or if it takes
no more of the row's cells than the head leaves there ("extra" cells, then consumed).
Under gang scheduling with `matrix: alternate`, completions also pack the rows: a job
moves down to the lowest row whose cells on all its processors are empty (`pack`).
"""

from __future__ import annotations

import numpy as np

from simcore.base.jit import kernel
from simcore.core.state import DECISIONS, EPOCH, QLEN, QUEUED_UNITS, keep_waiting
from simcore.timeshare.rates import compute_s
from simcore.timeshare.state import N_RESIDENT


@kernel
def first_row(st, size, skip):
    """The first row (other than `skip`) with `size` free cells, or -1."""
    row_free = st.cells.row_free
    for r in range(row_free.shape[0]):
        if r != skip and row_free[r] >= size:
            return r
    return -1


@kernel
def enter(st, jobs, j, r, t):
    """Put waiting job j into row r at time t (the row has room)."""
    cells, runs, taken = st.cells, st.runs, st.scratch.taken
    procs = cells.job.shape[1]
    need = jobs.size[j]
    for p in range(procs):
        taken[p] = False
    got = 0
    level = 0
    while got < need:  # the free processors holding fewest processes, by index
        for p in range(procs):
            if got < need and cells.job[r, p] < 0 and cells.load[p] == level:
                taken[p] = True
                got += 1
        level += 1
    rank = 0
    left = 0
    for p in range(procs):
        if not taken[p]:
            continue
        cells.job[r, p] = j
        cells.rank[r, p] = rank
        block = jobs.block[j]
        cells.group[r, p] = (rank // block) % 2 if block > 0 else 0
        work = 0.0 if jobs.sync[j] else jobs.n_iter[j] * compute_s(jobs, j, rank)
        cells.left[r, p] = work
        if work > 0.0:
            left += 1
        cells.load[p] += 1
        st.out.procs[j, p >> 6] |= np.uint64(1) << np.uint64(p & 63)
        rank += 1
    cells.row_free[r] -= need
    runs.row[j] = r
    runs.procs_left[j] = left
    runs.est_end[j] = t + jobs.estimate[j]
    runs.resident[st.ctr[N_RESIDENT]] = j
    st.ctr[N_RESIDENT] += 1
    st.out.start_s[j] = t
    st.queue.waiting[j] = False
    st.ctr[QUEUED_UNITS] -= need
    st.ctr[EPOCH] += 1


@kernel
def leave(st, jobs, j, t):
    """Job j completed at time t: free its cells and record its end and classes."""
    cells, runs = st.cells, st.runs
    r = runs.row[j]
    for p in range(cells.job.shape[1]):
        if cells.job[r, p] == j:
            cells.job[r, p] = -1
            cells.left[r, p] = 0.0
            cells.load[p] -= 1
        if cells.assigned[p] == j:
            cells.assigned[p] = -1
    cells.row_free[r] += jobs.size[j]
    resident = runs.resident
    n = st.ctr[N_RESIDENT]
    for i in range(n):
        if resident[i] == j:
            for k in range(i, n - 1):  # keep entry order: rates iterate residents in order
                resident[k] = resident[k + 1]
            break
    st.ctr[N_RESIDENT] = n - 1
    st.out.end_s[j] = t
    st.out.final_cls[j, 0] = runs.cls[j, 0]
    if jobs.block[j] > 0 and jobs.size[j] > jobs.block[j]:
        st.out.final_cls[j, 1] = runs.cls[j, 1]
    st.ctr[EPOCH] += 1


@kernel
def _lowest_free_row(st, j, r, first):
    """The lowest row below row r whose cells are empty on every processor of job j's
    processes (the first of them `first`), or -1."""
    job = st.cells.job
    for low in range(r):
        free = True
        for q in range(first, job.shape[1]):
            if job[r, q] == j and job[low, q] >= 0:
                free = False
        if free:
            return low
    return -1


@kernel
def _move(st, jobs, j, r, low, first):
    """Move job j's processes from row r to row `low`, each on its own processor."""
    cells = st.cells
    for q in range(first, cells.job.shape[1]):
        if cells.job[r, q] == j:
            cells.job[low, q] = j
            cells.rank[low, q] = cells.rank[r, q]
            cells.group[low, q] = cells.group[r, q]
            cells.left[low, q] = cells.left[r, q]
            cells.job[r, q] = -1
            cells.left[r, q] = 0.0
    cells.row_free[r] += jobs.size[j]
    cells.row_free[low] -= jobs.size[j]
    st.runs.row[j] = low


@kernel
def pack(st, jobs):
    """Row packing (gang, `matrix: alternate`), after completions: passes over rows 1, 2,
    ..., in a row over jobs by their first processor, move each job to the lowest row
    where the cells of all its processors are empty, until a pass moves none. Processes
    keep their processors, ranks, groups and work left."""
    job = st.cells.job
    rows, procs = job.shape
    moved = True
    while moved:
        moved = False
        for r in range(1, rows):
            for p in range(procs):
                j = job[r, p]
                if j < 0 or st.cells.rank[r, p] != 0:  # rank 0: the job's first processor
                    continue
                low = _lowest_free_row(st, j, r, p)
                if low >= 0:
                    _move(st, jobs, j, r, low, p)
                    moved = True
                    st.ctr[EPOCH] += 1


@kernel
def _reservation(st, jobs, head):
    """EASY's reservation for the blocked head: (time, row, extra cells of that row)."""
    runs, order, free = st.runs, st.scratch.order, st.scratch.free
    n = st.ctr[N_RESIDENT]
    for i in range(n):  # resident jobs by estimated end, ties by job (insertion sort)
        j = runs.resident[i]
        k = i
        while k > 0 and (runs.est_end[order[k - 1]] > runs.est_end[j] or (
                runs.est_end[order[k - 1]] == runs.est_end[j] and order[k - 1] > j)):
            order[k] = order[k - 1]
            k -= 1
        order[k] = j
    rows = free.shape[0]
    for r in range(rows):
        free[r] = st.cells.row_free[r]
    need = jobs.size[head]
    k = 0
    while k < n:
        when = runs.est_end[order[k]]
        while k < n and runs.est_end[order[k]] == when:
            free[runs.row[order[k]]] += jobs.size[order[k]]
            k += 1
        for r in range(rows):
            if free[r] >= need:
                return when, r, free[r] - need
    return np.inf, -1, 0


@kernel
def admit(pol, st, jobs, t):
    """One queue pass at time t (see the module docstring)."""
    ctr, queue, waiting = st.ctr, st.queue.jobs, st.queue.waiting
    ctr[DECISIONS] += 1
    i = 0
    while i < ctr[QLEN]:
        j = queue[i]
        r = first_row(st, jobs.size[j], -1)
        if r < 0:
            break
        enter(st, jobs, j, r, t)
        i += 1
    if pol.easy and i < ctr[QLEN]:
        shadow, reserved, extra = _reservation(st, jobs, queue[i])
        for k in range(i + 1, ctr[QLEN]):
            j = queue[k]
            size = jobs.size[j]
            if t + jobs.estimate[j] <= shadow:
                r = first_row(st, size, -1)
            else:
                r = first_row(st, size, reserved)
                if r < 0 and reserved >= 0 and size <= extra \
                        and st.cells.row_free[reserved] >= size:
                    r = reserved
                    extra -= size
            if r >= 0:
                enter(st, jobs, j, r, t)
    ctr[QLEN] = keep_waiting(queue, ctr[QLEN], waiting, 0)[0]
