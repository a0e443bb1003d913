"""A workload ready to simulate: per-job arrays in priority order, sizes in machine units."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.errors import SpecError
from simcore.jobs.swf import job_size

if TYPE_CHECKING:
    from simcore.jobs.bsp import BSPJobs


@dataclass(frozen=True, eq=False)
class Jobs:
    """Jobs sorted by (submit time, job id), the queue's priority order.

    `size` is the requested number of allocation units. `requested_s` is the requested
    (estimated) run time, -1 where unknown. Wired machines also need each job's `shape`
    (units along x, y, z) and whether it wants a `torus`; a shaped job asks for its
    shape's volume (`size`) and `requested_units` keeps what its trace asked for.
    `oversize_jobs` counts the jobs of the source that were larger than the machine and
    were dropped or clamped while preparing (see `WorkloadSpec.machine_fit`). `bsp`, when
    the workload has one, is each job's BSP model for time-sharing schedulers
    (`simcore.jobs.bsp`). The first `warmup_jobs` jobs are simulated but left out of
    the job statistics (a warm-up). On 2D meshes with submesh allocators `shape` is
    (w, h, 1). `priority_s`, where given, is each job's priority head start: a scheduler
    that orders its queue by priority (`priority-backfill`) ranks a job as if it had been
    submitted that much earlier (`rank`); the others ignore it.
    """

    job_id: np.ndarray
    submit_s: np.ndarray
    run_s: np.ndarray
    requested_s: np.ndarray
    size: np.ndarray
    shape: np.ndarray | None = None
    torus: np.ndarray | None = None
    requested_units: np.ndarray | None = None
    oversize_jobs: int = 0
    warmup_jobs: int = 0
    bsp: BSPJobs | None = None
    priority_s: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self.job_id.shape[0]
        for name in ("submit_s", "run_s", "requested_s", "size"):
            if getattr(self, name).shape != (n,):
                raise SpecError(f"jobs.{name}: expected {n} values")
        if (self.shape is None) != (self.torus is None):
            raise SpecError("jobs: shape and torus go together")
        if self.shape is not None and (self.shape.shape != (n, 3) or self.torus.shape != (n,)):
            raise SpecError(f"jobs.shape: expected ({n}, 3) and jobs.torus ({n},)")
        if self.requested_units is not None and self.requested_units.shape != (n,):
            raise SpecError(f"jobs.requested_units: expected {n} values")
        if self.priority_s is not None and (self.priority_s.shape != (n,) or not np.all(
                np.isfinite(self.priority_s))):
            raise SpecError(f"jobs.priority_s: expected {n} finite values")
        if n == 0:
            raise SpecError("jobs: empty workload; expected at least one job")
        if not 0 <= self.warmup_jobs < n:
            raise SpecError(f"warmup_jobs={self.warmup_jobs} with {n} jobs; expected fewer "
                            "warm-up jobs than jobs, so that some are measured")
        bad = np.flatnonzero(~np.isfinite(self.submit_s) | ~np.isfinite(self.run_s)
                             | (self.run_s < 0) | (self.size < 1))
        if bad.size:
            i = int(bad[0])
            raise SpecError(
                f"job {self.job_id[i]}: submit {self.submit_s[i]}, run {self.run_s[i]} s, "
                f"size {self.size[i]}; expected finite times, run >= 0 and size >= 1"
            )
        order = np.lexsort((self.job_id, self.submit_s))
        if (order != np.arange(n)).any():
            raise SpecError("jobs: not in (submit, job id) order; build them with Jobs.create")
        if self.bsp is not None:
            if len(self.bsp) != n:
                raise SpecError(f"jobs.bsp: expected the model of {n} jobs")
            self.bsp.check(self.job_id, self.size)

    @classmethod
    def create(cls, job_id, submit_s, run_s, requested_s, size, *, shape=None, torus=None,
               requested_units=None, oversize_jobs: int = 0, bsp=None,
               warmup_jobs: int = 0, priority_s=None) -> Jobs:
        """Jobs from arrays in any order (sorted here by submit time, then job id)."""
        job_id = np.asarray(job_id, dtype=np.int64)
        submit_s = np.asarray(submit_s, dtype=np.float64)
        if shape is not None and requested_units is None:
            requested_units = size  # a shaped job that says no more asked for its volume
        order = np.lexsort((job_id, submit_s))

        def pick(values, dtype):
            return None if values is None else np.asarray(values, dtype=dtype)[order]

        return cls(
            job_id[order], submit_s[order], pick(run_s, np.float64),
            pick(requested_s, np.float64), pick(size, np.int64), pick(shape, np.int64),
            pick(torus, np.bool_), pick(requested_units, np.int64), oversize_jobs,
            warmup_jobs, None if bsp is None else bsp.take(order),
            pick(priority_s, np.float64),
        )

    @classmethod
    def from_swf(cls, table: pa.Table, processors_per_unit: int = 1) -> Jobs:
        """Jobs of an SWF table: size = processors (allocated, else requested), rounded up to
        whole allocation units of `processors_per_unit` processors; the BSP model where the
        table carries one."""
        from simcore.jobs.bsp import BSPJobs

        procs = job_size(table)
        return cls.create(
            numpy_array(table.column("job_number")),
            numpy_array(table.column("submit_time")),
            numpy_array(table.column("run_time")),
            numpy_array(table.column("requested_time")),
            -(-procs // processors_per_unit),
            bsp=BSPJobs.from_table(table),
        )

    def select(self, keep: np.ndarray) -> Jobs:
        """The jobs where the boolean mask `keep` is true, in the same order."""
        def pick(values):
            return None if values is None else values[keep]

        return Jobs(self.job_id[keep], self.submit_s[keep], self.run_s[keep],
                    self.requested_s[keep], self.size[keep], pick(self.shape),
                    pick(self.torus), pick(self.requested_units), self.oversize_jobs,
                    warmup_jobs=int(keep[: self.warmup_jobs].sum()),  # the warm-up kept
                    priority_s=pick(self.priority_s))

    def __len__(self) -> int:
        return int(self.job_id.shape[0])

    def rank(self) -> np.ndarray:
        """Each job's place in a priority order: its submit time less its priority head
        start (the submit time where there is none)."""
        return self.submit_s if self.priority_s is None else self.submit_s - self.priority_s

    def estimates(self, kind: str) -> np.ndarray:
        """Run times as the scheduler believes them: `requested` (requested time where
        known, else the run time) or `actual`."""
        if kind == "actual":
            return self.run_s
        return np.where(self.requested_s > 0, self.requested_s, self.run_s)
