"""Machine wiring as data, and the per-line link-set lookup tables of the BG/L allocator.

A machine is a box of allocation units (BG/L: 8x4x4 midplanes). Every unit has one switch
per dimension and no cable joins two dimensions, so the network is, per dimension, one
*line* wiring shared by every line of that dimension (Aridor et al. 2005). A line wiring is
a list of directed cables ``src.out_port -> dst.in_port`` between its switches; the
machine descriptions in ``config/machines/*.yaml`` hold it as data so that another wiring
can be swapped in.

Port model (see notes/bgl-wiring.md): a switch has the cable outputs S2/S4 and the cable
inputs S3/S5 (S0/S1 face its own unit). A partition connects its member units of one line
as a *mesh*, a directed simple path of cables, or a *torus*, a directed simple cycle;
switches on it that are not members are pass-throughs (cable in -> cable out). As no
switch appears twice on a path or cycle, the cables of a link set fix every port it uses:
two link sets whose cables are disjoint never share a port. The allocator therefore only
tracks cables, one bit per cable of a line.

Phase 2 of the paper's allocator looks up, for the set of positions a partition occupies in
a line, the link sets that connect it, fewest cables first. `link_sets` answers one query;
`build_link_table` / `link_table` precompute all 2**length queries as flat numpy arrays for
numba code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from simcore.base.atomic import atomic_path
from simcore.base.errors import SpecError
from simcore.base.yamlfiles import read_yaml

N_DIMS = 3
OUT_PORTS = ("S2", "S4")
IN_PORTS = ("S3", "S5")
MESH = 0
TORUS = 1
Topology = Literal["mesh", "torus"]
MAX_TABLE_LENGTH = 16
"""Longest line `build_link_table` accepts: the table has 2**length subsets."""
TABLE_FORMAT = 1
"""Version of the table layout and its construction; part of every cache file name."""

_TOPOLOGY_CODES = {"mesh": MESH, "torus": TORUS}
# What reading a damaged or foreign .npz can raise; such a cache file is rebuilt.
_CACHE_ERRORS = (
    OSError,
    ValueError,
    TypeError,
    KeyError,
    EOFError,
    zipfile.BadZipFile,
    struct.error,
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sha256(content: object) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Cable:
    """One directed external cable ``src.out_port -> dst.in_port`` of a line.

    `label` is an optional display name (the paper's link number); it does not change what
    the cable connects. Ranges against the line length are checked by `LineWiring`.
    """

    src: int
    out_port: str
    dst: int
    in_port: str
    label: int | str | None = None

    def __post_init__(self) -> None:
        for key, value in (("from", self.src), ("to", self.dst)):
            if not _is_int(value):
                raise SpecError(f"{key}: expected an integer position, got {value!r}")
        if self.out_port not in OUT_PORTS:
            raise SpecError(
                f"out: {self.out_port!r} is not a cable output port; expected one of "
                f"{', '.join(OUT_PORTS)}"
            )
        if self.in_port not in IN_PORTS:
            raise SpecError(
                f"in: {self.in_port!r} is not a cable input port; expected one of "
                f"{', '.join(IN_PORTS)}"
            )
        if self.src == self.dst:
            raise SpecError(
                f"to: self-loop {self.src} -> {self.dst}; a cable joins two different switches"
            )
        if self.label is not None and not (_is_int(self.label) or isinstance(self.label, str)):
            raise SpecError(f"label: expected an integer or a string, got {self.label!r}")

    def canonical(self) -> list[Any]:
        """The cable as a JSON-able list, for content hashes."""
        return [self.src, self.out_port, self.dst, self.in_port, self.label]


def _cable_name(index: int, cable: Cable) -> str:
    label = "" if cable.label is None else f" (label {cable.label!r})"
    return f"cables[{index}]{label}"


@dataclass(frozen=True)
class LineWiring:
    """The cables of one line of `length` switches at positions 0..length-1.

    Cables are indexed in file order; that index is the cable's bit in link-set masks.
    """

    length: int
    cables: tuple[Cable, ...]

    def __post_init__(self) -> None:
        if not _is_int(self.length) or self.length < 1:
            raise SpecError(f"length: expected a positive integer, got {self.length!r}")
        outs: dict[tuple[int, str], int] = {}
        ins: dict[tuple[int, str], int] = {}
        labels: dict[int | str, int] = {}
        for i, cable in enumerate(self.cables):
            name = _cable_name(i, cable)
            for key, pos in (("from", cable.src), ("to", cable.dst)):
                if not 0 <= pos < self.length:
                    raise SpecError(
                        f"{name}.{key}: {pos} is outside the line; expected a position "
                        f"0..{self.length - 1} (length {self.length})"
                    )
            for key, port, used in (
                ("out", (cable.src, cable.out_port), outs),
                ("in", (cable.dst, cable.in_port), ins),
            ):
                if port in used:
                    j = used[port]
                    raise SpecError(
                        f"{name}.{key}: port {port[0]}.{port[1]} is already used by "
                        f"{_cable_name(j, self.cables[j])}; each port carries at most one cable"
                    )
                used[port] = i
            if cable.label is not None:
                if cable.label in labels:
                    j = labels[cable.label]
                    raise SpecError(
                        f"{name}.label: {cable.label!r} is already the label of "
                        f"{_cable_name(j, self.cables[j])}; labels must be unique in a line"
                    )
                labels[cable.label] = i

    def canonical(self) -> dict[str, Any]:
        """The line as JSON-able data, for content hashes."""
        return {"length": self.length, "cables": [c.canonical() for c in self.cables]}

    def key(self) -> str:
        """sha256 of the line's canonical content; names its cached link table."""
        return _sha256(self.canonical())


@dataclass(frozen=True)
class Wiring:
    """A machine: `dims` units along each axis and one line wiring per dimension.

    `lines[d]` is the wiring of every line parallel to axis `axes[d]`; its length is
    `dims[d]`. `unit` names the allocation unit and `unit_nodes` its node count.
    """

    name: str
    dims: tuple[int, ...]
    lines: tuple[LineWiring, ...]
    axes: tuple[str, ...]
    unit: str
    unit_nodes: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SpecError(f"name: expected a non-empty string, got {self.name!r}")
        if not isinstance(self.unit, str) or not self.unit:
            raise SpecError(f"unit.name: expected a non-empty string, got {self.unit!r}")
        if not _is_int(self.unit_nodes) or self.unit_nodes < 1:
            raise SpecError(f"unit.nodes: expected a positive integer, got {self.unit_nodes!r}")
        if len(self.dims) != N_DIMS or not all(_is_int(d) and d >= 1 for d in self.dims):
            raise SpecError(
                f"dims: expected {N_DIMS} positive integers (units along x, y, z), "
                f"got {list(self.dims)!r}"
            )
        if len(self.lines) != len(self.dims):
            raise SpecError(
                f"lines: expected one line wiring per dimension ({len(self.dims)}), "
                f"got {len(self.lines)}"
            )
        seen: dict[str, int] = {}
        for d, axis in enumerate(self.axes):
            if not isinstance(axis, str) or not axis:
                raise SpecError(f"lines[{d}].axis: expected a non-empty string, got {axis!r}")
            if axis in seen:
                raise SpecError(
                    f"lines[{d}].axis: {axis!r} is already the axis of lines[{seen[axis]}]"
                )
            seen[axis] = d
        for d, (line, size) in enumerate(zip(self.lines, self.dims, strict=True)):
            if line.length != size:
                raise SpecError(
                    f"lines[{d}] ({self.axes[d]}).length: {line.length} does not match "
                    f"dims[{d}] = {size}"
                )

    def canonical(self) -> dict[str, Any]:
        """The machine as JSON-able data, independent of YAML layout and comments."""
        return {
            "name": self.name,
            "unit": self.unit,
            "unit_nodes": self.unit_nodes,
            "dims": list(self.dims),
            "axes": list(self.axes),
            "lines": [line.canonical() for line in self.lines],
        }

    def key(self) -> str:
        """sha256 of the canonical content (not of the file bytes)."""
        return _sha256(self.canonical())


def _mapping(value: object, where: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SpecError(f"{where}: expected a mapping, got {value!r}")
    keys = {str(k) for k in value}
    unknown = sorted(keys - required - optional)
    if unknown:
        raise SpecError(
            f"{where}: unknown key {unknown[0]!r}; expected keys "
            f"{', '.join(sorted(required))}"
            + (f" (optional: {', '.join(sorted(optional))})" if optional else "")
        )
    missing = sorted(required - keys)
    if missing:
        raise SpecError(f"{where}: missing key {missing[0]!r}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list, got {value!r}")
    return value


def _parse_line(raw: object, d: int) -> tuple[str, LineWiring]:
    where = f"lines[{d}]"
    doc = _mapping(raw, where, {"axis", "length", "cables"}, set())
    axis = doc["axis"]
    where = f"{where} ({axis})"
    cables = []
    for i, entry in enumerate(_list(doc["cables"], f"{where}.cables")):
        cwhere = f"{where}.cables[{i}]"
        c = _mapping(entry, cwhere, {"from", "out", "to", "in"}, {"label"})
        if c.get("label") is not None:
            cwhere += f" (label {c['label']!r})"
        try:
            cables.append(Cable(c["from"], c["out"], c["to"], c["in"], c.get("label")))
        except SpecError as exc:
            raise SpecError(f"{cwhere}.{exc}") from None
    try:
        return axis, LineWiring(doc["length"], tuple(cables))
    except SpecError as exc:
        raise SpecError(f"{where}.{exc}") from None


def _parse_wiring(doc: object) -> Wiring:
    if doc is None:
        raise SpecError("empty document; expected a machine description mapping")
    top = _mapping(doc, "top level", {"name", "unit", "dims", "lines"}, {"description"})
    unit = _mapping(top["unit"], "unit", {"name", "nodes"}, set())
    dims = tuple(_list(top["dims"], "dims"))
    parsed = [_parse_line(raw, d) for d, raw in enumerate(_list(top["lines"], "lines"))]
    return Wiring(
        name=top["name"],
        dims=dims,
        lines=tuple(line for _, line in parsed),
        axes=tuple(axis for axis, _ in parsed),
        unit=unit["name"],
        unit_nodes=unit["nodes"],
    )


def load_wiring(path: str | os.PathLike[str]) -> Wiring:
    """Read and validate a machine description (``config/machines/*.yaml``), parsed once per
    process while the file stays the same.

    Raises SpecError naming the file, the offending key or entry and what was expected.
    """
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read machine description: {exc}") from exc
    return _load_wiring(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _load_wiring(path: Path, mtime_ns: int, size: int) -> Wiring:
    doc = read_yaml(path, SpecError)
    try:
        return _parse_wiring(doc)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None


@functools.lru_cache(maxsize=32)
def _walks(line: LineWiring) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int]]]:
    """Every simple directed path and cycle of the line's cable graph, as bitmasks.

    Paths (at least one cable) are ``(switch_mask, first, last, cable_mask)``; cycles are
    ``(switch_mask, cable_mask)``, each found once (from its lowest switch).
    """
    out_edges: list[list[tuple[int, int]]] = [[] for _ in range(line.length)]
    for i, cable in enumerate(line.cables):
        out_edges[cable.src].append((i, cable.dst))
    paths: list[tuple[int, int, int, int]] = []
    cycles: list[tuple[int, int]] = []

    def extend(first: int, node: int, switches: int, cables: int) -> None:
        for index, nxt in out_edges[node]:
            used = cables | (1 << index)
            if switches >> nxt & 1:
                if nxt == first and switches & -switches == 1 << first:
                    cycles.append((switches, used))
                continue
            paths.append((switches | 1 << nxt, first, nxt, used))
            extend(first, nxt, switches | 1 << nxt, used)

    for start in range(line.length):
        extend(start, start, 1 << start, 0)
    return paths, cycles


