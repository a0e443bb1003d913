"""Machine specifications: a kind, its dimensions in units, and the allocator that runs it.

Written `kind:AxBxC` (`flat:128`, `torus:4x4x8`, `mesh:8x8x5`, `bgl:8x4x4`), with the
allocator (default: the kind's, see `simcore.machines.registry`) given apart. Sizes are
allocation units: nodes, supernodes or midplanes. Wired machines (`bgl:8x4x4`,
`torus-links:8x4x4`) take their line wiring from a machine description `<kind>.yaml`,
searched in `$TORUS_SWEEP_MACHINES` and then in the repository's `config/machines`; its
content hash is part of the spec's key, so a changed wiring never reuses old results.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcore.errors import SpecError
from simcore.machines.registry import (
    ALLOCATORS,
    KINDS,
    MAX_UNITS,
    WIRED,
    MachineKind,
    get_allocator,
)
from simcore.patterns import MACHINE_DESCRIPTIONS

MACHINES_ENV = "TORUS_SWEEP_MACHINES"
_SPEC = re.compile(r"^([a-z][a-z0-9-]*):(\d+(?:x\d+)*)$")


@dataclass(frozen=True)
class MachineSpec:
    """A machine: its kind, dimensions in units, wiring file (wired kinds) and allocator
    (empty: the kind's default)."""

    kind: str
    dims: tuple[int, ...]
    wiring: Path | None = None
    allocator: str = ""

    def __post_init__(self) -> None:
        row = self.row
        if any(d < 1 for d in self.dims):
            raise SpecError(f"machine {self}: every dimension must be >= 1")
        low, high = row.min_dims, row.max_dims
        if len(self.dims) < low or (high is not None and len(self.dims) > high):
            count = f"{low}" if low == high else f"{low} to {high}" if high else f"{low} or more"
            raise SpecError(f"machine {self}: expected {count} dimension(s), e.g. {row.example}")
        if self.units > MAX_UNITS:
            raise SpecError(f"machine {self}: {self.units} units; expected at most 2^40")
        if not self.allocator:
            object.__setattr__(self, "allocator", row.default_allocator)
        allocator = get_allocator(self.allocator)
        if self.row_name not in allocator.kinds:
            usable = [a.name for a in ALLOCATORS.values() if self.row_name in a.kinds]
            raise SpecError(f"machine {self}: allocator {self.allocator} works on "
                            f"{', '.join(allocator.kinds)} machines; expected one of {usable}")
        if row.wired:
            if self.wiring is None:
                raise SpecError(f"machine {self}: a wired machine needs its description file")
            from simcore.machines.wiring import load_wiring

            wired = tuple(load_wiring(self.wiring).dims)
            if self.dims != wired:
                raise SpecError(f"machine {self}: its description {self.wiring} wires a "
                                f"{'x'.join(map(str, wired))} machine; expected "
                                f"{self.kind}:{'x'.join(map(str, wired))}")

    @classmethod
    def parse(cls, text: str, allocator: str | None = None,
              machines_dir: str | os.PathLike[str] | None = None) -> MachineSpec:
        """Parse `kind:AxBxC`; wired kinds find `<kind>.yaml` (see module docstring)."""
        match = _SPEC.match(text.strip()) if isinstance(text, str) else None
        if not match:
            raise SpecError(
                f"machine {text!r}: expected kind:size such as flat:128, torus:4x4x8, "
                "mesh:8x8x5 or bgl:8x4x4"
            )
        kind, size = match.groups()
        dims = tuple(int(d) for d in size.split("x"))
        wiring = None if kind in KINDS else find_wiring(kind, machines_dir)
        return cls(kind, dims, wiring, allocator or "")

    @classmethod
    def from_config(cls, value: Any) -> MachineSpec:
        """A machine from config: a spec string, or a mapping with `spec` and optionally
        `allocator`."""
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping) and isinstance(value.get("spec"), str):
            unknown = sorted(set(value) - {"spec", "allocator"})
            if unknown:
                raise SpecError(f"unknown key(s) {unknown}; expected spec, allocator")
            return cls.parse(value["spec"], value.get("allocator"))
        raise SpecError(f"{value!r}: expected a spec string such as torus:4x4x8, or a "
                        "mapping {spec: ..., allocator: ...}")

    def to_config(self) -> str | dict[str, str]:
        """The inverse of `from_config`."""
        text = f"{self.kind}:{'x'.join(map(str, self.dims))}"
        if self.allocator == self.row.default_allocator:
            return text
        return {"spec": text, "allocator": self.allocator}

    @property
    def row_name(self) -> str:
        return self.kind if self.kind in KINDS else WIRED

    @property
    def row(self) -> MachineKind:
        """The kind's registry row (every wired machine shares one)."""
        return KINDS[self.row_name]

    @property
    def units(self) -> int:
        """Number of allocation units."""
        total = 1
        for d in self.dims:
            total *= d
        return total

    @property
    def dims3(self) -> tuple[int, int, int]:
        """Dimensions padded to three (a 2D mesh 8x8 is 8x8x1)."""
        return (*self.dims, *([1] * (3 - len(self.dims))))  # type: ignore[return-value]

    @property
    def wrap(self) -> bool:
        """Whether partitions may wrap around (torus) or not (mesh, wired machines)."""
        return self.row.wraps

    def key(self) -> str:
        """Canonical identity: the spec text plus the wiring's content hash."""
        if self.wiring is None:
            return str(self)
        from simcore.machines.wiring import load_wiring

        return f"{self}#{load_wiring(self.wiring).key()[:16]}"

    def __str__(self) -> str:
        text = f"{self.kind}:{'x'.join(map(str, self.dims))}"
        if self.allocator and self.allocator != self.row.default_allocator:
            text += f" allocator={self.allocator}"
        return text


def machines_dirs(machines_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where wired machine descriptions are searched, in order."""
    dirs = [Path(machines_dir)] if machines_dir else []
    dirs += [Path(p) for p in os.environ.get(MACHINES_ENV, "").split(os.pathsep) if p]
    dirs.append(MACHINE_DESCRIPTIONS)
    return dirs


def find_wiring(kind: str, machines_dir: str | os.PathLike[str] | None = None) -> Path:
    """The description file `<kind>.yaml` of a wired machine, from `machines_dirs`."""
    searched = machines_dirs(machines_dir)
    for directory in searched:
        candidate = directory / f"{kind}.yaml"
        if candidate.is_file():
            return candidate
    raise SpecError(
        f"machine kind {kind!r}: not one of {', '.join(k for k in KINDS if k != WIRED)} and "
        f"no description {kind}.yaml in {', '.join(map(str, searched))} (set ${MACHINES_ENV})"
    )
