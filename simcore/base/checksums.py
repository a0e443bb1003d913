"""Checksums of files and of Arrow tables' content.

`table_digest` hashes what a table holds (column names, types, null positions and values),
not how a file happens to encode it: the same rows give the same digest whether read from
Parquet, built in memory or re-chunked. Workload files and run-cache entries record it in
their metadata and are verified against it wherever they are read.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.regular import open_regular

#: Schema metadata key under which a table's content digest is stored.
DIGEST_KEY = b"content_sha256"


def file_digest(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a regular file, read in blocks."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def table_digest(table: pa.Table) -> str:
    """Hex sha256 of a table's content (schema metadata excluded)."""
    digest = hashlib.sha256()
    for name, column in zip(table.column_names, table.columns, strict=True):
        array = column.combine_chunks()
        kind = (f"list<{array.type.value_type}>" if pa.types.is_list(array.type)
                else str(array.type))  # Parquet renames a list's item field
        digest.update(f"{name}\0{kind}\0{len(array)}\0".encode())
        if array.null_count:
            digest.update(numpy_array(array.is_null()).tobytes())
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            digest.update("\0".join(array.fill_null("").to_pylist()).encode())
        elif pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
            digest.update(np.asarray(array.value_lengths().fill_null(0)).tobytes())
            digest.update(np.ascontiguousarray(numpy_array(array.flatten())).tobytes())
        else:
            if array.null_count:
                array = array.fill_null(False if pa.types.is_boolean(array.type) else 0)
            digest.update(np.ascontiguousarray(numpy_array(array)).tobytes())
    return digest.hexdigest()


def with_digest(table: pa.Table) -> pa.Table:
    """`table` with its content digest in its schema metadata."""
    metadata = dict(table.schema.metadata or {})
    metadata[DIGEST_KEY] = table_digest(table).encode()
    return table.replace_schema_metadata(metadata)


def recorded_digest(table: pa.Table) -> str | None:
    """The digest stored in a table's metadata, if any."""
    value = (table.schema.metadata or {}).get(DIGEST_KEY)
    return value.decode() if value is not None else None
