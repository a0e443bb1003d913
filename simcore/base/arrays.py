"""NumPy arrays to Arrow arrays and back, through their buffers.

`pa.array(ndarray)` and `to_numpy()` first ask whether pandas is at hand, and that question
imports pandas (about 0.12 s) wherever pandas is installed. Nothing in a simulation needs
pandas, so numeric and boolean columns cross between NumPy and Arrow here: `arrow_array`
hands Arrow a copy of an array's memory, `numpy_array` reads a column's memory, and
neither asks. `filter_rows` keeps a job table's rows without pyarrow.compute, whose
import (about 40 ms) would otherwise be a run's only use of it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def arrow_array(values: np.ndarray, type: pa.DataType | None = None,
                null: np.ndarray | None = None) -> pa.Array:
    """A copy of a 1-D numeric or boolean array as an Arrow array, null where `null` is
    True; given a `type`, cast to it by Arrow's safe cast (no silent truncation or
    overflow)."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    own = pa.from_numpy_dtype(values.dtype)
    if pa.types.is_boolean(own):
        data = np.packbits(values, bitorder="little")
    else:
        data = np.array(values, order="C")  # a copy: the caller may reuse its buffer
    buffers = [None, pa.py_buffer(data)]
    null_count = 0
    if null is not None and null.any():
        buffers[0] = pa.py_buffer(np.packbits(~np.asarray(null, dtype=bool), bitorder="little"))
        null_count = int(np.count_nonzero(null))
    array = pa.Array.from_buffers(own, len(values), buffers, null_count=null_count)
    return array if type is None or type == own else array.cast(type)


def numpy_array(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric or boolean column as a NumPy array, read from its buffers (a read-only
    view of a single chunk); columns with nulls or of other types convert as `to_numpy`
    does."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if len(chunks) == 1:
        return _chunk_values(chunks[0])
    if not chunks:
        return np.empty(0, dtype=column.type.to_pandas_dtype())
    return np.concatenate([_chunk_values(chunk) for chunk in chunks])


def _chunk_values(chunk: pa.Array) -> np.ndarray:
    kind = chunk.type
    if chunk.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                or pa.types.is_boolean(kind)):
        return chunk.to_numpy(zero_copy_only=False)
    data = np.frombuffer(chunk.buffers()[1], dtype=np.uint8)
    if pa.types.is_boolean(kind):
        bits = np.unpackbits(data, count=chunk.offset + len(chunk), bitorder="little")
        return bits[chunk.offset:].astype(bool)
    dtype = np.dtype(kind.to_pandas_dtype())
    start = chunk.offset * dtype.itemsize
    return data[start: start + len(chunk) * dtype.itemsize].view(dtype)


def arrow_table(columns: dict[str, np.ndarray | pa.Array]) -> pa.Table:
    """A table of named columns, NumPy ones converted by `arrow_array`."""
    return pa.Table.from_arrays(
        [c if isinstance(c, pa.Array) else arrow_array(c) for c in columns.values()],
        names=list(columns))


def filter_rows(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of `table` where the boolean mask `keep` is True, schema and metadata kept;
    every column must be numeric or boolean without nulls, as a job table's are."""
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if column.null_count:
            raise ValueError(f"column {name} has nulls; expected a job table without nulls")
        columns.append(arrow_array(numpy_array(column)[keep], column.type))
    return pa.Table.from_arrays(columns, schema=table.schema)
