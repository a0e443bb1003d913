"""Workload files: SWF-schema job tables as Parquet, with their provenance in the metadata."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simcore.atomic import atomic_path
from simcore.cleaning import CleaningOptions, clean
from simcore.errors import TraceError
from simcore.swf import header_of, read_swf
from simcore.traces import sha256_file

SOURCE_METADATA_KEY = b"source"


def convert_trace(
    swf_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    cleaning: Mapping[str, object] | None = None,
    expect_jobs: int | None = None,
    expect_max_procs: int | None = None,
) -> pa.Table:
    """Read, validate and clean an SWF trace; write it as Parquet with header and counts.

    `expect_jobs` and `expect_max_procs` (from the trace catalogue) must match the file.
    """
    raw = read_swf(swf_path)
    found = {"job lines": (raw.num_rows, expect_jobs),
             "MaxProcs": (header_of(raw).max_procs, expect_max_procs)}
    for what, (actual, expected) in found.items():
        if expected is not None and actual != expected:
            raise TraceError(f"{swf_path}: {what} {actual}; the trace catalogue expects "
                             f"{expected} (a different version of the trace?)")
    table = clean(raw, CleaningOptions.from_mapping(cleaning or {}))
    source = {"kind": "trace", "file": os.path.basename(swf_path),
              "sha256": sha256_file(swf_path)}
    table = with_source(table, source)
    write_workload(table, out)
    return table


def with_source(table: pa.Table, source: Mapping[str, object]) -> pa.Table:
    """`table` with a JSON description of where its jobs came from."""
    metadata = dict(table.schema.metadata or {})
    metadata[SOURCE_METADATA_KEY] = json.dumps(dict(source), sort_keys=True).encode()
    return table.replace_schema_metadata(metadata)


def write_workload(table: pa.Table, out: str | os.PathLike[str]) -> None:
    """Write a job table as zstd Parquet, atomically, keeping its schema metadata."""
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_workload(path: str | os.PathLike[str]) -> pa.Table:
    """Read a job table written by `write_workload` (metadata included)."""
    return pq.read_table(path)


def table_hash(table: pa.Table) -> str:
    """sha256 of a job table's content (column names, types, values), not of its file."""
    digest = hashlib.sha256()
    for name in table.column_names:
        column = table.column(name)
        digest.update(f"{name}:{column.type}:".encode())
        digest.update(np.ascontiguousarray(column.to_numpy()).tobytes())
    return digest.hexdigest()
