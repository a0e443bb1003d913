"""Run metrics the report derives from the per-job rows a shard kept.

An experiment with `per_job: true` keeps each run's job rows (`jobs.parquet` beside
`summary.parquet`). `with_job_metrics` reads them, verified (`simcore.sweep.store.read_shard`),
and adds to each run's summary row (null for a run without job rows):

- `utilization_allocated`: capacity utilized counted over the units each job was
  allocated, sum(alloc_size x run_s) / (T x N), T the run's `makespan_s` and N its
  machine's units. Our `utilization` (Krevat's eq. 4.1) counts each job's requested size:
  units a job holds beyond it, rounded up to a size that has a partition or grown to fit a
  free one, are lost capacity. Krevat's thesis modifies impossible requests "to request the
  next largest possible size", so its sizes may be the allocated ones: this is that other
  reading. A query may reduce it only over runs whose rows give back their stored
  `utilization` from the requested sizes (their own rows, and eq. 4.1 holds: no BSP
  model, no failures; `check_job_metric`);
- `mean_response_s_short_half` and `mean_response_s_long_half`: the mean response of the
  half of a run's jobs with the shortest run times (the first n // 2, ties by job number)
  and of the others, as Frachtenberg et al.'s Figure 8 splits a run's jobs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from simcore.base.errors import ConfigError
from simcore.machines.spec import MachineSpec
from simcore.sweep.store import read_shard

ALLOCATED = "utilization_allocated"
#: The halves' columns, shorter half first.
HALVES = ("mean_response_s_short_half", "mean_response_s_long_half")
_REQUESTED = "utilization_of_job_rows"  # eq. 4.1 from the job rows: `check_job_metric`
_COLUMNS = ("run_key", "job_id", "size", "alloc_size", "run_s", "response_s")
_TOLERANCE = 1e-9


def with_job_metrics(runs: pl.DataFrame, store: str | os.PathLike[str] | None,
                     summaries: list[str] | None = None) -> pl.DataFrame:
    """`runs` (the summary rows of `store`, or of the shard files `summaries`) with the
    module's metrics from the job rows beside their summaries."""
    if summaries is not None:
        files: Iterable[str | Path] = summaries
    elif store is not None:
        files = Path(store).glob("**/summary.parquet")
    else:
        raise ConfigError("job metrics: give a store or its summary files")
    kept = [path for path in (Path(f).with_name("jobs.parquet") for f in files)
            if path.is_file()]
    per_run = pl.DataFrame(schema={"run_key": pl.String, "requested": pl.Float64,
                                   "allocated": pl.Float64, **{h: pl.Float64 for h in HALVES}})
    for path in sorted(kept):  # one shard's rows at a time: memory of the largest shard
        rows = pl.from_arrow(read_shard(path).select(list(_COLUMNS)))
        if isinstance(rows, pl.DataFrame) and rows.height:
            per_run = pl.concat([per_run, _per_run(rows)])
    joined = runs.join(per_run, on="run_key", how="left")
    specs = joined.filter(pl.col("allocated").is_not_null())["machine_spec"].unique()
    units = {spec: float(MachineSpec.parse(spec.split()[0]).units) for spec in specs}
    capacity = pl.col("makespan_s") * pl.col("machine_spec").replace_strict(
        units, return_dtype=pl.Float64, default=None)
    return joined.with_columns((pl.col("requested") / capacity).alias(_REQUESTED),
                               (pl.col("allocated") / capacity).alias(ALLOCATED)
                               ).drop("requested", "allocated")


def _per_run(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per run of job rows: the work over requested and over allocated units, and the
    halves' mean responses."""
    short = pl.int_range(pl.len()).over("run_key") < pl.len().over("run_key") // 2
    return jobs.sort("run_key", "run_s", "job_id").with_columns(short.alias("short")
                                                                 ).group_by("run_key").agg(
        (pl.col("size") * pl.col("run_s")).sum().cast(pl.Float64).alias("requested"),
        (pl.col("alloc_size") * pl.col("run_s")).sum().cast(pl.Float64).alias("allocated"),
        pl.col("response_s").filter(pl.col("short")).mean().alias(HALVES[0]),
        pl.col("response_s").filter(~pl.col("short")).mean().alias(HALVES[1]))


def check_job_metric(selected: pl.DataFrame, metric: str) -> None:
    """Refuse a query reducing one of the module's metrics over runs without job rows,
    or `utilization_allocated` over runs whose rows do not give back their utilization."""
    if metric not in (ALLOCATED, *HALVES):
        return
    bare = selected.filter(pl.col(metric).is_null()) if metric in selected.columns \
        else selected
    if bare.height:
        raise ConfigError(f"query metric {metric}: {bare.height} selected run(s) of "
                          f"experiment(s) {', '.join(sorted(set(bare['experiment'])))} have "
                          "no per-job rows; expected `per_job: true` in the experiment")
    if metric != ALLOCATED:
        return
    wrong = selected.filter((pl.col(_REQUESTED) - pl.col("utilization")).abs() > _TOLERANCE)
    if wrong.height:
        row = wrong.row(0, named=True)
        raise ConfigError(f"{ALLOCATED}: run {row['run_key']} (experiment "
                          f"{row['experiment']}): its per-job rows give a utilization of "
                          f"{row[_REQUESTED]:.6g} from the requested sizes, not its stored "
                          f"{row['utilization']:.6g}; expected the rows of a run whose "
                          "utilization is eq. 4.1 (no BSP model, no failures)")
