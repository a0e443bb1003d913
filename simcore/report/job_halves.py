"""The shorter and the longer half of a run's jobs, from the per-job rows a shard kept.

Frachtenberg et al.'s Figure 8 splits a run's jobs by run time in isolation into the
shorter and the longer half and compares their responses. A run whose experiment keeps
per-job rows (`per_job: true`, `jobs.parquet` beside `summary.parquet`) gets two columns
beside its summary: `mean_response_s_short_half`, the mean response of the half of its
jobs with the shortest run times (ties by job number), and `mean_response_s_long_half`,
of the other jobs; other runs leave them null. Queries read them as any summary column.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from simcore.sweep.store import read_shard

#: The columns `with_job_halves` adds, shorter half first.
HALVES = ("mean_response_s_short_half", "mean_response_s_long_half")


def job_halves(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per run (`run_key`) of per-job rows: the mean response of its shorter half of jobs
    by run time (the first n // 2) and of the others."""
    ranked = jobs.sort("run_key", "run_s", "job_id").with_columns(
        (pl.int_range(pl.len()).over("run_key") < pl.len().over("run_key") // 2)
        .alias("short"))
    return ranked.group_by("run_key").agg(
        pl.col("response_s").filter(pl.col("short")).mean().alias(HALVES[0]),
        pl.col("response_s").filter(~pl.col("short")).mean().alias(HALVES[1]))


def with_job_halves(runs: pl.DataFrame, store: str | os.PathLike[str] | None,
                    files: Sequence[str | os.PathLike[str]] | None = None) -> pl.DataFrame:
    """`runs` (summary rows of `store`, or of the shard `files`) with the `HALVES` columns
    from the per-job rows beside them, where their shards kept any."""
    summaries = Path(store).glob("**/summary.parquet") if files is None else files
    kept = [path for path in (Path(f).with_name("jobs.parquet") for f in summaries)
            if path.is_file()]
    tables = [pl.from_arrow(read_shard(path).select(["run_key", "job_id", "run_s",
                                                       "response_s"])) for path in kept]
    rows = [table for table in tables if isinstance(table, pl.DataFrame) and table.height]
    halves = (job_halves(pl.concat(rows)) if rows else pl.DataFrame(
        schema={"run_key": pl.String, **{h: pl.Float64 for h in HALVES}}))
    return runs.join(halves, on="run_key", how="left")
