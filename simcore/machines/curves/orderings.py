"""Processor orderings of meshes and tori: the one-dimensional views curve allocators pack.

An ordering of a machine of X x Y x Z processors (Z = 1 for a 2D machine) lists every
processor once; a processor's *rank* is its position in the list (0-based) and its
*index* is x + X*y + X*Y*z, the id it has in every output. Orderings are rows of
`ORDERINGS` (name, meaning, function of the sides), or come from an *ordering file*:

    # comments and blank lines are ignored
    index rank          one line per processor: every index 0..N-1 once, ranks 0..N-1 once

the format other mesh-allocation simulators use, so that their curves load as they are.

- `row-major`: rank = index (x fastest, then y, then z): Cplant 1.9's left-to-right,
  top-to-bottom order;
- `snake` (boustrophedon): x runs back and forth along each row, the rows of a plane run
  back and forth in y, planes go up in z; consecutive ranks are always neighbours;
- `hilbert`: a Hilbert curve in as many dimensions as the machine has sides longer than
  one (2D or 3D; a line is its own curve), built on the enclosing cube of side 2^b
  (2^b >= the longest side); points outside the machine are dropped and the ranks
  renumbered. See `hilbert_points` for the construction and orientation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simcore.base.checksums import file_digest
from simcore.base.errors import SpecError
from simcore.base.regular import read_text

Sides = tuple[int, int, int]


def row_major(sides: Sides) -> np.ndarray:
    """Indices in rank order: 0, 1, ..., N-1."""
    return np.arange(sides[0] * sides[1] * sides[2], dtype=np.int64)


def snake(sides: Sides) -> np.ndarray:
    """Indices in boustrophedon order: rows alternate in x, planes alternate in y."""
    nx, ny, nz = sides
    out = []
    row = 0  # rows walked so far: their parity gives the direction in x
    for z in range(nz):
        for y in (range(ny) if z % 2 == 0 else range(ny - 1, -1, -1)):
            xs = range(nx) if row % 2 == 0 else range(nx - 1, -1, -1)
            out.extend(x + nx * y + nx * ny * z for x in xs)
            row += 1
    return np.array(out, dtype=np.int64)


def hilbert_points(bits: int, dims: int) -> np.ndarray:
    """Coordinates (2^(bits*dims), dims) of the Hilbert curve through the cube of side
    2^bits in `dims` dimensions, in curve order.

    Construction (J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004):
    the curve index h, written in binary, is dealt out bit by bit, most significant first,
    to axes 0, 1, ..., dims-1, 0, 1, ... (the "transposed" index); the axes are then
    Gray-decoded and each level's excess reflections and exchanges of axes are undone,
    from the finest level up. Orientation: the curve starts at the origin and ends at
    (2^bits - 1, 0) in 2D, (2^bits - 1, 0, 0) in 3D. For bits = 1: (0,0), (0,1), (1,1),
    (1,0) and (0,0,0), (0,0,1), (0,1,1), (0,1,0), (1,1,0), (1,1,1), (1,0,1), (1,0,0); for
    bits = 2 in 2D: (0,0), (1,0), (1,1), (0,1), (0,2), (0,3), (1,3), (1,2), (2,2), (2,3),
    (3,3), (3,2), (3,1), (2,1), (2,0), (3,0).
    """
    h = np.arange(1 << (bits * dims), dtype=np.int64)
    axes = [np.zeros_like(h) for _ in range(dims)]
    for k in range(bits * dims):  # bit k from the top of h -> axis k % dims, level k // dims
        bit = (h >> (bits * dims - 1 - k)) & 1
        axes[k % dims] |= bit << (bits - 1 - k // dims)
    top = axes[dims - 1] >> 1  # Gray decode
    for i in range(dims - 1, 0, -1):
        axes[i] ^= axes[i - 1]
    axes[0] ^= top
    q = 2
    while q < (1 << bits):  # undo the reflections and exchanges, finest level first
        low = q - 1
        for i in range(dims - 1, -1, -1):
            set_ = (axes[i] & q) != 0
            swap = np.where(set_, 0, (axes[0] ^ axes[i]) & low)
            axes[0] = np.where(set_, axes[0] ^ low, axes[0] ^ swap)
            if i:
                axes[i] = axes[i] ^ swap
        q <<= 1
    return np.stack(axes, axis=1)


def hilbert(sides: Sides) -> np.ndarray:
    """Indices along the Hilbert curve of the enclosing power-of-two cube (module
    docstring): the curve runs over the sides longer than one, in the order x, y, z."""
    long = [axis for axis in range(3) if sides[axis] > 1]
    if len(long) < 2:
        return row_major(sides)
    bits = max(int(sides[axis] - 1).bit_length() for axis in long)
    points = hilbert_points(bits, len(long))
    inside = np.ones(points.shape[0], dtype=bool)
    coords = np.zeros((points.shape[0], 3), dtype=np.int64)
    for column, axis in enumerate(long):
        coords[:, axis] = points[:, column]
        inside &= points[:, column] < sides[axis]
    coords = coords[inside]
    return coords[:, 0] + sides[0] * coords[:, 1] + sides[0] * sides[1] * coords[:, 2]


@dataclass(frozen=True)
class Ordering:
    """A registered ordering: `order(sides)` lists the processor indices in rank order."""

    name: str
    summary: str
    order: Callable[[Sides], np.ndarray]


ORDERINGS: dict[str, Ordering] = {row.name: row for row in (
    Ordering("row-major", "x fastest, then y, then z (Cplant 1.9: left to right, top to "
             "bottom)", row_major),
    Ordering("snake", "boustrophedon: x back and forth along rows, rows back and forth in "
             "y, planes up in z", snake),
    Ordering("hilbert", "Hilbert curve (2D or 3D) of the enclosing power-of-two cube, "
             "points outside the machine dropped", hilbert),
)}
DEFAULT_ORDERING = "row-major"


def describe_choices() -> str:
    """What an ordering may be, for help texts and errors."""
    return f"one of {', '.join(ORDERINGS)}, or an ordering file of 'index rank' lines"


def check_ordering(value: str) -> None:
    """Refuse an ordering that is neither a registered name nor an existing file."""
    if value not in ORDERINGS and not Path(value).is_file():
        raise SpecError(f"ordering {value!r}: no such ordering or file; expected "
                        f"{describe_choices()}")


def read_ordering_file(path: str, units: int) -> np.ndarray:
    """Indices in rank order from an ordering file of `units` processors; a SpecError
    names the file, the line and what was expected."""
    order = np.full(units, -1, dtype=np.int64)
    seen = np.zeros(units, dtype=bool)
    lines = read_text(path).splitlines()
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        try:
            index, rank = (int(f) for f in fields) if len(fields) == 2 else (None, None)
        except ValueError:
            index = rank = None
        if index is None:
            raise SpecError(f"{path}:{number}: {line.strip()!r}; expected two integers, "
                            "'index rank'")
        for name, value in (("index", index), ("rank", rank)):
            if not 0 <= value < units:
                raise SpecError(f"{path}:{number}: {name} {value}; expected 0..{units - 1} "
                                f"(the machine has {units} processors)")
        if seen[index]:
            raise SpecError(f"{path}:{number}: index {index} listed twice; expected each "
                            "processor once")
        if order[rank] >= 0:
            raise SpecError(f"{path}:{number}: rank {rank} given twice (to indices "
                            f"{order[rank]} and {index}); expected each rank once")
        seen[index] = True
        order[rank] = index
    if not seen.all():
        missing = np.flatnonzero(~seen)
        raise SpecError(f"{path}: {missing.size} processor(s) missing, e.g. index "
                        f"{missing[0]}; expected one line for each of the {units} processors")
    return order


@functools.lru_cache(maxsize=32)
def _order(ordering: str, sides: Sides, content: str) -> np.ndarray:
    if ordering in ORDERINGS:
        order = ORDERINGS[ordering].order(sides)
    else:
        order = read_ordering_file(ordering, sides[0] * sides[1] * sides[2])
    order.setflags(write=False)
    return order


def order_of(ordering: str, sides: Sides) -> np.ndarray:
    """Processor indices in rank order for a registered ordering or an ordering file
    (read again whenever its content changes)."""
    check_ordering(ordering)
    content = "" if ordering in ORDERINGS else file_digest(ordering)
    return _order(ordering, sides, content)


def write_ordering_file(path: str | Path, order: np.ndarray, comment: str = "") -> None:
    """Write indices in rank order as an ordering file (`index rank` lines, by index)."""
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    body = "".join(f"{index} {r}\n" for index, r in enumerate(rank.tolist()))
    Path(path).write_text(head + "# index rank\n" + body)
