"""The result store: a content-addressed run cache and hive-partitioned shard files.

Layout under the store root (`results/` in the workflow):

    cache/runs/<k0k1>/<key>.parquet         one summary row of one run, keyed by its run key
    cache/runs/<k0k1>/<key>.jobs.parquet    its per-job rows, when the experiment keeps them
    store/experiment=E/workload=W/machine=M/policy=P/summary.parquet   one row per run
    store/.../jobs.parquet                                              per-job rows (optional)

Every file is zstd Parquet written atomically, so a reader never sees half a file and an
interrupted sweep leaves only whole cache entries behind. The partition columns
(experiment, workload, machine, policy) live in the directory names only; read the store
with `read_summaries`, which restores them with explicit types. Every file carries schema
metadata: `result_schema_version`, `simcore_version` and, for shard files, the resolved
shard specification.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from simcore.atomic import atomic_path
from simcore.errors import SimcoreError
from simcore.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.workload.transforms import WorkloadSpec, offered_load

RESULT_SCHEMA_VERSION = 1
PARTITIONS = ("experiment", "workload", "machine", "policy")

#: One row per simulation. Transform and policy parameters that do not apply are null.
SUMMARY_SCHEMA = pa.schema([
    ("run_key", pa.string()),
    ("machine_spec", pa.string()),  # e.g. torus:4x4x8
    ("scheduler", pa.string()),  # fcfs | backfill | migration | bm
    ("seed", pa.int64()),
    # workload transforms
    ("skip_jobs", pa.int64()),
    ("first_jobs", pa.int64()),
    ("processors_per_unit", pa.int64()),
    ("runtime_scale", pa.float64()),
    ("offered_load", pa.float64()),  # the requested target (null: arrivals not rescaled)
    ("p_fat", pa.float64()),
    ("p_torus", pa.float64()),
    ("oversize", pa.string()),  # reject | drop | clamp: jobs larger than the machine
    # policy parameters
    ("start_delay_s", pa.float64()),
    ("reservation", pa.bool_()),
    ("max_growth", pa.int64()),
    ("estimates", pa.string()),
    ("fn_tor", pa.float64()),
    ("fn_max", pa.float64()),
    # results
    ("jobs", pa.int64()),
    ("oversize_jobs", pa.int64()),  # of the span, dropped or clamped to the machine
    ("offered_load_actual", pa.float64()),  # sum(size x run) / (units x arrival span)
    ("utilization", pa.float64()),
    ("unused", pa.float64()),
    ("lost", pa.float64()),
    ("mean_wait_s", pa.float64()),
    ("median_wait_s", pa.float64()),
    ("p95_wait_s", pa.float64()),
    ("mean_bsld", pa.float64()),
    ("median_bsld", pa.float64()),
    ("p95_bsld", pa.float64()),
    ("mean_response_s", pa.float64()),
    ("makespan_s", pa.float64()),
    ("rounded_jobs", pa.int64()),  # sizes no partition has, rounded up at arrival
    ("grown_jobs", pa.int64()),  # grown beyond that to be placed
    ("migrations_attempted", pa.int64()),
    ("migrations_successful", pa.int64()),
    ("mean_time_between_migrations_s", pa.float64()),
    ("decisions", pa.int64()),
    ("blocked_no_box", pa.int64()),
    ("blocked_links", pa.int64()),
    ("cable_utilization", pa.float64()),
])

#: Per-job rows of a run (experiments with `per_job: true`).
JOBS_SCHEMA = pa.schema([
    ("run_key", pa.string()),
    ("job_id", pa.int64()),
    ("submit_s", pa.float64()),
    ("sched_s", pa.float64()),
    ("start_s", pa.float64()),
    ("end_s", pa.float64()),
    ("run_s", pa.float64()),
    ("estimate_s", pa.float64()),
    ("wait_s", pa.float64()),
    ("response_s", pa.float64()),
    ("bsld", pa.float64()),
    ("size", pa.int64()),
    ("alloc_size", pa.int64()),
    ("reserved_s", pa.float64()),
    # wired machines: the trace's request, the synthesized shape (its sides in the order of
    # the machine's sides sorted ascending; placement tries every rotation) and topology
    ("requested_units", pa.int64()),
    ("shape_a", pa.int64()),
    ("shape_b", pa.int64()),
    ("shape_c", pa.int64()),
    ("torus", pa.bool_()),
])


def _metadata(extra: Mapping[str, object] | None = None) -> dict[bytes, bytes]:
    from simcore import __version__

    meta = {b"result_schema_version": str(RESULT_SCHEMA_VERSION).encode(),
            b"simcore_version": __version__.encode()}
    for key, value in (extra or {}).items():
        meta[key.encode()] = (value if isinstance(value, str) else json.dumps(value)).encode()
    return meta


def write_table(table: pa.Table, path: str | os.PathLike[str],
                metadata: Mapping[str, object] | None = None) -> None:
    """Write zstd Parquet atomically with the store's metadata."""
    table = table.replace_schema_metadata(_metadata(metadata))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def cache_path(root: str | os.PathLike[str], key: str, per_job: bool = False) -> Path:
    """Where the run cache keeps run `key`."""
    return Path(root) / "cache" / "runs" / key[:2] / f"{key}{'.jobs' if per_job else ''}.parquet"