def _order(cables: int) -> tuple[int, list[int]]:
    """Sort key of link sets: fewest cables first, then the sorted cable indices."""
    return cables.bit_count(), _indices(cables)


def _indices(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def _topology_code(topology: str) -> int:
    try:
        return _TOPOLOGY_CODES[topology]
    except KeyError:
        raise SpecError(f"topology: {topology!r}; expected 'mesh' or 'torus'") from None


def link_sets(
    line: LineWiring, members: frozenset[int], topology: Topology
) -> list[frozenset[int]]:
    """All distinct cable-index sets that connect exactly `members` of `line` as `topology`.

    mesh: a simple directed path starting and ending at members and visiting each member
    once; torus: a simple directed cycle visiting each member. Other switches on it are
    pass-throughs. One member needs no cable (the single empty set); no member, no set.
    Sorted by number of cables, ties by the sorted tuple of cable indices (file order).
    """
    code = _topology_code(topology)
    outside = sorted(p for p in members if not (_is_int(p) and 0 <= p < line.length))
    if outside:
        raise SpecError(f"members: {outside} outside the line 0..{line.length - 1}")
    mask = sum(1 << p for p in set(members))
    if mask == 0:
        return []
    if mask & (mask - 1) == 0:
        return [frozenset()]
    paths, cycles = _walks(line)
    if code == MESH:
        found = {
            cables
            for switches, first, last, cables in paths
            if mask & ~switches == 0 and mask >> first & 1 and mask >> last & 1
        }
    else:
        found = {cables for switches, cables in cycles if mask & ~switches == 0}
    return [frozenset(_indices(c)) for c in sorted(found, key=_order)]


@dataclass(frozen=True, eq=False)
class LinkTable:
    """Every subset of a line's positions -> its mesh and torus link sets, as flat arrays.

    Row ``r = (subset << 1) | topology`` (subset: bitmask of positions, bit p = position p;
    topology: MESH = 0, TORUS = 1) owns the link sets ``offsets[r] : offsets[r + 1]``.
    Within a row, link sets are sorted as in `link_sets` (fewest cables first).

    - offsets: int64, shape (2**(length + 1) + 1,), CSR row starts; offsets[0] == 0.
    - cable_masks: uint64, shape (n_sets,), bit i set iff the line's cable i (file order)
      is in the link set. A set is free in a line iff ``cable_masks[k] & busy == 0``.
    - n_cables: int64, shape (n_sets,), cables per link set (popcount of cable_masks).

    Subset 0 has no link sets; a one-position subset has exactly one, the empty set
    (mask 0), for both topologies. The arrays are read-only. `key` is the line's content
    hash, `length` its number of positions, `n_line_cables` its number of cables.
    """

    key: str
    length: int
    n_line_cables: int
    offsets: np.ndarray
    cable_masks: np.ndarray
    n_cables: np.ndarray

    def masks(self, members: frozenset[int], topology: Topology) -> np.ndarray:
        """The cable masks of one row (a view into `cable_masks`)."""
        row = (sum(1 << p for p in set(members)) << 1) | _topology_code(topology)
        return self.cable_masks[self.offsets[row] : self.offsets[row + 1]]

    def sets(self, members: frozenset[int], topology: Topology) -> list[frozenset[int]]:
        """One row decoded to cable-index sets, for use outside numba code."""
        return [frozenset(_indices(int(m))) for m in self.masks(members, topology)]


def _table(
    key: str,
    length: int,
    n_line_cables: int,
    offsets: np.ndarray,
    cable_masks: np.ndarray,
    n_cables: np.ndarray,
) -> LinkTable:
    for array in (offsets, cable_masks, n_cables):
        array.setflags(write=False)
    return LinkTable(key, length, n_line_cables, offsets, cable_masks, n_cables)


def build_link_table(line: LineWiring) -> LinkTable:
    """Compute the link sets of every subset of `line` (what `link_sets` returns, for all)."""
    n = line.length
    if n > MAX_TABLE_LENGTH:
        raise SpecError(
            f"length: a link table needs 2**length rows; {n} exceeds the limit {MAX_TABLE_LENGTH}"
        )
    if len(line.cables) > 64:
        raise SpecError(f"cables: {len(line.cables)} cables do not fit a uint64 mask (max 64)")
    rows: list[set[int]] = [set() for _ in range(2 << n)]
    for p in range(n):
        rows[(1 << p) << 1 | MESH].add(0)
        rows[(1 << p) << 1 | TORUS].add(0)
    paths, cycles = _walks(line)
    for switches, first, last, cables in paths:
        ends = 1 << first | 1 << last
        inner = switches & ~ends
        sub = inner
        while True:  # every member set with these ends: ends + any subset of the inner switches
            rows[(sub | ends) << 1 | MESH].add(cables)
            if sub == 0:
                break
            sub = (sub - 1) & inner
    for switches, cables in cycles:
        sub = switches
        while sub:  # every member set of two or more of the cycle's switches
            if sub & (sub - 1):
                rows[sub << 1 | TORUS].add(cables)
            sub = (sub - 1) & switches
    ordered = [sorted(row, key=_order) for row in rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(row) for row in ordered])
    flat = [m for row in ordered for m in row]
    return _table(
        line.key(),
        n,
        len(line.cables),
        offsets,
        np.array(flat, dtype=np.uint64),
        np.array([m.bit_count() for m in flat], dtype=np.int64),
    )


