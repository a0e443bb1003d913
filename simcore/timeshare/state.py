"""State of a time-sharing simulation, as flat preallocated arrays (see `simcore.core.state`).

- `cells`: the Ousterhout matrix, `mpl` rows by P processors: which job's process holds
  each cell, its rank and block parity ("group"), and the work left of processes that never
  synchronise; per row its free cells, per processor its resident processes and the
  process its last global context switch gave it;
- `runs`: per job: its row, progress (iterations done), what FCS measures (iterations and
  time spent progressing, both cumulative), its assigned slots, and per group (the
  processes of even and of odd blocks, which compute alike and so are classified alike)
  FCS's class, slots in the class and the measurements at the class's start;
- `queue`: waiting jobs in priority order;
- `cache`: job rates and cell shares while each row is active (row `mpl`: spin-block,
  which has no rows), valid for one epoch of the configuration;
- `scratch`: buffers of one computation; `out`: per-job results.

Scalar counters sit in `ctr` (int64) and `acc` (float64) at the indices named below, after
those every engine's state shares (`simcore.core.state`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.base.bitset import n_words
from simcore.core.state import SHARED_ACC, SHARED_CTR, Queue

# ctr and acc indices after the shared ones of `simcore.core.state`: QLEN, QUEUED_UNITS
# (processes of waiting jobs), EPOCH (bumped whenever residents, rows or classes change:
# rates must be recomputed), DECISIONS (queue passes), STATUS (STATUS_STUCK: resident jobs
# can make no progress and nothing arrives), UNUSED_AREA (integral of max(0, empty
# processors - processes of waiting jobs) dt)
N_RESIDENT = SHARED_CTR  # jobs in the matrix
ACTIVE = SHARED_CTR + 1  # the row whose slice runs (-1: none yet; spin-block: always -1)
SLICES = SHARED_CTR + 2  # time slices run (gang, FCS)
SWITCHES = SHARED_CTR + 3  # processors that paid a global context switch
STEADY = SHARED_CTR + 4  # 1: the current slice switched as every later visit of its row will
SLICE_EPOCH = SHARED_CTR + 5  # the epoch when the current slice started
N_CTR = SHARED_CTR + 6

SLICE_END = SHARED_ACC  # end of the current slice (inf: none running)
N_ACC = SHARED_ACC + 1


class Cells(NamedTuple):
    job: np.ndarray  # (rows, P) int64: job whose process holds the cell, -1 empty
    rank: np.ndarray  # (rows, P) int64: the process's rank in its job
    group: np.ndarray  # (rows, P) int64: 0 even block, 1 odd block
    left: np.ndarray  # (rows, P) float64: CPU seconds left (processes that never wait)
    row_free: np.ndarray  # (rows,) int64
    load: np.ndarray  # (P,) int64: resident processes per processor
    assigned: np.ndarray  # (P,) int64: slice mode given at this slice's start (rates.py)
    switched: np.ndarray  # (P,) bool: paid the global context switch this slice


class Runs(NamedTuple):
    row: np.ndarray  # (jobs,) int64
    done: np.ndarray  # (jobs,) float64: iterations done (synchronising jobs)
    procs_left: np.ndarray  # (jobs,) int64: processes with work left (jobs that never wait)
    iters: np.ndarray  # (jobs,) float64: iterations done, the measure FCS counts
    busy: np.ndarray  # (jobs,) float64: time spent progressing
    tslots: np.ndarray  # (jobs,) int64: assigned time slots since the start
    cls: np.ndarray  # (jobs, 2) int64: FCS class per group
    cslots: np.ndarray  # (jobs, 2) int64: assigned slots in the current class
    reset_iters: np.ndarray  # (jobs, 2) float64: `iters` when the class began
    reset_busy: np.ndarray  # (jobs, 2) float64: `busy` when the class began
    est_end: np.ndarray  # (jobs,) float64: start + estimate x mpl (EASY)
    resident: np.ndarray  # (rows x P,) int64: jobs in the matrix, first ctr[N_RESIDENT]


class Cache(NamedTuple):
    epoch: np.ndarray  # (rows + 1,) int64: epoch of the row's entry (-1: none)
    rate: np.ndarray  # (rows + 1, jobs) float64: iterations/s of synchronising jobs
    share: np.ndarray  # (rows + 1, rows, P) float64: CPU share of each non-waiting process


class Scratch(NamedTuple):
    role: np.ndarray  # (rows, P) int64: how each process runs in the phase (rates.py)
    rate: np.ndarray  # (jobs,) float64: rates being iterated
    fresh: np.ndarray  # (jobs,) float64: their next iterate
    moved: np.ndarray  # (jobs,) bool: the last iterate changed the job's rate
    cap: np.ndarray  # (rows, P) float64: the rate each process allows its job
    dirty: np.ndarray  # (P,) bool: caps to recompute (a hosted job's rate moved)
    cpu: np.ndarray  # (rows, P) float64: CPU each process uses per iteration when shared
    burst: np.ndarray  # (rows, P) float64: how long it holds the processor once it has it
    delay: np.ndarray  # (rows, P) float64: mean wake-up delay of each shared process
    bound: np.ndarray  # (rows,) float64: a tier's finite demands (sorted)
    order: np.ndarray  # (rows x P,) int64: resident jobs by estimated end
    free: np.ndarray  # (rows,) int64: free cells per row at some future time
    rows: np.ndarray  # (rows,) int64: the rotation: non-empty rows from the active one
    d_iters: np.ndarray  # (jobs,) float64: iterations per rotation
    d_busy: np.ndarray  # (jobs,) float64: time progressing per rotation
    part_iters: np.ndarray  # (jobs,) float64: iterations until the end of the job's slot
    part_busy: np.ndarray  # (jobs,) float64
    d_left: np.ndarray  # (rows, P) float64: work done per rotation
    taken: np.ndarray  # (P,) bool: processors chosen for a job
    modes: np.ndarray  # (rows, P) int64: what each processor runs while a row is active


class Outputs(NamedTuple):
    start_s: np.ndarray  # (jobs,) float64: entered the matrix
    end_s: np.ndarray  # (jobs,) float64
    final_cls: np.ndarray  # (jobs, 2) int64: FCS class per group at the end (-1: no group)
    procs: np.ndarray  # (jobs, words) uint64: the processors the job's processes held


class State(NamedTuple):
    cells: Cells
    runs: Runs
    queue: Queue
    cache: Cache
    scratch: Scratch
    out: Outputs
    ctr: np.ndarray
    acc: np.ndarray


def new_state(n_jobs: int, rows: int, processors: int) -> State:
    """Fresh state: an empty matrix of `rows` x `processors` cells for `n_jobs` jobs."""
    ctr = np.zeros(N_CTR, dtype=np.int64)
    ctr[ACTIVE] = -1
    acc = np.zeros(N_ACC)
    acc[SLICE_END] = np.inf
    cells = (rows, processors)
    return State(
        cells=Cells(np.full(cells, -1, dtype=np.int64), np.zeros(cells, dtype=np.int64),
                    np.zeros(cells, dtype=np.int64), np.zeros(cells),
                    np.full(rows, processors, dtype=np.int64),
                    np.zeros(processors, dtype=np.int64),
                    np.full(processors, -1, dtype=np.int64),
                    np.zeros(processors, dtype=np.bool_)),
        runs=Runs(np.full(n_jobs, -1, dtype=np.int64), np.zeros(n_jobs),
                  np.zeros(n_jobs, dtype=np.int64), np.zeros(n_jobs), np.zeros(n_jobs),
                  np.zeros(n_jobs, dtype=np.int64), np.zeros((n_jobs, 2), dtype=np.int64),
                  np.zeros((n_jobs, 2), dtype=np.int64), np.zeros((n_jobs, 2)),
                  np.zeros((n_jobs, 2)), np.zeros(n_jobs),
                  np.zeros(rows * processors, dtype=np.int64)),
        queue=Queue(np.zeros(n_jobs, dtype=np.int64), np.zeros(n_jobs, dtype=np.bool_)),
        cache=Cache(np.full(rows + 1, -1, dtype=np.int64), np.zeros((rows + 1, n_jobs)),
                    np.zeros((rows + 1, rows, processors))),
        scratch=Scratch(np.zeros(cells, dtype=np.int64), np.zeros(n_jobs), np.zeros(n_jobs),
                        np.zeros(n_jobs, dtype=np.bool_), np.zeros(cells),
                        np.zeros(processors, dtype=np.bool_),
                        np.zeros(cells), np.zeros(cells), np.zeros(cells), np.zeros(rows),
                        np.zeros(rows * processors, dtype=np.int64),
                        np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64),
                        np.zeros(n_jobs), np.zeros(n_jobs), np.zeros(n_jobs), np.zeros(n_jobs),
                        np.zeros(cells), np.zeros(processors, dtype=np.bool_),
                        np.full(cells, -1, dtype=np.int64)),
        out=Outputs(np.full(n_jobs, np.nan), np.full(n_jobs, np.nan),
                    np.full((n_jobs, 2), -1, dtype=np.int64),
                    np.zeros((n_jobs, n_words(processors)), dtype=np.uint64)),
        ctr=ctr,
        acc=acc,
    )