def shard_dir(root: str | os.PathLike[str], names: Mapping[str, str]) -> Path:
    """The hive directory of one shard: store/experiment=E/workload=W/machine=M/policy=P."""
    return Path(root) / "store" / Path(*(f"{p}={names[p]}" for p in PARTITIONS))


def read_summaries(root: str | os.PathLike[str],
                   files: Sequence[str | os.PathLike[str]] | None = None) -> pl.DataFrame:
    """Summary rows, with the partition columns as strings: of the given shard `files`
    (a configuration's shards), or of every shard under `root`/store."""
    if files is None:
        files = (Path(root) / "store").glob("**/summary.parquet")
    files = sorted(str(f) for f in files)
    if not files:
        empty = pl.from_arrow(SUMMARY_SCHEMA.empty_table())
        return pl.DataFrame(schema={p: pl.String for p in PARTITIONS}).hstack(empty)
    return pl.read_parquet(files, hive_partitioning=True,
                           hive_schema={p: pl.String for p in PARTITIONS})


def jobs_table(schedule: pa.Table, run_key: str) -> pa.Table:
    """A run's per-job schedule as rows of JOBS_SCHEMA (columns it lacks become null)."""
    n = schedule.num_rows
    columns = [pa.array([run_key] * n, pa.string()) if f.name == "run_key"
               else schedule.column(f.name).cast(f.type) if f.name in schedule.column_names
               else pa.nulls(n, f.type) for f in JOBS_SCHEMA]
    return pa.Table.from_arrays(columns, schema=JOBS_SCHEMA)


POLICY_COLUMNS = ("start_delay_s", "reservation", "max_growth", "estimates", "fn_tor", "fn_max")


def run_row(key: str, machine: MachineSpec, policy: PolicySpec, transforms: WorkloadSpec,
            seed: int, jobs: Jobs, summary: Mapping[str, object]) -> dict[str, object]:
    """The summary row of one run: identity, parameters (null where they do not apply) and
    results (NaN, undefined, as null)."""
    try:
        load = offered_load(jobs.size, jobs.run_s, jobs.submit_s, machine.units)
    except SimcoreError:  # a single arrival time: no span to load
        load = None
    params = policy.params()
    return {
        **{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in summary.items()},
        **asdict(transforms),
        **{k: params.get(k) for k in POLICY_COLUMNS},
        "run_key": key,
        "machine_spec": str(machine),
        "scheduler": policy.scheduler,
        "seed": seed,
        "offered_load_actual": load,
        "oversize_jobs": jobs.oversize_jobs,
    }


def summary_table(rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """Rows (dicts) as a table of SUMMARY_SCHEMA; missing keys become null."""
    return pa.Table.from_pylist([{f.name: row.get(f.name) for f in SUMMARY_SCHEMA}
                                 for row in rows], schema=SUMMARY_SCHEMA)
