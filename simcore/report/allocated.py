"""Capacity utilized counted over the units each job was allocated, from per-job rows.

Our `utilization` (Krevat's eq. 4.1) counts each job's requested size s_j: units a job
holds beyond it, rounded up to a size that has a partition or grown to fit a free one,
are lost capacity. Krevat's thesis modifies impossible requests "to request the next
largest possible size", so its s_j may be the allocated size. `utilization_allocated`
is that other reading, derived per run in the report layer, with no run simulated again:

    utilization_allocated = sum over the run's jobs of alloc_size x run_s / (T x N),

T the run's `makespan_s` and N its machine's units. It needs the run's per-job rows
(`jobs.parquet`, an experiment with `per_job: true`), read lazily, three columns only. A
run's rows must give back its stored `utilization` from the requested sizes (so that
they are its rows, and its utilization is eq. 4.1: no BSP model, no failures); a run
without rows, or whose rows do not, is refused.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from simcore.base.errors import ConfigError
from simcore.machines.spec import MachineSpec

#: The metric this module derives, by name.
ALLOCATED = "utilization_allocated"
_TOLERANCE = 1e-9


def with_allocated_utilization(runs: pl.DataFrame,
                               jobs_files: Sequence[str | os.PathLike[str]]) -> pl.DataFrame:
    """`runs` with the column `utilization_allocated` (module docstring) for the runs
    that have per-job rows in `jobs_files`, null for the others."""
    work = pl.DataFrame(schema={"run_key": pl.String, "requested": pl.Float64,
                                "allocated": pl.Float64})
    if jobs_files:
        work = pl.scan_parquet([str(f) for f in jobs_files]).group_by("run_key").agg(
            (pl.col("size") * pl.col("run_s")).sum().cast(pl.Float64).alias("requested"),
            (pl.col("alloc_size") * pl.col("run_s")).sum().cast(pl.Float64).alias(
                "allocated")).collect()
    joined = runs.join(work, on="run_key", how="left")
    specs = joined.filter(pl.col("allocated").is_not_null())["machine_spec"].unique()
    units = {spec: float(MachineSpec.parse(spec.split()[0]).units) for spec in specs}
    capacity = pl.col("makespan_s") * pl.col("machine_spec").replace_strict(
        units, return_dtype=pl.Float64, default=None)
    joined = joined.with_columns((pl.col("requested") / capacity).alias("requested"),
                                 (pl.col("allocated") / capacity).alias(ALLOCATED))
    wrong = joined.filter((pl.col("requested") - pl.col("utilization")).abs() > _TOLERANCE)
    if wrong.height:
        row = wrong.row(0, named=True)
        raise ConfigError(f"{ALLOCATED}: run {row['run_key']} (experiment "
                          f"{row['experiment']}): its per-job rows give a utilization of "
                          f"{row['requested']:.6g} from the requested sizes, not its stored "
                          f"{row['utilization']:.6g}; expected the rows of a run whose "
                          "utilization is eq. 4.1 (no BSP model, no failures)")
    return joined.drop("requested", "allocated")


def check_allocated(selected: pl.DataFrame, metric: str) -> None:
    """Refuse a query reducing `utilization_allocated` over runs without per-job rows."""
    if metric != ALLOCATED:
        return
    bare = (selected.filter(pl.col(ALLOCATED).is_null()) if ALLOCATED in selected.columns
            else selected)
    if bare.height:
        raise ConfigError(f"query metric {ALLOCATED}: {bare.height} selected run(s) of "
                          f"experiment(s) {', '.join(sorted(set(bare['experiment'])))} have "
                          "no per-job rows; expected `per_job: true` in the experiment")
