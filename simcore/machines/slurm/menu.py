"""Slurm topology/torus3d placement menus: the plugin's topology.yaml, read and checked.

A menu file is a topology.yaml as Slurm's `topology/torus3d` plugin reads it: a YAML list
of topologies, exactly one of which has a `torus3d` entry::

    - topology: pod
      torus3d:
        toruses:
          - name: pod1
            dims: {x: 4, y: 4, z: 2}
            nodes: node[01-32]               # x-major (x fastest); or regions:
            placements:
              - dims: {x: 2, y: 2, z: 1}     # size 4
                anchor_seed: {x: 0, y: 0, z: 0}     # optional, default 0,0,0
                anchor_spacing: {x: 2, y: 2, z: 1}  # optional, default the dims

`regions` (instead of `nodes`) map boxes of coordinates, `anchor` and `dims`, each to a
host list in x-major order; coordinates no region maps hold no node. Checks follow the
plugin's, and every error names the entry (`toruses[0] (pod1).placements[2].dims`).

Anchors, as the plugin builds them: per axis the positions seed, seed + spacing, ...
modulo the torus side until the seed comes round again; anchors are every combination,
x slowest, z fastest; an anchor's box of the placement's dims wraps around the torus. An
anchor some of whose cells hold no node is never chosen. Placements are ordered by size
(stable: equal sizes keep the file's order).

The machine's units are the nodes, numbered torus by torus in the file's order and, in a
torus, by linear index x + X*(y + Y*z) (Slurm's coordinate order).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from simcore.base.errors import SpecError
from simcore.base.regular import open_regular
from simcore.base.yamlfiles import parse_yaml
from simcore.machines.contract import UnitLayout
from simcore.machines.slurm.hostlist import expand

AXES = ("x", "y", "z")
#: Where menu files named without a directory are found, under each machine directory.
MENU_DIR = "torus3d"
#: Nodes of one torus at most: a menu lists each node's name, held in memory (Slurm's
#: largest torus3d machines hold about 10^5 nodes; 100000^3 exhausted memory).
MAX_TORUS_NODES = 2**20


@dataclass(frozen=True)
class Placement:
    """A placement shape: its dims, anchor seed and spacing, and each axis's anchor
    positions; `line` is its position in its torus's list in the file."""

    line: int
    dims: tuple[int, int, int]
    seed: tuple[int, int, int]
    spacing: tuple[int, int, int]
    positions: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

    @functools.cached_property
    def anchors(self) -> tuple[tuple[int, int, int], ...]:
        """Every anchor (x, y, z) in the plugin's order: x slowest, z fastest. Made when an
        allocator is built, not when a sweep is planned (a large torus has thousands)."""
        return tuple(itertools.product(*self.positions))  # type: ignore[arg-type]

    @property
    def count(self) -> int:
        """How many anchors it has."""
        return math.prod(map(len, self.positions))

    @property
    def size(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]


@dataclass(frozen=True, eq=False)
class Torus:
    """One torus: its name, dims, the unit of each coordinate (-1: no node) and its
    placements by size."""

    name: str
    dims: tuple[int, int, int]
    unit_of: np.ndarray  # (x*y*z,) int64, by linear index x + X*(y + Y*z)
    placements: tuple[Placement, ...]

    def cells(self, placement: Placement, anchor: tuple[int, int, int]) -> np.ndarray:
        """The units of the anchor's box (-1 for cells without a node)."""
        nx, ny, nz = self.dims
        xs = (anchor[0] + np.arange(placement.dims[0])) % nx
        ys = (anchor[1] + np.arange(placement.dims[1])) % ny
        zs = (anchor[2] + np.arange(placement.dims[2])) % nz
        linear = xs[None, None, :] + nx * (ys[None, :, None] + ny * zs[:, None, None])
        return self.unit_of[linear.ravel()]


@dataclass(frozen=True, eq=False)
class Menu:
    """A checked menu file: its toruses, content hash and node count."""

    path: Path
    digest: str
    topology: str
    toruses: tuple[Torus, ...]
    units: int

    @property
    def sizes(self) -> list[int]:
        """The sizes a job can get: of placements with an anchor whose cells all hold
        nodes, ascending."""
        return sorted({p.size for t in self.toruses for p in t.placements
                       if any((t.cells(p, a) >= 0).all()
                              for a in itertools.product(*p.positions))})


def menu_path(argument: str) -> Path:
    """The file a `slurm-torus3d:ARGUMENT` names: a path, or a file name found in the
    `torus3d/` directory of a machine directory (simcore.machines.descriptions.machines_dirs)."""
    from simcore.machines.descriptions import machines_dirs

    if Path(argument).is_file():
        return Path(argument)
    searched = [d / MENU_DIR for d in machines_dirs()]
    for directory in searched:
        if (directory / argument).is_file():
            return directory / argument
    raise SpecError(f"placement menu {argument!r}: no such file, nor in "
                    f"{', '.join(map(str, searched))}")


def load_menu(argument: str) -> Menu:
    """The menu a spec argument names, read once per process and content of the file."""
    path = menu_path(argument)
    stat = path.stat()
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


