"""The result store: the run cache's files and hive-partitioned shard files.

Paths are those of `simcore.base.patterns` under a results root (`results/` in the workflow):
the run cache (`simcore.sweep.cache`: parts of batches of runs, shared by every dataset),
and per dataset one directory per shard (experiment=E/workload=W/machine=M/policy=P)
holding `summary.parquet` (one row per run) and `jobs.parquet` (per-job rows, when the
experiment keeps them).

Every file is zstd Parquet written atomically, so a reader never sees half a file and an
interrupted sweep leaves only whole files behind. The partition columns
(experiment, workload, machine, policy) live in the directory names only; read the store
with `read_summaries`, which restores them with explicit types. Every file carries schema
metadata: `result_schema_version`, `simcore_version`, the checksum of its content, the
checksum of its metadata (`sealed`) and, for shard files, the resolved shard
specification, which must name the shard its directory names (`read_shard`) and, in the
workflow, be the one the configuration plans for it (`damaged_shards`). The metadata's
checksum lives here, not in `simcore.base.checksums`: that module is part of every run's
code (`simcore.sweep.identity`), and the run cache's keys must not change with the store.

The columns are defined once: the run's identity, the workload transforms
(`WorkloadSpec`), every scheduler parameter (`simcore.policy`) and the run metrics
(`simcore.core.columns.RUN_METRICS`); `jobs.parquet` follows `simcore.core.columns.JOB_COLUMNS`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from simcore.base import patterns
from simcore.base.atomic import atomic_path, atomic_write_bytes
from simcore.base.checksums import file_digest, recorded_digest, table_digest, with_digest
from simcore.base.errors import IntegrityError, SimcoreError, SpecError
from simcore.base.regular import open_regular
from simcore.core.columns import JOB_COLUMNS, RUN_METRICS, Column
from simcore.jobs.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec, all_parameters
from simcore.workload.spec import ALIASES, WorkloadSpec, transforms
from simcore.workload.transforms import offered_load

if TYPE_CHECKING:
    import polars as pl

RESULT_SCHEMA_VERSION = 6  # 4: time-sharing columns; 5: failed capacity and goodput;
# 6: each job's placements
PARTITIONS = ("experiment", "workload", "machine", "policy")
#: Schema metadata key of the digest of a store file's metadata, its content digest among
#: it (`sealed_digest`): what the metadata says of the rows is not rewritten apart from them.
SEAL_KEY = b"sealed_sha256"
_ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_(),
          list: pa.list_(pa.int64()), list[float]: pa.list_(pa.float64())}

#: What identifies a run besides its parameters.
IDENTITY = (
    Column("run_key", str, None, "sha256 of everything that determines the run's result"),
    Column("machine_spec", str, None, "the machine, e.g. torus:4x4x8 (with its allocator "
           "where it is not the kind's default)"),
    Column("scheduler", str, None, "the scheduler of the run's policy"),
    Column("seed", int, None, "seed of the run's random draws (0 where nothing is random)"),
)
#: Workload transforms and policy parameters, as columns (null where they do not apply).
PARAMETERS = tuple(
    Column(p.name, p.type, p.unit, p.meaning) for p in (
        *(f.metadata["parameter"] for f in transforms().values()),
        *all_parameters().values()))
POLICY_COLUMNS = tuple(all_parameters())

SUMMARY_SCHEMA = pa.schema([(c.name, _ARROW[c.type]) for c in (*IDENTITY, *PARAMETERS,
                                                                  *RUN_METRICS)])
JOBS_SCHEMA = pa.schema([("run_key", pa.string()),
                         *((c.name, _ARROW[c.type]) for c in JOB_COLUMNS)])


def _metadata(extra: Mapping[str, object] | None = None) -> dict[bytes, bytes]:
    from simcore import __version__

    meta = {b"result_schema_version": str(RESULT_SCHEMA_VERSION).encode(),
            b"simcore_version": __version__.encode()}
    for key, value in (extra or {}).items():
        meta[key.encode()] = (value if isinstance(value, str) else json.dumps(value)).encode()
    return meta


def sealed_digest(table: pa.Table) -> str:
    """Hex sha256 of every schema metadata entry of a table but SEAL_KEY: with the content
    digest among them, it covers the rows and all the metadata says of them."""
    return metadata_seal(table.schema.metadata or {})


def metadata_seal(metadata: Mapping[bytes, bytes]) -> str:
    """`sealed_digest` of a table with this schema metadata (read without its rows)."""
    digest = hashlib.sha256()
    for key, value in sorted(metadata.items()):
        if key != SEAL_KEY:
            digest.update(b"%d\0%b%d\0%b" % (len(key), key, len(value), value))
    return digest.hexdigest()


def sealed(table: pa.Table) -> pa.Table:
    """`table` with its content digest and then its sealed digest in its schema metadata."""
    table = with_digest(table)
    return table.replace_schema_metadata(
        {**table.schema.metadata, SEAL_KEY: sealed_digest(table).encode()})


def digest_problem(table: pa.Table, seal_required: bool = False) -> str | None:
    """What in `table` does not match the digests its metadata records: its content, or
    its metadata where it records a sealed digest (or must: `seal_required`); None if
    nothing. A checksum finds damage and edits, not a forger who computes it again."""
    recorded = recorded_digest(table)
    if recorded is None:
        return "no checksum of its content in its metadata"
    if recorded != table_digest(table):
        return "content does not match its checksum"
    seal = (table.schema.metadata or {}).get(SEAL_KEY)
    if seal is None:
        return ("no checksum of its metadata (a file of an older simcore)" if seal_required
                else None)
    if seal.decode() != sealed_digest(table):
        return "metadata does not match its checksum"
    return None


def write_table(table: pa.Table, path: str | os.PathLike[str],
                metadata: Mapping[str, object] | None = None) -> None:
    """Write zstd Parquet atomically with the store's metadata and the checksums of the
    table's content and of its metadata (`sealed`). A shard file
    (`metadata` has `shard`) gets its stat stamp recorded beside it, so `damaged_shards`
    need not read it until it changes."""
    table = sealed(table.replace_schema_metadata(_metadata(metadata)))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    if metadata is not None and "shard" in metadata:
        _record_stamp(path, table.schema.metadata[b"shard"])


def read_verified(path: str | os.PathLike[str], schema: pa.Schema | None = None,
                  run_key: str | None = None) -> pa.Table:
    """A file written by `write_table`, checked before it is trusted: readable Parquet,
    content and metadata matching their checksums (a file written before the store
    recorded the metadata's has only the content's), the expected schema (if given) and,
    for a run-cache entry, written for `run_key` and holding only that key's rows.
    FileNotFoundError if it is missing; IntegrityError (naming the file and the problem)
    otherwise."""
    table = _parquet(path)
    problem = digest_problem(table)
    if problem is not None:
        raise IntegrityError(f"{path}: {problem}")
    meta = table.schema.metadata or {}
    if run_key is not None:
        written_for = meta.get(b"run_key", b"").decode()
        if written_for != run_key or (table.num_rows and set(
                table.column("run_key").unique().to_pylist()) != {run_key}):
            raise IntegrityError(f"{path}: holds run {written_for or 'of no key'}, expected "
                                 f"{run_key}")
    return table if schema is None else conformed(table, schema, path)


def _parquet(path: str | os.PathLike[str]) -> pa.Table:
    """The table of a Parquet file: FileNotFoundError if it is missing, IntegrityError if
    it cannot be read."""
    try:
        with open_regular(path) as handle:
            return pq.ParquetFile(handle).read()  # pq.read_table would import pandas
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise IntegrityError(f"{path}: unreadable ({' '.join(str(exc).split())})") from None


def conformed(table: pa.Table, schema: pa.Schema, path: str | os.PathLike[str]) -> pa.Table:
    """`table` with the columns of `schema`. A table written before the store gained
    columns (every column it has is one of the schema's, of the same type, in the same
    order) gets the new ones as nulls: a new run metric or parameter re-simulates nothing
    (`simcore resimulate` fills them in); a column of a renamed transform (RENAMED) is
    read under its current name, so results stored before the rename stay cached. Any
    other difference is an IntegrityError."""
    current = [ALIASES.get(name, name) for name in table.column_names]
    if current != table.column_names:
        table = table.rename_columns(current).replace_schema_metadata(table.schema.metadata)
    have = table.schema.remove_metadata()
    if have.equals(schema):
        return table
    names = [f.name for f in have]
    order = [schema.get_field_index(name) for name in names]
    if -1 in order or order != sorted(order) or any(
            not schema.field(name).type.equals(have.field(name).type) for name in names):
        raise IntegrityError(f"{path}: columns are not those of this simcore version's store")
    columns = [table.column(f.name) if f.name in names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    meta = table.schema.metadata
    return pa.Table.from_arrays(
        columns, schema=schema if meta is None else schema.with_metadata(meta))


#: The schema of each file of a shard directory.
SHARD_FILES = {"summary.parquet": SUMMARY_SCHEMA, "jobs.parquet": JOBS_SCHEMA}
REBUILD = ("remove it and run snakemake again: the shard is rebuilt from the run cache, "
           "simulating only runs the cache lacks")


def read_shard(path: str | os.PathLike[str]) -> pa.Table:
    """A shard file (`summary.parquet` or `jobs.parquet`) that `shard_problem` finds
    nothing wrong with, with the columns of its kind (`conformed`). Every command reading
    shard files reads them here. FileNotFoundError if it is missing; otherwise an
    IntegrityError naming the file, the problem and how to repair it."""
    path = Path(path)
    try:
        table = _parquet(path)
        problem = shard_problem(table, path)
        if problem is not None:
            raise IntegrityError(f"{path}: {problem}")
        schema = SHARD_FILES.get(path.name)
        return table if schema is None else conformed(table, schema, path)
    except IntegrityError as exc:
        raise IntegrityError(f"{exc}; {REBUILD}") from None


def shard_problem(table: pa.Table, place: PurePath) -> str | None:
    """What is wrong with a shard file's `table` read at `place` (None if nothing): content
    or metadata not matching their checksums (the shard specification is metadata), no
    checksum of its metadata, or a specification of another shard than its place names."""
    return digest_problem(table, seal_required=True) or misplaced(
        place, table.schema.metadata or {})


def misplaced(path: PurePath, metadata: Mapping[bytes, bytes]) -> str | None:
    """What in the specification a shard file records differs from its place `path`
    (hive directories, and the dataset directory above `store/` where there is one), or
    None."""
    try:
        spec = json.loads(metadata[b"shard"])
        written = {key: spec[key] for key in ("dataset", *PARTITIONS)}
    except (KeyError, TypeError, ValueError):
        return "no shard specification in its metadata, so not a shard file written by simcore"
    place = dict(part.split("=", 1) for part in path.parent.parts[-4:] if "=" in part)
    if len(path.parents) > 5 and path.parents[4].name == "store" and path.parents[5].name:
        place["dataset"] = path.parents[5].name
    differ = [f"{key} {written[key]!r} (its place: {value!r})" for key, value in place.items()
              if written[key] != value]
    if differ:
        return f"written for another shard: {', '.join(differ)}"
    return None


def damaged_shards(planned: Mapping[str, str]) -> dict[str, str]:
    """The existing shard files of `planned` (path -> the specification the configuration
    plans for its shard, `Shard.to_json`) that `read_shard` refuses or that were written
    for another specification (an earlier configuration's, say, restored from a backup),
    each with its problem (without the repair, REBUILD; missing files are not damaged:
    the workflow makes them).

    Reading a file whole is the only full check, so a file is read only when its stat
    stamp (size, inode, modification and change time) or the digest of the planned
    specification differs from those recorded beside it (`.<name>.checked`) when it was
    written or last passed. Any write changes the stamp: a copy, truncation or edit gets a
    new change time even when the modification time is set back, and no user can set a
    change time. The record also holds the sha256 of the bytes written, so a change the
    decoded table does not show (a byte of the statistics readers filter on, say) is
    refused too."""
    damaged = {}
    for name, specification in planned.items():
        try:
            stamp = _stamp(name)
        except FileNotFoundError:
            continue
        recorded = _recorded(name)
        wanted = hashlib.sha256(specification.encode()).hexdigest()
        if recorded.get("stat") == stamp and recorded.get("shard") == wanted:
            continue
        try:
            table = read_shard(name)
        except FileNotFoundError:
            continue
        except IntegrityError as exc:
            damaged[name] = str(exc).removesuffix(f"; {REBUILD}")
            continue
        written = json.loads((table.schema.metadata or {})[b"shard"])  # read_shard checked
        if written != json.loads(specification):
            damaged[name] = (f"{name}: written for another specification of its shard than "
                             f"the configuration's: {_differences(written, specification)}")
            continue
        sha256 = recorded.get("sha256")
        if sha256 is not None and file_digest(name) != sha256:
            damaged[name] = f"{name}: its bytes differ from those simcore wrote"
            continue
        _record_stamp(name, specification.encode(), sha256)
    return damaged


def _differences(written: object, planned: str) -> str:
    """The first values in which a shard specification (decoded) differs from the planned
    one (JSON), each as `key written (the configuration's: planned)`, keys dotted into
    mappings and lists."""
    found: list[str] = []

    def compare(have: object, want: object, key: str) -> None:
        if have == want or len(found) >= 3:
            return
        if isinstance(have, dict) and isinstance(want, dict):
            for name in sorted(have.keys() | want.keys()):
                compare(have.get(name), want.get(name), f"{key}.{name}".lstrip("."))
        elif isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
            for index, (a, b) in enumerate(zip(have, want, strict=True)):
                compare(a, b, f"{key}.{index}")
        else:
            found.append(f"{key} {_brief(have)} (the configuration's: {_brief(want)})")

    compare(written, json.loads(planned), "")
    return "; ".join(found)


def _brief(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _recorded(path: str | os.PathLike[str]) -> dict:
    """The stamp recorded beside a shard file ({} if none can be read)."""
    try:
        recorded = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _stamp(path: str | os.PathLike[str]) -> list[int]:
    info = os.stat(path)
    return [info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]


def _stamp_path(path: str | os.PathLike[str]) -> Path:
    return Path(path).with_name(f".{Path(path).name}.checked")


def _record_stamp(path: str | os.PathLike[str], specification: bytes,
                  sha256: str | None = None) -> None:
    """Record that the file at `path`, as it is now, passed its checks (or was just written
    from checked data) for the shard `specification`, with the sha256 of the bytes written
    (default: its bytes now)."""
    record = {"stat": _stamp(path), "shard": hashlib.sha256(specification).hexdigest(),
              "sha256": sha256 or file_digest(path)}
    atomic_write_bytes(_stamp_path(path), json.dumps(record).encode())


def shard_dir(root: str | os.PathLike[str], dataset: str, names: Mapping[str, str]) -> Path:
    """The hive directory of one shard of `dataset`."""
    return Path(root) / patterns.SHARD.format(dataset=dataset, **names)


def read_summaries(store: str | os.PathLike[str] | None,
                   files: Sequence[str | os.PathLike[str]] | None = None) -> pl.DataFrame:
    """Summary rows, with the partition columns as strings: of the given shard `files`
    (a configuration's shards), or of every shard under the `store` directory."""
    import polars as pl  # here: a workflow importing the store's schema needs no polars

    if files is None and store is None:
        raise SpecError("expected a store directory or shard files")
    paths = sorted(str(f) for f in (files if files is not None
                                    else Path(str(store)).glob("**/summary.parquet")))
    _check_once(paths)
    string = {p: pl.String for p in PARTITIONS}
    frames = [pl.DataFrame(schema=string).hstack(
        pl.DataFrame(pl.from_arrow(SUMMARY_SCHEMA.empty_table())))]
    for path in paths:
        table = read_shard(path)
        names = dict(part.split("=", 1) for part in Path(path).parent.parts if "=" in part)
        frames.append(pl.DataFrame(pl.from_arrow(table.replace_schema_metadata(None))).select(
            *(pl.lit(names.get(p), pl.String).alias(p) for p in PARTITIONS), pl.all()))
    return pl.concat(frames, rechunk=False)  # no second copy of a million rows


def _check_once(files: Sequence[str]) -> None:
    """Each shard file is read once: a file given twice would count its runs twice."""
    seen: dict[Path, str] = {}
    for path in files:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise SpecError(f"{path}: given twice (as {seen[resolved]}); expected each "
                            "shard file once")
        seen[resolved] = path


def jobs_table(schedule: pa.Table, run_key: str) -> pa.Table:
    """A run's per-job schedule as rows of JOBS_SCHEMA (columns it lacks become null)."""
    n = schedule.num_rows
    columns = [pa.array([run_key] * n, pa.string()) if f.name == "run_key"
               else schedule.column(f.name).cast(f.type) if f.name in schedule.column_names
               else pa.nulls(n, f.type) for f in JOBS_SCHEMA]
    return pa.Table.from_arrays(columns, schema=JOBS_SCHEMA)


def run_row(key: str, machine: MachineSpec, policy: PolicySpec, workload: WorkloadSpec,
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
        **workload.to_dict(),
        **{k: params.get(k) for k in POLICY_COLUMNS},
        "run_key": key,
        "machine_spec": str(machine),
        "scheduler": policy.scheduler,
        "seed": seed,
        "offered_load_actual": load,
        "oversize_jobs": jobs.oversize_jobs,
    }


def summary_table(rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """Rows (dicts) as a table of SUMMARY_SCHEMA; missing keys become null. Built column
    by column: six times faster than row by row for a batch of runs."""
    return pa.Table.from_arrays([pa.array([row.get(f.name) for row in rows], f.type)
                                 for f in SUMMARY_SCHEMA], schema=SUMMARY_SCHEMA)
