"""Workload files: SWF-schema job tables as Parquet, with their provenance (`source`: what
made them, a synthesis spec and seed, or a trace's file, sha256 and cleaning) and a
checksum of their content in the metadata; every read verifies the checksum, and a shard's
read its provenance too."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict

import pyarrow as pa

from simcore.base.atomic import atomic_path
from simcore.base.checksums import recorded_digest, table_digest, with_digest
from simcore.base.errors import CleaningError, IntegrityError, TraceError
from simcore.base.regular import open_regular
from simcore.jobs.cleaning import CleaningOptions, clean, empty_workload
from simcore.jobs.swf import header_of, parse_swf

SOURCE_METADATA_KEY = b"source"


def convert_trace(
    swf_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    cleaning: Mapping[str, object] | None = None,
    expect_jobs: int | None = None,
    expect_max_procs: int | None = None,
    expect_sha256: str | None = None,
) -> pa.Table:
    """Read, validate and clean an SWF trace; write it as Parquet with header and counts.

    `expect_sha256`, `expect_jobs` and `expect_max_procs` (from the trace catalogue) must
    match the file: a trace is verified again where it is read, not only when acquired.
    """
    with open_regular(swf_path) as handle:  # a device or FIFO would be hashed forever
        data = handle.read()
    digest = hashlib.sha256(data).hexdigest()
    if expect_sha256 is not None and digest != expect_sha256:
        raise TraceError(f"{swf_path}: sha256 {digest}, expected {expect_sha256} from the trace "
                         "catalogue; the file was changed or damaged: remove it and run again "
                         "to acquire it anew")
    raw = parse_swf(data, str(swf_path))
    found = {"job lines": (raw.num_rows, expect_jobs),
             "MaxProcs": (header_of(raw).max_procs, expect_max_procs)}
    for what, (actual, expected) in found.items():
        if expected is not None and actual != expected:
            raise TraceError(f"{swf_path}: {what} {actual}; the trace catalogue expects "
                             f"{expected} (a different version of the trace?)")
    options = CleaningOptions.from_mapping(cleaning or {})
    table = clean(raw, options)
    source = {"kind": "trace", "file": os.path.basename(swf_path), "sha256": digest,
              "cleaning": asdict(options)}
    if table.num_rows == 0:
        raise CleaningError(f"{swf_path}: {empty_workload(table)}; expected at least one job "
                            "left to simulate")
    table = with_source(table, source)
    write_workload(table, out)
    return table


def with_source(table: pa.Table, source: Mapping[str, object]) -> pa.Table:
    """`table` with a JSON description of where its jobs came from."""
    metadata = dict(table.schema.metadata or {})
    metadata[SOURCE_METADATA_KEY] = json.dumps(dict(source), sort_keys=True).encode()
    return table.replace_schema_metadata(metadata)


def write_workload(table: pa.Table, out: str | os.PathLike[str]) -> None:
    """Write a job table as zstd Parquet, atomically, keeping its schema metadata and adding
    the checksum of its content."""
    import pyarrow.parquet as pq  # imported where used: a run on an SWF file never is

    with atomic_path(out) as tmp:
        pq.write_table(with_digest(table), tmp, compression="zstd")


def read_workload(path: str | os.PathLike[str],
                  expect: Mapping[str, object] | None = None) -> pa.Table:
    """Read a job table written by `write_workload`, verified against its checksum and, with
    `expect`, made by what `expect` says (each of its keys equal in the file's `source`
    metadata, e.g. `simcore.sweep.experiments.Source.provenance`); an unreadable, altered or
    foreign file raises an IntegrityError that says how to rebuild it."""
    import pyarrow.parquet as pq

    rebuild = "remove it and run snakemake again to rebuild it"
    try:
        with open_regular(path) as handle:
            table = pq.read_table(handle)
    except (pa.ArrowException, OSError) as exc:
        raise IntegrityError(f"{path}: not a readable workload file ({exc}); {rebuild}") from None
    recorded = recorded_digest(table)
    if recorded is None:
        raise IntegrityError(f"{path}: no content checksum, so not a workload file written by "
                             f"simcore; {rebuild}")
    if table_digest(table) != recorded:
        raise IntegrityError(f"{path}: content does not match its checksum; {rebuild}")
    if expect is not None:
        raw = (table.schema.metadata or {}).get(SOURCE_METADATA_KEY)
        try:
            made = json.loads(raw) if raw else {}
        except ValueError:
            made = {}
        differ = [f"{key} {made.get(key)!r} (expected {value!r})" for key, value in expect.items()
                  if made.get(key) != value]
        if differ:
            raise IntegrityError(f"{path}: made from another source: {', '.join(differ)}; "
                                 f"{rebuild}")
    return table
