"""NumPy <-> Arrow through buffers (simcore.base.arrays) agrees with pyarrow's own conversion, and
a whole `simcore run` never imports the libraries it does not use."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simcore.base.arrays import arrow_array, arrow_table, filter_rows, numpy_array

DTYPES = [np.int64, np.int32, np.uint8, np.float64, np.float32, np.bool_]


@settings(deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda dtype: hnp.arrays(dtype, st.integers(0, 70))),
       st.data())
def test_arrow_array_matches_pyarrow(values, data):
    null = data.draw(hnp.arrays(np.bool_, values.shape))
    for ours, theirs in ((arrow_array(values), pa.array(values)),
                         (arrow_array(values, null=null), pa.array(values, mask=null))):
        assert ours.type == theirs.type and ours.null_count == theirs.null_count
        assert ours.is_null().equals(theirs.is_null())
        np.testing.assert_array_equal(ours.to_numpy(zero_copy_only=False),  # NaN == NaN here
                                      theirs.to_numpy(zero_copy_only=False))


@settings(deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda dtype: hnp.arrays(dtype, st.integers(0, 70))),
       st.integers(0, 70), st.integers(0, 70), st.integers(1, 4))
def test_numpy_array_reads_slices_and_chunks(values, start, length, pieces):
    """Offsets that are not whole bytes of a bit-packed column, and several chunks."""
    column = pa.array(values).slice(start, length)
    expected = values[start: start + length]
    np.testing.assert_array_equal(numpy_array(column), expected)
    assert numpy_array(column).dtype == values.dtype
    bounds = np.linspace(0, len(values), pieces + 1).astype(int)
    chunked = pa.chunked_array([pa.array(values[a:b]) for a, b in itertools.pairwise(bounds)],
                               type=pa.from_numpy_dtype(values.dtype))
    np.testing.assert_array_equal(numpy_array(chunked), values)


def test_columns_with_nulls_or_text_convert_as_pyarrow_does():
    with_null = pa.array([1.0, None, 3.0])
    np.testing.assert_array_equal(numpy_array(with_null), [1.0, np.nan, 3.0])
    assert list(numpy_array(pa.array(["a", "b"]))) == ["a", "b"]


def test_cast_is_arrows_safe_cast():
    assert arrow_array(np.arange(3), pa.int32()).type == pa.int32()
    with pytest.raises(pa.ArrowInvalid):
        arrow_array(np.array([1.5]), pa.int64())  # would truncate
    with pytest.raises(ValueError, match="1-D"):
        arrow_array(np.zeros((2, 2)))


def test_arrow_array_copies():
    values = np.arange(4)
    array = arrow_array(values)
    values[:] = 9
    assert array.to_pylist() == [0, 1, 2, 3]


def test_arrow_table_keeps_names_and_arrow_columns():
    table = arrow_table({"a": np.arange(2), "b": pa.array(["x", "y"])})
    assert table.column_names == ["a", "b"]
    assert table.column("a").to_pylist() == [0, 1]


@settings(deadline=None)
@given(st.integers(0, 40).flatmap(lambda n: st.tuples(
    hnp.arrays(np.int64, n), hnp.arrays(np.float64, n), hnp.arrays(np.bool_, n),
    hnp.arrays(np.bool_, n))))
def test_filter_rows_matches_arrow_filter(columns):
    ints, floats, flags, keep = columns
    table = pa.table({"i": ints, "f": floats, "b": flags}).replace_schema_metadata({"k": "v"})
    ours, theirs = filter_rows(table, keep), table.filter(pa.array(keep))
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    for name in table.column_names:
        np.testing.assert_array_equal(numpy_array(ours.column(name)),
                                      numpy_array(theirs.column(name)))


def test_filter_rows_refuses_nulls():
    with pytest.raises(ValueError, match="column x has nulls"):
        filter_rows(pa.table({"x": pa.array([1, None])}), np.array([True, True]))


def test_a_run_imports_no_dataframe_or_plotting_library(trace_excerpt):
    """pandas (through pyarrow), pyarrow.compute, polars and matplotlib cost a run time and
    do nothing for it."""
    probe = ("import sys; from simcore.cli.main import main; code = main(sys.argv[1:]); "
             "print(sorted(m for m in ('pandas', 'pyarrow.compute', 'polars', 'matplotlib', "
             "'dask') if m in sys.modules)); sys.exit(code)")
    result = subprocess.run(
        [sys.executable, "-c", probe, "run", "--workload",
         str(trace_excerpt("NASA-iPSC-1993-3.1-cln")), "--machine", "flat:128",
         "--scheduler", "backfill"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
