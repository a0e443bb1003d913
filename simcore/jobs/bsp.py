"""The BSP job model: what a job computes and how it synchronises, as time-sharing needs it.

A job of `size` processes (one per processor) repeats an iteration: every process
computes, then the processes synchronise (Frachtenberg et al.'s synthetic application):

- `pattern`: `ring` (each process exchanges with its two neighbours), `barrier` (all of
  them) or `none` (the processes never synchronise: a coarse-grained workpile);
- compute per iteration: the ranks form blocks of `block` consecutive processes (a node
  of the paper's cluster); processes in even-numbered blocks compute `even_s`, those in
  odd-numbered blocks `odd_s` (`block` 0: every process computes `even_s`). Scenario 2's
  imbalanced job alternates 1 ms and 2.05 ms per node of four processes;
- `comm_s`: how long the synchronisation takes once every partner has arrived.

The job's run time (`Jobs.run_s`) is its isolated run time: on dedicated processors an
iteration takes the heaviest process's compute plus `comm_s`, so the job runs
run_s / iteration_s iterations (a real number: progress is integrated, not counted).
A `none` job's process of compute w works (run_s / heaviest) x w seconds in all. A job of
one process has no partner and never waits: it is treated as `none`.

The attributes travel with the workload as the columns `COLUMNS` of its job table (the
`fcs` scenarios carry them), or are drawn for each job by a named model (`MODELS`, the
workload transform `bsp_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.draws import STREAMS, job_uniforms
from simcore.base.errors import SpecError

PATTERNS = ("none", "ring", "barrier")
NONE, RING, BARRIER = range(3)
#: Job-table columns of the model, with their Arrow types.
COLUMNS = {"bsp_pattern": pa.int64(), "bsp_even_s": pa.float64(), "bsp_odd_s": pa.float64(),
           "bsp_block": pa.int64(), "bsp_comm_s": pa.float64()}


@dataclass(frozen=True, eq=False)
class BSPJobs:
    """The model's attributes of each job, in the order of the jobs they belong to."""

    pattern: np.ndarray  # int64: index into PATTERNS
    even_s: np.ndarray  # float64: compute per iteration of processes in even blocks
    odd_s: np.ndarray  # float64: ... in odd blocks
    block: np.ndarray  # int64: processes per block (0: balanced, every process even_s)
    comm_s: np.ndarray  # float64: synchronisation time once all partners are there

    def __post_init__(self) -> None:
        n = len(self.pattern)
        for name, dtype in (("pattern", np.int64), ("even_s", np.float64),
                            ("odd_s", np.float64), ("block", np.int64),
                            ("comm_s", np.float64)):
            values = np.asarray(getattr(self, name), dtype=dtype)
            if values.shape != (n,):
                raise SpecError(f"bsp.{name}: expected {n} values")
            object.__setattr__(self, name, values)

    def __len__(self) -> int:
        return int(self.pattern.shape[0])

    def take(self, index: np.ndarray) -> BSPJobs:
        """The attributes of the jobs `index` selects (a permutation or a mask)."""
        return BSPJobs(self.pattern[index], self.even_s[index], self.odd_s[index],
                       self.block[index], self.comm_s[index])

    def check(self, job_id: np.ndarray, size: np.ndarray) -> None:
        """Raise a SpecError naming the first job whose attributes are impossible."""
        bad = ((self.pattern < 0) | (self.pattern >= len(PATTERNS)) | (self.block < 0)
               | ~np.isfinite(self.even_s) | ~np.isfinite(self.odd_s)
               | ~np.isfinite(self.comm_s) | (self.even_s < 0) | (self.odd_s < 0)
               | (self.comm_s < 0) | ~(self.heaviest_s(size) > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise SpecError(
                f"job {job_id[i]}: BSP model pattern {self.pattern[i]}, compute "
                f"{self.even_s[i]} / {self.odd_s[i]} s per block of {self.block[i]}, "
                f"comm {self.comm_s[i]} s; expected a pattern 0..{len(PATTERNS) - 1} "
                f"({', '.join(PATTERNS)}), finite times >= 0, block >= 0 and some compute")

    def synchronising(self, size: np.ndarray) -> np.ndarray:
        """Whether each job's processes wait for each other (a pattern, and partners)."""
        return (self.pattern != NONE) & (size > 1)

    def heaviest_s(self, size: np.ndarray) -> np.ndarray:
        """Compute per iteration of each job's heaviest process (odd blocks exist only in
        jobs larger than one block)."""
        odd = (self.block > 0) & (size > self.block)
        return np.where(odd, np.maximum(self.even_s, self.odd_s), self.even_s)

    def iteration_s(self, size: np.ndarray) -> np.ndarray:
        """Isolated time of one iteration: the heaviest compute, plus the synchronisation."""
        return self.heaviest_s(size) + np.where(self.synchronising(size), self.comm_s, 0.0)

    def busy_s(self, size: np.ndarray, run_s: np.ndarray) -> np.ndarray:
        """Processor time each job's processes spend computing or synchronising in an
        isolated run: size x run_s less the time they wait for the heaviest process
        (equal to size x run_s for balanced jobs)."""
        odd_ranks = np.where(self.block > 0, (size // np.maximum(2 * self.block, 1))
                             * self.block + np.maximum(0, size % np.maximum(2 * self.block, 1)
                                                       - self.block), 0)
        compute = (size - odd_ranks) * self.even_s + odd_ranks * self.odd_s
        sync = np.where(self.synchronising(size), size * self.comm_s, 0.0)
        return run_s / self.iteration_s(size) * (compute + sync)

    def process_compute_s(self, j: int, size: int) -> np.ndarray:
        """Compute per iteration of each rank of job j."""
        ranks = np.arange(size)
        if self.block[j] == 0:
            return np.full(size, self.even_s[j])
        return np.where((ranks // self.block[j]) % 2 == 0, self.even_s[j], self.odd_s[j])

    def columns(self) -> dict[str, np.ndarray]:
        """The attributes as job-table columns (COLUMNS)."""
        return {"bsp_pattern": self.pattern, "bsp_even_s": self.even_s,
                "bsp_odd_s": self.odd_s, "bsp_block": self.block, "bsp_comm_s": self.comm_s}

    @classmethod
    def from_table(cls, table: pa.Table) -> BSPJobs | None:
        """The attributes a job table carries in its COLUMNS (all or none), else None."""
        present = [name for name in COLUMNS if name in table.column_names]
        if not present:
            return None
        if len(present) != len(COLUMNS):
            missing = sorted(set(COLUMNS) - set(present))
            raise SpecError(f"job table has BSP columns {present} but lacks {missing}; "
                            f"expected all of {list(COLUMNS)} or none")
        values = [numpy_array(table.column(name)) for name in COLUMNS]
        return cls(*values)


# The `random` model: documented in docs/timesharing.md.
RANDOM_PATTERN_P = (0.2, 0.4, 0.4)  # none, ring, barrier (jobs of one process: none)
RANDOM_GRANULARITY_S = (1e-3, 1.0)  # compute per iteration, log-uniform between these
RANDOM_IMBALANCED_P = 0.5  # otherwise balanced
RANDOM_BLOCK = 2  # processes per node of the dynamic study's cluster (32 processors, 16 nodes)
RANDOM_HEAVY = 2.0  # odd blocks of an imbalanced job compute this many times as long
RANDOM_COMM_S = 50e-6  # a ring exchange; a barrier takes this x ceil(log2 size)
PATTERN_STREAM, GRANULARITY_STREAM, IMBALANCE_STREAM = (
    STREAMS["bsp_pattern"], STREAMS["bsp_granularity"], STREAMS["bsp_imbalance"])


def draw_random(job_ids: np.ndarray, size: np.ndarray, seed: int,
                granularity_s: tuple[float, float] = RANDOM_GRANULARITY_S) -> BSPJobs:
    """The `random` model: each job's pattern, granularity and imbalance drawn from the
    distributions above, counter-based per job id (a job's draw does not depend on the
    others, as with shapes); compute per iteration log-uniform over `granularity_s`
    (low, high)."""
    u_pattern = job_uniforms(seed, PATTERN_STREAM, job_ids)
    cumulative = np.cumsum(RANDOM_PATTERN_P)
    pattern = np.minimum(np.searchsorted(cumulative, u_pattern, side="right"), BARRIER)
    pattern = np.where(size > 1, pattern, NONE)
    low, high = np.log(granularity_s[0]), np.log(granularity_s[1])
    compute = np.exp(low + (high - low) * job_uniforms(seed, GRANULARITY_STREAM, job_ids))
    imbalanced = job_uniforms(seed, IMBALANCE_STREAM, job_ids) < RANDOM_IMBALANCED_P
    stages = np.ceil(np.log2(np.maximum(size, 2)))
    comm = np.select([pattern == RING, pattern == BARRIER], [RANDOM_COMM_S,
                                                             RANDOM_COMM_S * stages], 0.0)
    return BSPJobs(pattern, compute, np.where(imbalanced, RANDOM_HEAVY * compute, compute),
                   np.where(imbalanced, RANDOM_BLOCK, 0), comm)


#: Named models of the workload transform `bsp_model`: (job ids, sizes, seed, granularity
#: range) to the jobs' attributes.
MODELS: dict[str, Callable[[np.ndarray, np.ndarray, int, tuple[float, float]], BSPJobs]] = {
    "random": draw_random}
