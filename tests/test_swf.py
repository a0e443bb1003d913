"""SWF reading, validation and writing on real traces and on crafted bad input."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import (
    SWFCompressionError,
    SWFEmptyError,
    SWFFieldCountError,
    SWFValueError,
)
from simcore.jobs.swf import (
    FIELDS,
    FLOAT_FIELDS,
    MAX_TIME_S,
    TIME_FIELDS,
    SWFHeader,
    header_of,
    job_size,
    read_swf,
    write_swf,
)
from tests.excerpts import manifest, raw_jobs

# name -> (jobs, MaxProcs, MaxNodes), as ../shared/traces/SOURCES.md states them.
TRACES = {
    "NASA-iPSC-1993-3.1-cln": (18239, 128, 128),
    "SDSC-SP2-1998-4.2-cln": (59715, 128, 128),
    "CTC-SP2-1996-3.1-cln": (77222, 338, 338),
    "Sandia-Ross-2001-1.1-cln": (57882, 1524, 1524),
    "SDSC-BLUE-2000-4.2-cln": (243306, 1152, 144),
    "SDSC-Par-1996-3.1-cln": (32135, 400, 400),
}
GOOD_LINE = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"


@pytest.mark.parametrize("name", sorted(TRACES))
def test_real_trace_counts(name, whole_trace):
    table = read_swf(whole_trace(name))
    jobs, max_procs, max_nodes = TRACES[name]
    assert table.num_rows == jobs
    assert header_of(table).max_procs == max_procs
    assert header_of(table).max_nodes == max_nodes
    ids = table.column("job_number").to_numpy()
    assert (np.diff(ids) > 0).all(), "job numbers strictly increase in every PWA trace"


@pytest.mark.parametrize("name", sorted(manifest()))
def test_excerpt_counts(name, trace_excerpt):
    """The reader's rows are the excerpt's job lines, read here independently; the header
    (copied whole) gives the whole trace's sizes."""
    table = read_swf(trace_excerpt(name))
    raw = np.array(raw_jobs(trace_excerpt(name)))
    assert table.num_rows == len(raw) == manifest()[name]["jobs"]
    _, max_procs, max_nodes = TRACES[name]
    assert header_of(table).max_procs == max_procs
    assert header_of(table).max_nodes == max_nodes
    assert np.array_equal(table.column("job_number").to_numpy(), raw[:, 0])
    assert np.array_equal(table.column("run_time").to_numpy(), raw[:, 3])
    assert (np.diff(raw[:, 0]) > 0).all(), "job numbers strictly increase in every PWA trace"


def test_sandia_ross_header_without_space(trace_excerpt):
    header = header_of(read_swf(trace_excerpt("Sandia-Ross-2001-1.1-cln")))
    assert header.get("Version") == "SWF v2"
    assert header.get("Computer") == "Compaq DS10L 1U servers"
    assert header.get_int("MaxNodes") == 1524


def test_header_continuations_and_repeats(trace_excerpt):
    header = header_of(read_swf(trace_excerpt("CTC-SP2-1996-3.1-cln")))
    assert header.get("MaxNodes") == "338 (batch partition; 512 total)"
    assert header.get_all("Queue")[0] == "1 DSI"
    note = header.get_all("Note")[-1]
    assert note.startswith("THIS IS A CLEANED VERSION OF THE LOG!\nThe filter used")
    assert "(2080 jobs removed)" in note


def test_types_and_missing_values(trace_excerpt):
    table = read_swf(trace_excerpt("NASA-iPSC-1993-3.1-cln"))
    for field in table.schema:
        expected = pa.float64() if field.name in FLOAT_FIELDS else pa.int64()
        assert field.type == expected, field.name
    assert (table.column("wait_time").to_numpy() == -1).all(), "NASA has no wait times"


def test_job_size_prefers_allocated():
    table = _table_from_lines(["1 0 0 10 8 -1 -1 16 -1 -1 1 1 1 -1 1 -1 -1 -1",
                               "2 0 0 10 -1 -1 -1 16 -1 -1 1 1 1 -1 1 -1 -1 -1"])
    assert job_size(table).tolist() == [8, 16]


def _write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _table_from_lines(lines):
    from simcore.jobs.swf import parse_swf

    return parse_swf(("; MaxProcs: 16\n" + "\n".join(lines) + "\n").encode())


def test_field_count_error_names_line(tmp_path):
    short = " ".join(GOOD_LINE.split()[:17])
    path = _write(tmp_path, f"; MaxProcs: 16\n{GOOD_LINE}\n\n{short}\n{GOOD_LINE}\n")
    with pytest.raises(SWFFieldCountError, match=rf"{re.escape(str(path))}:4: found 17 fields; "
                                                 "expected 18"):
        read_swf(path)


def test_too_many_fields(tmp_path):
    path = _write(tmp_path, f"{GOOD_LINE} 7\n")
    with pytest.raises(SWFFieldCountError, match=r":1: found 19 fields"):
        read_swf(path)


def test_non_numeric_field_names_line_and_field(tmp_path):
    bad = GOOD_LINE.replace(" 200 ", " 2x0 ")
    path = _write(tmp_path, f"; c\n{GOOD_LINE}\n{bad}\n")
    message = r":3: field 9 \(requested_time\) is '2x0'; expected a number"
    with pytest.raises(SWFValueError, match=message):
        read_swf(path)


