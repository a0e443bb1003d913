"""One numbering of a machine's units for the exports of a schedule.

Every machine kind numbers the bits of its placement masks its own way: boxes, meshes,
BG/L midplanes and the chips of a cube grid row-major with the last coordinate fastest
(`(x*Y + y)*Z + z`; a 2D mesh `x*H + y`), cubes cube by cube, curve allocators by rank
along their ordering, placement menus torus by torus. Exports use one rule for all kinds:

- an export id counts units with x fastest, id = x + X*(y + Y*z) (further dimensions
  likewise, each slower than the one before), over the machine's unit coordinates (a
  cube machine's chips over the whole AxS x BxS x CxS grid);
- a placement menu's units are numbered torus by torus in the file's order and, in a
  torus, the same way, cells without a node skipped (the menu's own numbering);
- a curve allocator's units keep their processor index (x fastest), and `curve_rank`
  gives each one's rank along the machine's ordering;
- a flat machine's units have no identity: its ids are a packing (each run takes the
  lowest free ids), not a placement;
- a wired (BG/L) machine's units are its midplanes: the cable bits after them are no
  units.

Nothing here names a kind: a kind whose bits are not row-major says where its units are
with its grammar module's `unit_layout` (`simcore.machines.contract.UnitLayout`: cubes,
menus), a kind whose units have no identity is `packed` on its row (flat), and an
allocator with an ordering numbers by its ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

#: Names of the coordinate columns, x first (a fourth dimension and beyond: d3, d4, ...).
AXES = ("x", "y", "z")


@dataclass(frozen=True, eq=False)
class Numbering:
    """Export ids of a machine's units: their coordinates, the mask bit each comes from
    (None on a flat machine, whose ids are a packing) and, where the allocator packs along
    an ordering, each id's rank along it; menus also name each id's torus."""

    sides: tuple[int, ...]  # extent of each coordinate (a menu: its largest torus's)
    coords: np.ndarray  # (units, dims) int64: the coordinates of export id i
    id_of_bit: np.ndarray | None  # (units,) int64: the export id of unit bit b
    wraps: bool  # partitions may wrap around (a torus)
    curve_rank: np.ndarray | None = None  # (units,) int64: rank of id i along the ordering
    torus: np.ndarray | None = None  # (units,) int64: menus, the torus of id i
    torus_names: tuple[str, ...] = ()
    torus_sides: tuple[tuple[int, ...], ...] = ()  # menus: each torus's dims

    @property
    def units(self) -> int:
        return int(self.coords.shape[0])

    @property
    def packing(self) -> bool:
        """Whether ids are a packing (a flat machine) rather than a placement."""
        return self.id_of_bit is None

    @property
    def axes(self) -> tuple[str, ...]:
        """The coordinate column names, x first."""
        return tuple(AXES[d] if d < len(AXES) else f"d{d}" for d in range(len(self.sides)))

    def ids(self, unit_bits: np.ndarray) -> np.ndarray:
        """The sorted export ids of the units set in `unit_bits` (bool, one per unit bit)."""
        assert self.id_of_bit is not None, "a flat machine's units have no bits"
        return np.sort(self.id_of_bit[np.flatnonzero(unit_bits[: self.units])])

    def box(self, ids: np.ndarray) -> str:
        """`x,y,z:AxBxC`, the box the ids fill exactly (its origin, then its sides; on a
        torus the box may wrap around, its origin then past the wrap), a menu's prefixed
        by its torus name; "" where they fill no box, or have no place (a flat machine)."""
        if self.packing or ids.size == 0:
            return ""
        sides, prefix = self.sides, ""
        if self.torus is not None:
            toruses = np.unique(self.torus[ids])
            if toruses.size > 1:
                return ""
            sides = self.torus_sides[int(toruses[0])]
            prefix = f"{self.torus_names[int(toruses[0])]} "
        origin, extent = [], []
        for d, side in enumerate(sides):
            low, length = _arc(np.unique(self.coords[ids, d]), side, self.wraps)
            origin.append(low)
            extent.append(length)
        if int(np.prod(extent)) != ids.size:
            return ""
        return f"{prefix}{','.join(map(str, origin))}:{'x'.join(map(str, extent))}"


def _arc(used: np.ndarray, side: int, wraps: bool) -> tuple[int, int]:
    """(first, length) of the shortest run of positions holding `used` (sorted), around
    the ring of `side` positions where `wraps` (the run after the widest gap; the first
    such gap on ties)."""
    if not wraps or used.size == side:
        return (int(used[0]), int(used[-1] - used[0] + 1)) if not wraps else (0, side)
    gaps = np.diff(np.r_[used, used[0] + side]) - 1
    widest = int(np.argmax(gaps))
    return int(used[(widest + 1) % used.size]), int(side - gaps[widest])


def numbering(spec: MachineSpec) -> Numbering:
    """The export numbering of `spec`'s units (module docstring): a packing where the
    kind's units have no identity (`packed`), the ordering's ranks where the allocator packs
    along one, else where the kind's row puts them (`MachineKind.unit_layout`), row-major
    by default."""
    if spec.row.packed:
        return Numbering((spec.units,), np.arange(spec.units, dtype=np.int64)[:, None], None,
                         False)
    if spec.allocator_row.ordered:
        return _curve(spec)
    layout = spec.row.unit_layout(spec.argument)
    if layout is None:
        return _row_major(spec.dims, spec.wrap)
    ids = x_fastest(layout.coords, layout.sides) if layout.ids is None else layout.ids
    coords = np.empty_like(layout.coords)
    coords[ids] = layout.coords
    torus = None
    if layout.torus is not None:
        torus = np.empty_like(layout.torus)
        torus[ids] = layout.torus
    return Numbering(layout.sides, coords, ids, layout.wraps, torus=torus,
                     torus_names=layout.torus_names, torus_sides=layout.torus_sides)


def x_fastest(coords: np.ndarray, sides: tuple[int, ...]) -> np.ndarray:
    """The id of each row of coordinates: x + X*(y + Y*z) and so on."""
    return np.ravel_multi_index(tuple(coords.T), sides, order="F").astype(np.int64)


def _from_bits(bit_coords: np.ndarray, sides: tuple[int, ...], wraps: bool) -> Numbering:
    """A numbering from the coordinates of each unit bit."""
    id_of_bit = x_fastest(bit_coords, sides)
    coords = np.empty_like(bit_coords)
    coords[id_of_bit] = bit_coords
    return Numbering(sides, coords, id_of_bit, wraps)


def _row_major(dims: tuple[int, ...], wraps: bool) -> Numbering:
    """Boxes, 2D meshes and BG/L midplanes: bit b is unit (x, y, ...) row-major, the last
    coordinate fastest."""
    bits = np.arange(int(np.prod(dims)), dtype=np.int64)
    return _from_bits(np.stack(np.unravel_index(bits, dims), axis=1).astype(np.int64),
                      tuple(dims), wraps)


def _curve(spec: MachineSpec) -> Numbering:
    """Curve allocators: bit r is the processor of rank r, whose index x + X*y + X*Y*z is
    its export id."""
    assert spec.ordering is not None  # MachineSpec names the default ordering if none is given
    order = spec.allocator_row.ordering_module().order_of(spec.ordering, spec.dims3)
    sides = tuple(spec.dims)
    ids = np.arange(spec.units, dtype=np.int64)
    coords = np.stack(np.unravel_index(ids, sides, order="F"), axis=1).astype(np.int64)
    rank = np.empty(spec.units, dtype=np.int64)
    rank[order] = ids
    return Numbering(sides, coords, np.asarray(order, dtype=np.int64), spec.wrap, rank)