def parse_argument(argument: str) -> tuple[int]:
    """The machine's dimensions: its node count (the grammar hook of the kind)."""
    return (load_menu(argument).units,)


def argument_key(argument: str) -> str:
    """The menu file's content hash (part of the machine's key)."""
    return load_menu(argument).digest


def unit_layout(argument: str) -> UnitLayout:
    """Units torus by torus, x fastest in a torus, as the menu numbers them: each unit's
    export id is its bit (the kind's hook)."""
    menu = load_menu(argument)
    coords = np.zeros((menu.units, 3), dtype=np.int64)
    torus = np.zeros(menu.units, dtype=np.int64)
    for t, tor in enumerate(menu.toruses):
        cells = np.flatnonzero(tor.unit_of >= 0)
        units = tor.unit_of[cells]
        coords[units] = np.stack(np.unravel_index(cells, tor.dims, order="F"), axis=1)
        torus[units] = t
    sides = tuple(int(max(t.dims[d] for t in menu.toruses)) for d in range(3))
    return UnitLayout(sides, coords, True, np.arange(menu.units, dtype=np.int64), torus,
                      tuple(t.name for t in menu.toruses),
                      tuple(tuple(t.dims) for t in menu.toruses))


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int, size: int) -> Menu:
    with open_regular(path) as handle:
        data = handle.read()
    document = parse_yaml(data, path, SpecError)
    if not isinstance(document, list) or not all(isinstance(t, Mapping) for t in document):
        raise SpecError(f"{path}: expected a list of topologies (Slurm's topology.yaml)")
    found = [t for t in document if "torus3d" in t]
    if len(found) != 1:
        names = [t.get("topology") for t in found]
        raise SpecError(f"{path}: {len(found)} torus3d topologies {names}; expected one")
    entry = found[0]
    name = entry.get("topology")
    where = f"{path}: topology {name}"
    if not isinstance(name, str) or not name:
        raise SpecError(f"{path}: a torus3d topology without a name; expected 'topology: NAME'")
    _keys(entry, {"topology", "cluster_default", "torus3d"}, where)
    body = entry["torus3d"]
    if not isinstance(body, Mapping) or not isinstance(body.get("toruses"), list) \
            or not body["toruses"]:
        raise SpecError(f"{where}: torus3d: expected a mapping with a non-empty 'toruses' list")
    _keys(body, {"toruses"}, f"{where}: torus3d")
    toruses, seen_names, seen_nodes, first = [], set(), {}, 0
    for i, value in enumerate(body["toruses"]):
        torus, nodes = _torus(value, f"{where}: toruses[{i}]", first)
        if torus.name in seen_names:
            raise SpecError(f"{where}: toruses[{i}]: name {torus.name!r} defined twice")
        for node in nodes:
            if node in seen_nodes:
                raise SpecError(f"{where}: toruses[{i}] ({torus.name}): node {node} is also in "
                                f"torus {seen_nodes[node]}")
            seen_nodes[node] = torus.name
        seen_names.add(torus.name)
        toruses.append(torus)
        first += len(nodes)
    menu = Menu(Path(path), hashlib.sha256(data).hexdigest(), name, tuple(toruses), first)
    if not menu.sizes:
        raise SpecError(f"{where}: no placement has an anchor whose cells all hold nodes; "
                        "expected at least one")
    return menu


def _keys(value: Mapping[str, Any], allowed: set[str], where: str) -> None:
    stray = sorted(set(value) - allowed)
    if stray:
        raise SpecError(f"{where}: unknown key(s) {stray}; expected some of {sorted(allowed)}")


def _xyz(value: Any, where: str, minimum: int) -> tuple[int, int, int]:
    """An {x, y, z} object of integers >= minimum."""
    if not isinstance(value, Mapping) or set(value) != set(AXES) or not all(
            isinstance(value[a], int) and not isinstance(value[a], bool) and value[a] >= minimum
            for a in AXES):
        raise SpecError(f"{where}: {value!r}; expected {{x, y, z}} integers >= {minimum}")
    return value["x"], value["y"], value["z"]


def _torus(value: Any, where: str, first: int) -> tuple[Torus, list[str]]:
    """One torus entry (its units numbered from `first`) and its node names."""
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping with name, dims, nodes or regions, "
                        "placements")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}.name: expected a non-empty name")
    where = f"{where} ({name})"
    _keys(value, {"name", "dims", "nodes", "regions", "placements"}, where)
    dims = _xyz(value.get("dims"), f"{where}.dims", 1)
    nx, ny, nz = dims
    if nx * ny * nz > MAX_TORUS_NODES:
        raise SpecError(f"{where}.dims: {nx}x{ny}x{nz} = {nx * ny * nz:,} nodes; expected at "
                        f"most {MAX_TORUS_NODES:,} (2^20)")
    node_of: list[str | None] = [None] * (nx * ny * nz)
    if ("nodes" in value) == ("regions" in value):
        raise SpecError(f"{where}: expected exactly one of nodes or regions")
    if "nodes" in value:
        names = _hosts(value["nodes"], f"{where}.nodes")
        if len(names) != len(node_of):
            raise SpecError(f"{where}.nodes: {len(names)} nodes; dims "
                            f"{nx}x{ny}x{nz} need {len(node_of)}")
        node_of = list(names)
    else:
        if not isinstance(value["regions"], list) or not value["regions"]:
            raise SpecError(f"{where}.regions: expected a non-empty list")
        for r, region in enumerate(value["regions"]):
            _region(region, f"{where}.regions[{r}]", dims, node_of)
    mapped = [i for i, node in enumerate(node_of) if node is not None]
    unit_of = np.full(len(node_of), -1, dtype=np.int64)
    unit_of[mapped] = first + np.arange(len(mapped))
    raw = value.get("placements", [])
    if not isinstance(raw, list):
        raise SpecError(f"{where}.placements: expected a list")
    placements = [_placement(p, f"{where}.placements[{k}]", k, dims) for k, p in enumerate(raw)]
    placements.sort(key=lambda p: p.size)
    names = [node for node in node_of if node is not None]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}: a node is named twice")
    return Torus(name, dims, unit_of, tuple(placements)), names


