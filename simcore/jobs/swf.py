"""Standard Workload Format (SWF): vectorised reading, validation and writing.

An SWF file is a header of `;` comment lines (`; Key: value` or `;Key: value`, with
indented continuation lines) followed by one line per job of 18 whitespace-separated
numbers. The Parallel Workloads Archive writes -1 for a missing value; simcore keeps
-1 as it is (never null), so a file read and written back is unchanged and "missing"
stays distinguishable from every real value, which is >= 0 in every field.

Beyond the format, the reader refuses what cannot be a job log: a time field (`TIME_FIELDS`)
above `MAX_TIME_S` (10^9 s), and a job number that an earlier line already used.

The reader works on the whole byte buffer with numpy and Arrow: there is no Python loop
per line. Every problem raises an `SWFError` subclass whose message reads
`<file>:<line>: <what was found>; expected <what>`.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from simcore.base.arrays import arrow_array, numpy_array
from simcore.base.atomic import atomic_write_bytes
from simcore.base.errors import (
    SWFCompressionError,
    SWFEmptyError,
    SWFFieldCountError,
    SWFValueError,
)
from simcore.base.regular import open_regular

#: The 18 SWF fields in file order, snake_case names from the SWF definition.
FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
#: Fields holding seconds or kilobytes; fractional values occur in some logs.
FLOAT_FIELDS = frozenset(
    {
        "submit_time",
        "wait_time",
        "run_time",
        "average_cpu_time",
        "used_memory",
        "requested_time",
        "requested_memory",
        "think_time",
    }
)
#: Fields holding seconds, and the largest value simcore accepts in them (10^9 s, about
#: 31.7 years; the archive's longest logs span a few years): beyond it a time is a
#: corrupted field, and sums of such times lose all precision or overflow to infinity.
TIME_FIELDS = ("submit_time", "wait_time", "run_time", "average_cpu_time", "requested_time",
               "think_time")
MAX_TIME_S = 1e9
SCHEMA = pa.schema(
    [(name, pa.float64() if name in FLOAT_FIELDS else pa.int64()) for name in FIELDS]
)
MISSING = -1
HEADER_METADATA_KEY = b"swf_header"

# Byte classes, one table lookup per byte: whitespace, the characters of a number, and 0
# for any other byte (an error in a job line).
_SPACE, _NUMBER = 1, 2
_BYTE_CLASS = np.zeros(256, dtype=np.uint8)
_BYTE_CLASS[np.frombuffer(b" \t\r\n\v\f", dtype=np.uint8)] = _SPACE
_BYTE_CLASS[np.frombuffer(b"0123456789.-+eE", dtype=np.uint8)] = _NUMBER
_TO_SPACE = bytes.maketrans(b"\t\v\f", b"   ")
_OTHER_COMPRESSION = {b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd",
                      b"PK\x03\x04": "zip"}
_KEY_LINE = re.compile(r"^;\s?([A-Za-z][A-Za-z0-9_]*):\s?(.*)$")
#: The largest MaxProcs or MaxNodes a header may state (the largest machines hold about
#: 10^7 processors); sizes are divided by it and multiplied by machine sizes.
MAX_HEADER_SIZE = 10**9
_HEADER_SIZE = re.compile(r"(-1|[1-9][0-9]*)(?:\s.*)?", re.DOTALL)


@dataclass(frozen=True)
class SWFHeader:
    """The header comment lines, kept verbatim, with a key/value view of them."""

    lines: tuple[str, ...]

    @property
    def entries(self) -> tuple[tuple[str, str], ...]:
        """(key, value) pairs in file order; continuation lines join their entry's value."""
        entries: list[list[str]] = []
        for line in self.lines:
            match = _KEY_LINE.match(line)
            if match:
                entries.append([match.group(1), match.group(2).strip()])
            elif entries and line[1:].strip():
                entries[-1][1] += "\n" + line[1:].strip()
        return tuple((key, value) for key, value in entries)

    def get(self, key: str) -> str | None:
        """Value of the first entry named `key` (SWF keys are case-sensitive)."""
        return next((value for k, value in self.entries if k == key), None)

    def get_all(self, key: str) -> list[str]:
        """Values of every entry named `key`, e.g. all `Note` or `Queue` lines."""
        return [value for k, value in self.entries if k == key]

    def get_int(self, key: str) -> int | None:
        """Leading integer of a value, e.g. 338 from `MaxNodes: 338 (batch partition)`."""
        value = self.get(key)
        match = re.match(r"\s*(-?\d+)", value or "")
        return int(match.group(1)) if match else None

    @property
    def max_procs(self) -> int | None:
        return self.get_int("MaxProcs")

    @property
    def max_nodes(self) -> int | None:
        return self.get_int("MaxNodes")

    def summary(self) -> dict[str, object]:
        """The standard scalar keys and the notes, for reports and JSON output."""
        scalar = (
            "Version", "Computer", "Installation", "Acknowledge", "Conversion", "MaxJobs",
            "MaxRecords", "Preemption", "UnixStartTime", "TimeZone", "TimeZoneString",
            "StartTime", "EndTime", "MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory",
            "AllowOveruse", "MaxQueues", "MaxPartitions",
        )  # fmt: skip
        out: dict[str, object] = {k: self.get(k) for k in scalar if self.get(k) is not None}
        out["Note"] = self.get_all("Note")
        return out


