"""The cells of an export's CSV files, each read against its column's type and bounds.

A file is read row by row after its header is checked against the columns it must have;
a cell that is not what its column holds is a SpecError naming the file, the line, the
column, the text found and what was expected. Interval sets (`0-3 8`) are checked against
the machine's units before any id is listed, so that no interval allocates more than the
machine has.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from simcore.base.errors import SpecError

#: Integers a cell may hold: int64, written in at most 18 digits.
INTEGER = re.compile(r"-?[0-9]{1,18}")
INTERVAL = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
LARGEST = 2**63 - 1
#: Times beyond this many seconds (31.7 million years) are a damaged cell: an SWF trace's
#: times are at most 10^9 s each (`simcore.jobs.swf.MAX_TIME_S`).
MAX_TIME_S = 1e15


def shown(text: str) -> str:
    """A cell's text as an error message quotes it (at most 40 characters)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


@dataclass(frozen=True)
class Row:
    """One row of a CSV file: its cells by column name and the line it ends on."""

    path: Path
    line: int
    cells: dict[str, str]

    def fail(self, column: str, expected: str) -> NoReturn:
        raise SpecError(f"{self.path}:{self.line}: {column} {shown(self.cells[column])}; "
                        f"expected {expected}")

    def integer(self, column: str, low: int = 0, high: int = LARGEST) -> int:
        """The integer in `column`, low <= value <= high."""
        text = self.cells[column]
        if not INTEGER.fullmatch(text) or not low <= int(text) <= high:
            self.fail(column, f"an integer from {low} to {high}")
        return int(text)

    def time(self, column: str, low: float = -math.inf, after: str = "") -> float:
        """The finite number in `column`, at least `low` (which `after` names, if given)."""
        try:
            value = float(self.cells[column])
        except ValueError:
            self.fail(column, "a number")
        if not abs(value) <= MAX_TIME_S:
            self.fail(column, f"a finite number within +-{MAX_TIME_S:.0e}")
        if value < low:
            self.fail(column, f"a number >= {f'{after} ({low!r})' if after else repr(low)}")
        return value

    def choice(self, column: str, allowed: tuple[str, ...]) -> str:
        text = self.cells[column]
        if text not in allowed:
            self.fail(column, f"one of {', '.join(allowed)}")
        return text

    def units(self, column: str, count: int) -> np.ndarray:
        """The unit ids of the interval set in `column` (ascending, disjoint intervals
        `a-b` or `a`, separated by spaces), each below `count`."""
        bounds: list[tuple[int, int]] = []
        for part in self.cells[column].split(" ") if self.cells[column] else ():
            match = INTERVAL.fullmatch(part)
            low = int(match.group(1)) if match else -1
            high = int(match.group(2) or low) if match else -1
            if not match or high < low or (bounds and low <= bounds[-1][1]):
                self.fail(column, "ascending, disjoint intervals such as '0-3 8'")
            if high >= count:
                self.fail(column, f"unit ids below the machine's {count} units")
            bounds.append((low, high))
        return (np.concatenate([np.arange(a, b + 1, dtype=np.int64) for a, b in bounds])
                if bounds else np.zeros(0, dtype=np.int64))


def rows(path: Path, header: tuple[str, ...]) -> Iterator[Row]:
    """The rows of the CSV file `path`, whose first line must be `header`."""
    reader = None
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            first = next(reader, [])
            if tuple(first) != header:
                raise SpecError(f"{path}:1: header {shown(','.join(first))}; expected the "
                                f"columns {','.join(header)}")
            for cells in reader:
                if len(cells) != len(header):
                    raise SpecError(f"{path}:{reader.line_num}: {len(cells)} fields; "
                                    f"expected {len(header)}")
                yield Row(path, reader.line_num, dict(zip(header, cells, strict=True)))
    except (UnicodeDecodeError, csv.Error) as exc:
        line = max(1, reader.line_num) if reader is not None else 1
        raise SpecError(f"{path}:{line}: {exc}; expected CSV of UTF-8 text as simcore export "
                        "writes it") from None
