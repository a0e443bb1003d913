"""Machine specifications: `flat:N`, `torus:XxYxZ`, `mesh:XxYxZ` and wired machines.

A spec names the machine and its size in allocation units (nodes, supernodes or
midplanes). Wired machines (`bgl:8x4x4`, `torus-links:8x4x4`) take their line wiring
from a machine description `<name>.yaml`, searched in `$TORUS_SWEEP_MACHINES` and then in
the repository's `config/machines`; its content hash is part of the spec's key, so a
changed wiring never reuses old results.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from simcore.errors import SpecError

MACHINES_ENV = "TORUS_SWEEP_MACHINES"
BUILTIN_KINDS = ("flat", "torus", "mesh")
_SPEC = re.compile(r"^([a-z][a-z0-9-]*):(\d+(?:x\d+)*)$")


@dataclass(frozen=True)
class MachineSpec:
    """A machine: its kind, its dimensions in units and, if wired, its description file."""

    kind: str
    dims: tuple[int, ...]
    wiring: Path | None = None

    def __post_init__(self) -> None:
        if any(d < 1 for d in self.dims):
            raise SpecError(f"machine {self}: every dimension must be >= 1")
        if self.kind == "flat" and len(self.dims) != 1:
            raise SpecError(f"machine {self}: flat takes one size, e.g. flat:128")
        if self.kind != "flat" and not 1 <= len(self.dims) <= 3:
            raise SpecError(f"machine {self}: expected 1 to 3 dimensions, e.g. torus:4x4x8")
        if self.kind not in BUILTIN_KINDS:
            if self.wiring is None:
                raise SpecError(f"machine {self}: a wired machine needs its description file")
            from simcore.machines.wiring import load_wiring

            wired = tuple(load_wiring(self.wiring).dims)
            if self.dims != wired:
                raise SpecError(f"machine {self}: its description {self.wiring} wires a "
                                f"{'x'.join(map(str, wired))} machine; expected "
                                f"{self.kind}:{'x'.join(map(str, wired))}")

    @classmethod
    def parse(cls, text: str, machines_dir: str | os.PathLike[str] | None = None) -> MachineSpec:
        """Parse `kind:AxBxC`; wired kinds find `<kind>.yaml` (see module docstring)."""
        match = _SPEC.match(text.strip())
        if not match:
            raise SpecError(
                f"machine {text!r}: expected kind:size such as flat:128, torus:4x4x8, "
                "mesh:8x8x5 or bgl:8x4x4"
            )
        kind, size = match.groups()
        dims = tuple(int(d) for d in size.split("x"))
        if kind in BUILTIN_KINDS:
            return cls(kind, dims)
        return cls(kind, dims, find_wiring(kind, machines_dir))

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
        return self.kind == "torus"

    def key(self) -> str:
        """Canonical identity: the spec text plus the wiring's content hash."""
        if self.wiring is None:
            return str(self)
        from simcore.machines.wiring import load_wiring

        return f"{self}#{load_wiring(self.wiring).key()[:16]}"

    def __str__(self) -> str:
        return f"{self.kind}:{'x'.join(map(str, self.dims))}"


def machines_dirs(machines_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where wired machine descriptions are searched, in order."""
    dirs = [Path(machines_dir)] if machines_dir else []
    dirs += [Path(p) for p in os.environ.get(MACHINES_ENV, "").split(os.pathsep) if p]
    dirs.append(Path(__file__).resolve().parents[2] / "config" / "machines")
    return dirs


def find_wiring(kind: str, machines_dir: str | os.PathLike[str] | None = None) -> Path:
    """The description file `<kind>.yaml` of a wired machine, from `machines_dirs`."""
    searched = machines_dirs(machines_dir)
    for directory in searched:
        candidate = directory / f"{kind}.yaml"
        if candidate.is_file():
            return candidate
    raise SpecError(
        f"machine kind {kind!r}: not one of {', '.join(BUILTIN_KINDS)} and no description "
        f"{kind}.yaml in {', '.join(map(str, searched))} (set ${MACHINES_ENV})"
    )