def read_swf(path: str | os.PathLike[str]) -> pa.Table:
    """Read an SWF file (plain or gzip) into a typed Arrow table with the header attached."""
    path = str(path)
    with open_regular(path) as handle:
        data = handle.read()
    return parse_swf(data, path)


def parse_swf(data: bytes, path: str = "<bytes>") -> pa.Table:
    """Parse SWF bytes (gzip is detected by its magic number); `path` names errors.

    A UTF-8 byte-order mark is skipped and old Mac line ends (CR alone) count as line ends.
    """
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise SWFCompressionError(
                path, None, f"corrupt or truncated gzip stream ({exc}); expected a whole .gz file"
            ) from exc
    for magic, name in _OTHER_COMPRESSION.items():
        if data.startswith(magic):
            raise SWFCompressionError(path, None, f"{name}-compressed data; expected SWF text, "
                                                  "plain or gzip-compressed")
    if data.startswith(b"PAR1"):
        raise SWFValueError(path, None, "a Parquet file (a converted or synthesized "
                                        "workload); expected SWF text, plain or "
                                        "gzip-compressed")
    data = data.removeprefix(b"\xef\xbb\xbf")
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    buf = np.frombuffer(data, dtype=np.uint8)
    byte_class = _BYTE_CLASS[buf]
    is_space = byte_class == _SPACE
    if is_space.all():
        raise SWFEmptyError(path, None, "empty file; expected SWF header comments and job lines")

    is_newline = buf == 10
    line_end = np.flatnonzero(is_newline) + 1  # exclusive end of every line
    if buf[-1] != 10:
        line_end = np.append(line_end, buf.size)
    line_length = np.diff(line_end, prepend=0)
    n_lines = line_end.size
    token_start = ~is_space & np.concatenate(([True], is_space[:-1]))
    starts = np.flatnonzero(token_start)
    bounds = np.searchsorted(starts, np.concatenate(([0], line_end)))  # line i: [b_i, b_i+1)
    tokens_per_line = np.diff(bounds)
    has_tokens = tokens_per_line > 0
    first_starts = starts[bounds[:-1][has_tokens]]  # each line's first token
    comment_line = np.zeros(n_lines, dtype=bool)
    comment_line[has_tokens] = buf[first_starts] == ord(";")
    data_line = has_tokens & ~comment_line

    header, header_numbers = _header_lines(data, line_end, comment_line, data_line)
    _check_header_sizes(header, header_numbers, path)
    if not data_line.any():
        raise SWFEmptyError(
            path, None, "header only, no job lines; expected lines of 18 numeric fields"
        )
    wrong_count = np.flatnonzero(data_line & (tokens_per_line != len(FIELDS)))
    if wrong_count.size:
        line = int(wrong_count[0])
        raise SWFFieldCountError(
            path,
            line + 1,
            f"found {int(tokens_per_line[line])} fields; expected {len(FIELDS)} "
            "whitespace-separated numbers",
        )
    in_data = np.repeat(data_line, line_length)
    bad = np.flatnonzero(in_data & (byte_class == 0))
    if bad.size:
        _raise_bad_token(data, path, int(np.searchsorted(line_end, bad[0], side="right")))

    # Keep data-line bytes, one space between tokens, one newline per line: plain CSV.
    # The whitespace byte before each token but a line's first becomes its separator.
    token_start[first_starts] = False
    keep = ~is_space | is_newline
    keep[:-1] |= token_start[1:]
    keep &= in_data
    text = buf[keep].tobytes().translate(_TO_SPACE)
    line_numbers = np.flatnonzero(data_line) + 1
    table = _convert(text, path, data, line_numbers)
    return table.replace_schema_metadata(
        {HEADER_METADATA_KEY: json.dumps(list(header)).encode()}
    )