def test_malformed_number_found_after_arrow_refuses(tmp_path):
    bad = GOOD_LINE.replace(" 100 ", " 1-0 ")
    path = _write(tmp_path, f"{GOOD_LINE}\n{bad}\n")
    with pytest.raises(SWFValueError, match=r":2: field 4 \(run_time\) is '1-0'"):
        read_swf(path)


def test_fractional_integer_field(tmp_path):
    bad = GOOD_LINE.replace(" 4 200 ", " 4.5 200 ")
    path = _write(tmp_path, f"{GOOD_LINE}\n{bad}\n")
    with pytest.raises(SWFValueError, match=r":2: field 8 \(requested_processors\) is 4.5; "
                                            "expected an integer"):
        read_swf(path)


def test_empty_and_header_only(tmp_path):
    with pytest.raises(SWFEmptyError, match="empty file"):
        read_swf(_write(tmp_path, "  \n\n"))
    with pytest.raises(SWFEmptyError, match="header only"):
        read_swf(_write(tmp_path, "; Version: 2.2\n; MaxProcs: 4\n"))


def test_truncated_gzip(tmp_path, trace_excerpt):
    data = trace_excerpt("NASA-iPSC-1993-3.1-cln").read_bytes()
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(SWFCompressionError, match=r"cut.swf.gz: corrupt or truncated gzip"):
        read_swf(path)


def test_a_parquet_workload_is_named_as_such(tmp_path):
    """The converted or synthesized form of a workload is not SWF: say so, not that its
    first line has the wrong number of fields."""
    path = tmp_path / "jobs.parquet"
    path.write_bytes(b"PAR1" + bytes(range(256)) + b"PAR1")
    with pytest.raises(SWFValueError, match=r"jobs.parquet: a Parquet file .*; expected SWF "
                                            r"text"):
        read_swf(path)


def test_whitespace_variants(tmp_path):
    text = f";Version: 2\n\t{GOOD_LINE.replace(' ', chr(9) + '  ')}  \r\n\n  2{GOOD_LINE[1:]}"
    table = read_swf(_write(tmp_path, text))
    assert table.num_rows == 2
    assert table.column("requested_time").to_pylist() == [200.0, 200.0]
    assert header_of(table).get("Version") == "2"


@pytest.mark.parametrize("name", ["SDSC-SP2-1998-4.2-cln", "Sandia-Ross-2001-1.1-cln"])
def test_real_trace_round_trip(name, trace_excerpt, tmp_path):
    table = read_swf(trace_excerpt(name))
    out = tmp_path / f"{name}.swf.gz"
    write_swf(table, out)
    again = read_swf(out)
    assert again.equals(table)
    assert header_of(again) == header_of(table)


integers = st.integers(min_value=-1, max_value=2**40)


def _floats(largest: float) -> st.SearchStrategy[float]:
    return st.one_of(st.integers(min_value=-1, max_value=int(largest)).map(float),
                     st.floats(min_value=0, max_value=largest, allow_nan=False,
                               allow_infinity=False))


rows = st.lists(
    st.tuples(*[(_floats(MAX_TIME_S) if name in TIME_FIELDS else _floats(1e12))
                if name in FLOAT_FIELDS else integers for name in FIELDS]),
    min_size=1,
    max_size=30,
    unique_by=lambda row: row[0],  # job numbers are unique
)
header_lines = st.lists(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40).map(
        lambda s: ("; " + s).rstrip()
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(rows=rows, header=header_lines)
def test_generated_round_trip(rows, header, tmp_path_factory):
    columns = list(zip(*rows, strict=True))
    table = pa.Table.from_arrays(
        [pa.array(col, type=pa.float64() if name in FLOAT_FIELDS else pa.int64())
         for name, col in zip(FIELDS, columns, strict=True)],
        names=list(FIELDS),
    )
    from simcore.jobs.swf import with_header

    table = with_header(table, SWFHeader(tuple(header)))
    path = tmp_path_factory.mktemp("rt") / "gen.swf"
    write_swf(table, path)
    again = read_swf(path)
    assert again.equals(table)
    assert header_of(again).lines == tuple(header)


def test_write_is_atomic_on_error(tmp_path):
    path = tmp_path / "out.swf"
    with pytest.raises(ValueError, match="lacks SWF fields"):
        write_swf(pa.table({"job_number": [1]}), path)
    assert list(tmp_path.iterdir()) == []


def test_gzip_written_is_readable(tmp_path):
    table = _table_from_lines([GOOD_LINE])
    write_swf(table, tmp_path / "a.swf.gz")
    assert gzip.decompress((tmp_path / "a.swf.gz").read_bytes()).startswith(b"; MaxProcs: 16\n1 ")


def test_written_files_follow_the_umask(tmp_path):
    import os
    import stat

    write_swf(_table_from_lines([GOOD_LINE]), tmp_path / "m.swf")
    mode = stat.S_IMODE(os.stat(tmp_path / "m.swf").st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask, oct(mode)


def test_arrow_reads_memory_it_owns(monkeypatch):
    """Arrow's CSV workers may drop their input after read_csv returns; a Python object
    there (io.BytesIO) needs the GIL, and at interpreter exit that aborted the process
    ('terminate called without an active exception')."""
    import pyarrow.csv as pacsv

    from simcore.jobs import swf

    given = []
    real = pacsv.read_csv
    monkeypatch.setattr(swf.pacsv, "read_csv",
                        lambda source, **options: (given.append(source), real(source,
                                                                              **options))[1])
    assert swf.parse_swf(f"; MaxProcs: 16\n{GOOD_LINE}\n".encode()).num_rows == 1
    assert isinstance(given[0], pa.BufferReader)
