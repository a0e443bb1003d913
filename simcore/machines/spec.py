"""Machine specifications: a kind, its dimensions in units, and the allocator that runs it.

Written `kind:AxBxC` (`flat:128`, `torus:4x4x8`, `mesh:8x8x5`, `bgl:8x4x4`), with the
allocator (default: the kind's, see `simcore.machines.registry`) given apart. Sizes are
allocation units: nodes, supernodes or midplanes. Wired machines (`bgl:8x4x4`,
`torus-links:8x4x4`) take their line wiring from a machine description `<kind>.yaml`,
searched in `$TORUS_SWEEP_MACHINES` and then in the repository's `config/machines`; its
content hash is part of the spec's key, so a changed wiring never reuses old results.
Allocators that pack jobs along a processor ordering (`simcore.machines.curves.orderings`) take
the ordering's name or an ordering file (`ordering`, default row-major; a file's content
hash is part of the key), and an allocator's options (its registry row's parameters) are
set per machine: `mesh:8x8x5 allocator=best-fit ordering=hilbert fallback_span=ring`.
Kinds with a grammar of their own (`slurm-torus3d:MENU.yaml`, `cubes:AxBxC:S`) keep the
text after the colon as the spec's `argument`; their registry row's grammar module turns
it into dimensions and adds the content hash of a file it names to the key. Every machine
also takes the options of a failure process (`unit_mtbf_s`, `failure_trace`, ...; see
`simcore.core.failures`); a failure trace's content hash is part of the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcore.base.checksums import file_digest
from simcore.base.errors import SpecError
from simcore.base.params import convert_all
from simcore.machines.contract import MAX_UNITS, AllocatorImplementation
from simcore.machines.descriptions import MACHINES_ENV, machines_dirs
from simcore.machines.registry import (
    ALLOCATORS,
    FAILURE_OPTIONS,
    KINDS,
    WIRED,
    Allocator,
    MachineKind,
    get_allocator,
)

_KIND = r"[a-z][a-z0-9-]*"
#: A machine written as kind:argument (a size, or what the kind's grammar reads).
MACHINE_TEXT = re.compile(rf"\A({_KIND}):(\S+)\Z")
_SPEC = re.compile(rf"\A({_KIND}):(\d+(?:x\d+)*)\Z")


@dataclass(frozen=True)
class MachineSpec:
    """A machine: its kind, dimensions in units, wiring file (wired kinds), allocator
    (empty: the kind's default), processor ordering (allocators that use one; None: the
    default), allocator options as sorted (name, value) pairs (defaults filled in) and,
    for kinds with a grammar of their own, the argument of `kind:ARGUMENT`."""

    kind: str
    dims: tuple[int, ...]
    wiring: Path | None = None
    allocator: str = ""
    ordering: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    argument: str = ""

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
        if allocator.max_dims is not None and len(self.dims) > allocator.max_dims:
            raise SpecError(f"machine {self}: allocator {self.allocator} handles at most "
                            f"{allocator.max_dims} dimensions; expected a machine such as "
                            f"{row.example}, or allocator {row.default_allocator}")
        if row.wired:
            if self.wiring is None:
                raise SpecError(f"machine {self}: a wired machine needs its description file")
            wired = tuple(row.wiring_module().load_wiring(self.wiring).dims)
            if self.dims != wired:
                raise SpecError(f"machine {self}: its description {self.wiring} wires a "
                                f"{'x'.join(map(str, wired))} machine; expected "
                                f"{self.kind}:{'x'.join(map(str, wired))}")
        if allocator.ordered:
            orderings = allocator.ordering_module()
            if self.ordering is None:
                object.__setattr__(self, "ordering", orderings.DEFAULT_ORDERING)
            try:
                orderings.order_of(self.ordering, self.dims3)
            except SpecError as exc:
                raise SpecError(f"machine {self}: {exc}") from None
        elif self.ordering is not None:
            ordered = [a.name for a in ALLOCATORS.values() if a.ordered]
            raise SpecError(f"machine {self}: allocator {self.allocator} uses no processor "
                            f"ordering; expected one of the allocators {ordered} with it")
        values = convert_all(allocator.options, dict(self.options),
                             f"machine {self}: allocator {self.allocator}")
        object.__setattr__(self, "options", tuple(sorted(values.items())))
        if values["unit_mtbf_s"] is not None and values["failure_trace"] is not None:
            raise SpecError(f"machine {self}: unit_mtbf_s and failure_trace both set; "
                            "expected one failure process")
        if values["down_fraction"] > 0 and values["failure_trace"] is not None:
            raise SpecError(f"machine {self}: down_fraction and failure_trace both set; "
                            "expected a down set drawn from the seed or a trace of outages")
        if values["on_failure"] == "drain" and "counts" not in allocator.capabilities:
            raise SpecError(f"machine {self}: on_failure: drain needs units without "
                            "identity (a flat machine): which unit a run frees is not the "
                            "one that failed; expected requeue or kill")
        if values["failure_trace"] is not None:
            from simcore.core.failures import read_trace

            read_trace(values["failure_trace"])

    @classmethod
    def parse(cls, text: str, allocator: str | None = None,
              machines_dir: str | os.PathLike[str] | None = None,
              ordering: str | None = None,
              options: Mapping[str, Any] | None = None) -> MachineSpec:
        """Parse `kind:AxBxC`; wired kinds find `<kind>.yaml`, kinds with a grammar read
        their own argument (see module docstring)."""
        head = MACHINE_TEXT.match(text.strip()) if isinstance(text, str) else None
        row = KINDS.get(head.group(1)) if head else None
        if row is not None and row.grammar is not None:
            argument = head.group(2)
            try:
                dims = tuple(row.grammar_module().parse_argument(argument))
            except SpecError as exc:
                raise SpecError(f"machine {text.strip()!r}: {exc}") from None
            return cls(row.name, dims, None, allocator or "", ordering,
                       tuple(sorted((options or {}).items())), argument)
        match = _SPEC.match(text.strip()) if isinstance(text, str) else None
        if not match:
            raise SpecError(
                f"machine {text!r}: expected kind:size such as flat:128, torus:4x4x8, "
                "mesh:8x8x5 or bgl:8x4x4, or " + ", ".join(
                    k.example for k in KINDS.values() if k.grammar is not None)
            )
        kind, size = match.groups()
        dims = tuple(int(d) for d in size.split("x"))
        wiring = None if kind in KINDS else find_wiring(kind, machines_dir)
        return cls(kind, dims, wiring, allocator or "", ordering,
                   tuple(sorted((options or {}).items())))

    @classmethod
    def from_config(cls, value: Any) -> MachineSpec:
        """A machine from config: a spec string, or a mapping with `spec` and optionally
        `allocator`, `ordering` and the allocator's options."""
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping) and isinstance(value.get("spec"), str):
            allocator = value.get("allocator")
            head = MACHINE_TEXT.match(value["spec"].strip())
            kind = KINDS.get(head.group(1)) if head else None
            row = get_allocator(allocator) if allocator is not None else \
                get_allocator(kind.default_allocator) if kind is not None else None
            known = ["spec", "allocator", "ordering", *(p.name for p in (
                row.options if row else FAILURE_OPTIONS))]
            unknown = sorted(set(value) - set(known))
            if unknown:
                raise SpecError(f"unknown key(s) {unknown}; expected {', '.join(known)}")
            options = {k: v for k, v in value.items() if k not in known[:3]}
            return cls.parse(value["spec"], allocator, ordering=value.get("ordering"),
                             options=options)
        raise SpecError(f"{value!r}: expected a spec string such as torus:4x4x8, or a "
                        "mapping {spec: ..., allocator: ..., ordering: ...}")

    def to_config(self) -> str | dict[str, Any]:
        """The inverse of `from_config` (options at their defaults left out)."""
        text = self.head
        if self.allocator == self.row.default_allocator and self.ordering is None \
                and not self.changed_options():
            return text
        config: dict[str, Any] = {"spec": text, "allocator": self.allocator}
        if self.ordering is not None:
            config["ordering"] = self.ordering
        return {**config, **self.changed_options()}

    def option(self, name: str) -> Any:
        """The value of one of the allocator's options."""
        return dict(self.options)[name]

    def changed_options(self) -> dict[str, Any]:
        """The allocator options that differ from their defaults."""
        defaults = {p.name: p.default for p in self.allocator_row.options}
        return {k: v for k, v in self.options if k in defaults and v != defaults[k]}

    def fails(self) -> bool:
        """Whether the machine has a failure process (drawn or from a trace)."""
        options = dict(self.options)
        return options.get("unit_mtbf_s") is not None or \
            options.get("failure_trace") is not None or options.get("down_fraction", 0) > 0

    def random(self) -> bool:
        """Whether simulating on it draws random numbers (its failure process)."""
        return self.fails()

    @property
    def head(self) -> str:
        """`kind:AxBxC`, or `kind:ARGUMENT` for kinds with a grammar of their own."""
        return f"{self.kind}:{self.argument or 'x'.join(map(str, self.dims))}"

    @property
    def row_name(self) -> str:
        return self.kind if self.kind in KINDS else WIRED

    @property
    def row(self) -> MachineKind:
        """The kind's registry row (every wired machine shares one)."""
        return KINDS[self.row_name]

    @property
    def allocator_row(self) -> Allocator:
        """The allocator's registry row."""
        return ALLOCATORS[self.allocator]

    @property
    def capabilities(self) -> frozenset[str]:
        """What its allocator offers schedulers (`simcore.machines.contract.CAPABILITIES`)."""
        return self.allocator_row.capabilities

    @property
    def implementation(self) -> AllocatorImplementation:
        """The allocator's module, resolved against its contract on first use: every call
        into it (build, refused jobs, metrics, failure domains) goes through this."""
        return self.allocator_row.implementation

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
    def modules(self) -> tuple[str, ...]:
        """The modules a simulation on this machine executes: its allocator's, the
        ordering's it packs along and those that read its kind's descriptions."""
        allocator = self.allocator_row
        return (allocator.module, *([allocator.ordering] if allocator.ordering else []),
                *self.row.modules)

    def dims2(self) -> tuple[int, int]:
        """(W, H) of a 2D mesh (mesh:WxH or mesh:WxHx1); any other machine is refused,
        naming the allocator."""
        dims = self.dims
        if self.kind != "mesh" or not (len(dims) == 2 or (len(dims) == 3 and dims[2] == 1)):
            raise SpecError(f"machine {self}: allocator {self.allocator} needs a 2D mesh; "
                            "expected mesh:WxH, e.g. mesh:32x32")
        return dims[0], dims[1]

    @property
    def wrap(self) -> bool:
        """Whether partitions may wrap around (torus) or not (mesh, wired machines)."""
        return self.row.wraps

    def key(self) -> str:
        """Canonical identity: the spec text plus the content hashes of the wiring and of
        an ordering file."""
        key = str(self)
        if self.wiring is not None:
            key += f"#{self.row.wiring_module().load_wiring(self.wiring).key()[:16]}"
        if self.argument:
            described = self.row.grammar_module().argument_key(self.argument)
            key += f"#{described[:16]}" if described else ""
        if self.ordering is not None and \
                self.ordering not in self.allocator_row.ordering_module().ORDERINGS:
            key += f"#ordering:{file_digest(self.ordering)[:16]}"
        trace = dict(self.options).get("failure_trace")
        if trace is not None:
            key += f"#failures:{file_digest(trace)[:16]}"
        return key

    def __str__(self) -> str:
        text = self.head
        if self.allocator and self.allocator != self.row.default_allocator:
            text += f" allocator={self.allocator}"
        if self.ordering is not None:
            text += f" ordering={self.ordering}"
        defaults = {p.name: p.default for p in ALLOCATORS[self.allocator].options} \
            if self.allocator in ALLOCATORS else {}
        text += "".join(f" {k}={v}" for k, v in self.options if defaults.get(k, v) != v)
        return text


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