def _header_lines(
    data: bytes, line_end: np.ndarray, comment_line: np.ndarray, data_line: np.ndarray
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Comment lines before the first job line, verbatim (trailing whitespace removed),
    and their line numbers."""
    first_data = int(np.argmax(data_line)) if data_line.any() else comment_line.size
    header_ids = np.flatnonzero(comment_line[:first_data])
    if not header_ids.size:
        return (), ()
    end_byte = int(line_end[header_ids[-1]])
    lines = data[:end_byte].decode("latin-1").split("\n")
    return tuple(lines[i].strip() for i in header_ids), tuple(int(i) + 1 for i in header_ids)


def _check_header_sizes(lines: tuple[str, ...], numbers: tuple[int, ...], path: str) -> None:
    """Refuse a MaxProcs or MaxNodes that is not an integer in digits (`1e3` was read as
    1, `10^30` as 10) or is above MAX_HEADER_SIZE; -1 is SWF's 'unknown'."""
    for line, number in zip(lines, numbers, strict=True):
        match = _KEY_LINE.match(line)
        if match is None or match.group(1) not in ("MaxProcs", "MaxNodes"):
            continue
        value = match.group(2).strip()
        size = _HEADER_SIZE.fullmatch(value)
        if size is None or int(size.group(1)) > MAX_HEADER_SIZE:
            raise SWFValueError(path, number, f"header {match.group(1)} is {value[:40]!r}; "
                                f"expected -1 (unknown) or an integer from 1 to "
                                f"{MAX_HEADER_SIZE:,} in digits, then any remark after a "
                                "space")


def _convert(text: bytes, path: str, data: bytes, line_numbers: np.ndarray) -> pa.Table:
    """Normalised job lines -> typed table. Integer fields are read as integers, never
    through a float (2^53 + 1 would become 2^53); a file Arrow's integer reader refuses is
    read again as floats only to name the first token at fault."""
    raw = _read_csv(text, integers=True)
    if raw is None:
        raw = _read_csv(text, integers=False)
        if raw is None:
            _raise_first_unparsable(data, path, line_numbers)
    for index, name in enumerate(FIELDS):
        values = numpy_array(raw.column(name))
        if values.dtype.kind == "i":  # exact: bounded without a float
            out_of_range = np.flatnonzero((values > 2**53) | (values < -(2**53)))
        else:
            limit = np.finfo(np.float64).max if name in FLOAT_FIELDS else 2.0**53
            out_of_range = np.flatnonzero(~(np.abs(values) <= limit))  # also NaN and inf
        if out_of_range.size:
            row = int(out_of_range[0])
            held = ("a finite number" if name in FLOAT_FIELDS
                    else "an integer of at most 2^53 in magnitude")
            raise SWFValueError(path, int(line_numbers[row]),
                                f"field {index + 1} ({name}) is {values[row].item()!r}, out "
                                f"of range; expected {held}")
        if name in TIME_FIELDS:
            beyond = np.flatnonzero(values > MAX_TIME_S)
            if beyond.size:
                row = int(beyond[0])
                raise SWFValueError(path, int(line_numbers[row]),
                                    f"field {index + 1} ({name}) is {float(values[row])!r} s, "
                                    f"beyond simcore's bound of {MAX_TIME_S:.0e} s (31.7 years);"
                                    f" expected a time of at most {MAX_TIME_S:.0e} s, or -1")
        if name not in FLOAT_FIELDS and values.dtype.kind == "f":
            fractional = np.flatnonzero(values != np.floor(values))
            if fractional.size:
                row = int(fractional[0])
                raise SWFValueError(
                    path,
                    int(line_numbers[row]),
                    f"field {index + 1} ({name}) is {float(values[row])!r}; expected an integer",
                )
    if raw.schema != SCHEMA:  # every value is whole, but one is written as 4.0 or 1e3
        _raise_first_not_integer(data, path, line_numbers)
    columns = [raw.column(name).combine_chunks() for name in FIELDS]
    _check_unique(numpy_array(columns[0]), path, line_numbers)
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def _read_csv(text: bytes, integers: bool) -> pa.Table | None:
    """The normalised lines as a table, integer fields as int64 if `integers` (else every
    field as float64); None if Arrow refuses a token."""
    types = {name: pa.float64() if name in FLOAT_FIELDS or not integers else pa.int64()
             for name in FIELDS}
    try:
        return pacsv.read_csv(
            _arrow_owned(text),
            read_options=pacsv.ReadOptions(column_names=list(FIELDS), block_size=1 << 20),
            parse_options=pacsv.ParseOptions(delimiter=" "),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
    except pa.ArrowInvalid:
        return None


def _check_unique(job_numbers: np.ndarray, path: str, line_numbers: np.ndarray) -> None:
    """Refuse a job number used twice: results are keyed by it."""
    order = np.argsort(job_numbers, kind="stable")
    repeated = np.flatnonzero(job_numbers[order][1:] == job_numbers[order][:-1])
    if repeated.size:
        rows = order[repeated + 1]
        row = int(rows[np.argmin(rows)])  # the earliest line that repeats a number
        first = int(np.flatnonzero(job_numbers == job_numbers[row])[0])
        raise SWFValueError(path, int(line_numbers[row]),
                            f"job number {int(job_numbers[row])} already used on line "
                            f"{int(line_numbers[first])}; expected each job number once")


def _arrow_owned(data: bytes) -> pa.BufferReader:
    """`data` copied into memory Arrow owns, as a stream for Arrow's threaded readers.

    Arrow's CSV reader reads and parses on its own worker threads, and the last of them to
    finish drops the reader and its input, possibly after `read_csv` has returned. Were
    the input a Python object (`io.BytesIO`, or a buffer over `bytes`), dropping it would
    take the GIL; if the interpreter is exiting by then, the worker is ended by
    pthread_exit inside a C++ thread and the process aborts ("terminate called without an
    active exception", exit status 134) after the command's work is done. A buffer
    allocated by Arrow holds no Python object, so its workers never need the GIL.
    """
    buffer = pa.allocate_buffer(len(data))
    np.frombuffer(buffer, dtype=np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
    return pa.BufferReader(buffer)


def _raise_bad_token(data: bytes, path: str, line_index: int) -> None:
    line = data.split(b"\n", line_index + 1)[line_index].decode("latin-1")
    for field, token in enumerate(line.split(), start=1):
        if not _is_number(token):
            _raise_value(path, line_index + 1, field, token)
    raise SWFValueError(path, line_index + 1, "unreadable line; expected 18 numbers")


def _raise_first_unparsable(data: bytes, path: str, line_numbers: np.ndarray) -> None:
    """Error path only: find the first token that is not a number, line by line."""
    lines = data.decode("latin-1").split("\n")
    for number in line_numbers:
        for field, token in enumerate(lines[number - 1].split(), start=1):
            if not _is_number(token):
                _raise_value(path, int(number), field, token)


def _raise_first_not_integer(data: bytes, path: str, line_numbers: np.ndarray) -> None:
    """Error path only: find the first integer field not written as one."""
    lines = data.decode("latin-1").split("\n")
    for number in line_numbers:
        for field, token in enumerate(lines[number - 1].split(), start=1):
            if FIELDS[field - 1] not in FLOAT_FIELDS and not _INTEGER.fullmatch(token):
                raise SWFValueError(path, int(number), f"field {field} ({FIELDS[field - 1]}) "
                                    f"is {token!r}; expected an integer written in digits")
    raise AssertionError("Arrow refused an integer field that is written in digits")


def _raise_value(path: str, line: int, field: int, token: str) -> None:
    raise SWFValueError(
        path, line, f"field {field} ({FIELDS[field - 1]}) is {token!r}; expected a number"
    )


_INTEGER = re.compile(r"-?[0-9]+")


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return token.lower() not in {"nan", "inf", "-inf", "+inf", "infinity"}


def header_of(table: pa.Table) -> SWFHeader:
    """The SWF header stored in a table's schema metadata (empty if there is none)."""
    raw = (table.schema.metadata or {}).get(HEADER_METADATA_KEY)
    return SWFHeader(tuple(json.loads(raw)) if raw else ())


def with_header(table: pa.Table, header: SWFHeader) -> pa.Table:
    """`table` with `header` stored in its schema metadata."""
    metadata = dict(table.schema.metadata or {})
    metadata[HEADER_METADATA_KEY] = json.dumps(list(header.lines)).encode()
    return table.replace_schema_metadata(metadata)


def from_columns(columns: Mapping[str, np.ndarray], header: SWFHeader) -> pa.Table:
    """An SWF table from some fields (e.g. a synthetic model's); the others are -1."""
    unknown = set(columns) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown SWF fields {sorted(unknown)}; expected names from FIELDS")
    n = len(next(iter(columns.values())))
    arrays = []
    for field in SCHEMA:
        values = columns.get(field.name)
        if values is None:
            values = np.full(n, MISSING, dtype=field.type.to_pandas_dtype())
        arrays.append(arrow_array(values, field.type))
    return with_header(pa.Table.from_arrays(arrays, schema=SCHEMA), header)


def job_size(table: pa.Table) -> np.ndarray:
    """Processors per job: allocated (field 5) when known, else requested (field 8)."""
    allocated = numpy_array(table.column("allocated_processors"))
    requested = numpy_array(table.column("requested_processors"))
    return np.where(allocated > 0, allocated, requested)


def format_swf(table: pa.Table) -> str:
    """SWF text of a table: its header lines, then one line of 18 fields per job."""
    import pyarrow.compute as pc  # here: a run only reads, and this import is slow

    missing = [name for name in FIELDS if name not in table.column_names]
    if missing:
        raise ValueError(f"table lacks SWF fields {missing}; expected all of FIELDS")
    texts = []
    for name in FIELDS:
        column = table.column(name).combine_chunks()
        if name in FLOAT_FIELDS:
            values = numpy_array(column)
            integral = (values == np.floor(values)) & (np.abs(values) < 2.0**53)
            as_int = pc.cast(arrow_array(np.where(integral, values, 0).astype(np.int64)),
                             pa.string())
            texts.append(pc.if_else(arrow_array(integral), as_int, pc.cast(column, pa.string())))
        else:
            texts.append(pc.cast(column, pa.string()))
    rows = pc.binary_join_element_wise(*texts, " ")
    lines = list(header_of(table).lines)
    body = "\n".join(rows.to_pylist())
    return "\n".join([*lines, body]) + "\n"


def write_swf(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write a table as SWF (gzip if the name ends in .gz), atomically."""
    path = Path(path)
    payload = format_swf(table).encode("latin-1")
    if path.suffix == ".gz":
        payload = gzip.compress(payload, mtime=0)
    atomic_write_bytes(path, payload)