def _hosts(value: Any, where: str) -> list[str]:
    try:
        return expand(value)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _region(value: Any, where: str, dims: tuple[int, int, int], node_of: list) -> None:
    """Map a region's box of coordinates to its nodes (x-major) in `node_of`."""
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping with anchor, dims, nodes")
    _keys(value, {"anchor", "dims", "nodes"}, where)
    anchor = _xyz(value.get("anchor"), f"{where}.anchor", 0)
    size = _xyz(value.get("dims"), f"{where}.dims", 1)
    if any(anchor[a] + size[a] > dims[a] for a in range(3)):
        raise SpecError(f"{where}: anchor {anchor} + dims {size} exceed the torus "
                        f"{'x'.join(map(str, dims))} (regions do not wrap)")
    names = _hosts(value.get("nodes"), f"{where}.nodes")
    if len(names) != size[0] * size[1] * size[2]:
        raise SpecError(f"{where}.nodes: {len(names)} nodes; dims need "
                        f"{size[0] * size[1] * size[2]}")
    k = 0
    for z in range(size[2]):
        for y in range(size[1]):
            for x in range(size[0]):
                linear = anchor[0] + x + dims[0] * (anchor[1] + y + dims[1] * (anchor[2] + z))
                if node_of[linear] is not None:
                    raise SpecError(f"{where}: overlaps an earlier region at "
                                    f"({anchor[0] + x}, {anchor[1] + y}, {anchor[2] + z})")
                node_of[linear] = names[k]
                k += 1


def _placement(value: Any, where: str, line: int, dims: tuple[int, int, int]) -> Placement:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping with dims")
    _keys(value, {"dims", "anchor_seed", "anchor_spacing"}, where)
    shape = _xyz(value.get("dims"), f"{where}.dims", 1)
    if any(shape[a] > dims[a] for a in range(3)):
        raise SpecError(f"{where}.dims: {'x'.join(map(str, shape))} exceed the torus "
                        f"{'x'.join(map(str, dims))}")
    seed = _xyz(value.get("anchor_seed", {"x": 0, "y": 0, "z": 0}), f"{where}.anchor_seed", 0)
    if any(seed[a] >= dims[a] for a in range(3)):
        raise SpecError(f"{where}.anchor_seed: {seed} must lie within the torus "
                        f"{'x'.join(map(str, dims))}")
    spacing = _xyz(value.get("anchor_spacing", {"x": 0, "y": 0, "z": 0}),
                   f"{where}.anchor_spacing", 0)
    spacing = tuple(s or d for s, d in zip(spacing, shape, strict=True))  # 0: the dims
    if any(spacing[a] > dims[a] for a in range(3)):
        raise SpecError(f"{where}.anchor_spacing: {spacing} must lie within the torus "
                        f"{'x'.join(map(str, dims))}")
    positions = tuple(tuple(axis_positions(dims[a], spacing[a], seed[a])) for a in range(3))
    return Placement(line, shape, seed, spacing, positions)  # type: ignore[arg-type]


def axis_positions(length: int, spacing: int, seed: int) -> list[int]:
    """Anchor positions along one axis: seed, seed + spacing, ... modulo `length`, until
    the seed comes round again (all of gcd(spacing, length)'s residue class of the seed)."""
    positions = [seed]
    pos = (seed + spacing) % length
    while pos != seed:
        positions.append(pos)
        pos = (pos + spacing) % length
    return positions


def write_fragment(topology: str, torus: str, dims: tuple[int, int, int],
                   placements: list[dict[str, Any]], nodes: str,
                   comments: list[str] = ()) -> str:
    """A ready-to-use topology.yaml fragment of one torus3d topology (one torus whose
    nodes are `nodes`, in x-major order), with `comments` above it."""
    entry = [{"topology": topology, "cluster_default": False, "torus3d": {"toruses": [{
        "name": torus, "dims": dict(zip(AXES, dims, strict=True)), "nodes": nodes,
        "placements": placements}]}}]
    head = "".join(f"# {line}\n" if line else "#\n" for line in comments)
    return head + yaml.safe_dump(entry, sort_keys=False, default_flow_style=None)