def _cache_path(line: LineWiring, cache_dir: Path) -> Path:
    return cache_dir / f"linktable-v{TABLE_FORMAT}-{line.key()}.npz"


def _popcounts(masks: np.ndarray) -> np.ndarray:
    return np.unpackbits(masks.view(np.uint8)).reshape(-1, 64).sum(axis=1, dtype=np.int64)


def _read_cached(path: Path, line: LineWiring) -> LinkTable:
    """Load a cached table; ValueError if it is not a consistent table of `line`."""
    with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
        key = str(data["key"])
        offsets = np.array(data["offsets"])
        cable_masks = np.array(data["cable_masks"])
        n_cables = np.array(data["n_cables"])
    rows = 2 << line.length
    full = np.uint64((1 << len(line.cables)) - 1)
    if (
        key != line.key()
        or offsets.dtype != np.int64
        or cable_masks.dtype != np.uint64
        or n_cables.dtype != np.int64
        or offsets.shape != (rows + 1,)
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
        or cable_masks.shape != (offsets[-1],)
        or n_cables.shape != cable_masks.shape
        or np.any(cable_masks & ~full)
        or np.any(_popcounts(cable_masks) != n_cables)
    ):
        raise ValueError(f"{path}: not a link table of line {line.key()}")
    return _table(key, line.length, len(line.cables), offsets, cable_masks, n_cables)


def link_table(line: LineWiring, cache_dir: str | os.PathLike[str]) -> LinkTable:
    """`build_link_table`, cached in `cache_dir` under the line's content hash.

    An unreadable or inconsistent cache file is rebuilt and replaced, never trusted.
    """
    path = _cache_path(line, Path(cache_dir))
    if path.exists():
        try:
            return _read_cached(path, line)
        except _CACHE_ERRORS:
            pass  # a corrupt cache is rebuilt below
    table = build_link_table(line)
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.savez(
            fh,
            key=np.array(table.key),
            offsets=table.offsets,
            cable_masks=table.cable_masks,
            n_cables=table.n_cables,
        )
    return table
