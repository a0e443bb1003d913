"""What every allocator module shares below the registry: the contract of an allocator
module, the capabilities schedulers may ask of an allocator, and the limits on a
machine's size and tables.

Allocator modules (`simcore.machines.<family>`) import from here, never from the registry
or the spec above them, so that a run's code is only the families it uses. The registry
resolves the module of each of its rows against `AllocatorModule` once
(`AllocatorImplementation`); everything else calls the module through that object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from simcore.base.contracts import check_variant, hooks, load
from simcore.base.errors import SpecError

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

    from simcore.jobs.jobs import Jobs
    from simcore.machines.spec import MachineSpec

CAPABILITIES = {
    "counts": "any free units will do, so schedulers reason with counts alone",
    "partitions": "jobs get contiguous partitions and the largest free one is known",
    "grows": "a job may get more units than it asked for (Krevat's growth)",
    "migrates": "running jobs can be re-placed (Krevat's migration)",
    "submeshes": "jobs ask for w x h submeshes of a 2D mesh (Chu's allocators)",
    "steady": "units never fail (the machine has no failure process)",
}
STEADY = "steady"

#: Largest tables an allocator may build for one machine.
MEMORY_LIMIT_BYTES = 512 * 2**20
#: Largest machine, in allocation units (counters and sums stay exact in int64 / float64).
MAX_UNITS = 2**40


def check_memory(what: str, nbytes: int) -> None:
    """Refuse tables above MEMORY_LIMIT_BYTES before anything is allocated."""
    if nbytes > MEMORY_LIMIT_BYTES:
        size = f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"
        raise SpecError(f"{what} would take {size}; machine tables are "
                        f"limited to {MEMORY_LIMIT_BYTES // 2**20} MiB")


class AllocatorModule(Protocol):
    """An allocator module (docs/extending.md). `build` returns the machine struct the
    kernels run on (a NamedTuple with `units`, `words` and `counts_only` first), each
    job's units on this machine and its placement class (jobs of one class place alike);
    it takes its registry row's variant as keyword arguments. `memory_bytes` is what its
    tables will cost, checked before `build` runs. The module also implements the
    operations of `simcore.core.allocate` for its struct; its optional functions are
    `AllocatorHooks`."""

    def build(self, spec: MachineSpec, jobs: Jobs, /,
              **variant: Any) -> tuple[Any, np.ndarray, np.ndarray]: ...

    def memory_bytes(self, spec: MachineSpec, /) -> int: ...


class AllocatorHooks:
    """The optional functions of an allocator module, each as a module without it
    behaves."""

    @staticmethod
    def refused(spec: MachineSpec, jobs: Jobs) -> np.ndarray:
        """Which jobs the machine will not run (bool per job; a placement menu without
        their size): none."""
        return np.zeros(len(jobs), dtype=bool)

    @staticmethod
    def observables(struct: Any, span_s: float) -> dict[str, Any]:
        """Run metrics of its own, from its struct after the run (registered in
        `simcore.core.columns.RUN_METRICS`): none."""
        return {}

    @staticmethod
    def job_metrics(struct: Any, state: Any,
                    jobs: Any) -> tuple[dict[str, pa.Array], dict[str, Any]]:
        """Per-job columns and run metrics measured from the placement log: none."""
        return {}, {}

    @staticmethod
    def metrics_text(summary: Mapping[str, Any]) -> tuple[str, str] | None:
        """What the command line prints of the run metrics it measures (`job_metrics`):
        what they are (e.g. "locality") and their values in `summary`, a run's summary,
        as text; None where the run has none of them: nothing."""
        return None

    @staticmethod
    def failure_domains(struct: Any) -> tuple[np.ndarray, np.ndarray]:
        """(resource bits, units) of each domain that fails as a whole
        (`simcore.core.failures`): every unit u alone, resource bit u."""
        units = struct.units
        masks = np.zeros((units, struct.words), dtype=np.uint64)
        index = np.arange(units)
        masks[index, index >> 6] = np.uint64(1) << (index & 63).astype(np.uint64)
        return masks, np.ones(units, dtype=np.int64)


@dataclass(frozen=True)
class AllocatorImplementation:
    """An allocator's module resolved against `AllocatorModule`: the variant its registry
    row passes to `build`, and its optional functions or their defaults (`AllocatorHooks`)."""

    what: str
    module: AllocatorModule
    variant: Mapping[str, Any]
    refused: Callable[[MachineSpec, Jobs], np.ndarray]
    observables: Callable[[Any, float], dict[str, Any]]
    job_metrics: Callable[[Any, Any, Any], tuple[dict[str, pa.Array], dict[str, Any]]]
    metrics_text: Callable[[Mapping[str, Any]], tuple[str, str] | None]
    failure_domains: Callable[[Any], tuple[np.ndarray, np.ndarray]]

    @classmethod
    def resolve(cls, module: str, variant: Mapping[str, Any],
                what: str) -> AllocatorImplementation:
        """Module `module` of `what` (e.g. "allocator ff") checked against
        `AllocatorModule` and its `build` against `variant`; a SpecError names the
        module and what does not fit."""
        found = load(module, AllocatorModule, what)
        check_variant(found.build, 2, variant, what)
        optional = hooks(found, AllocatorHooks)
        return cls(what, found, variant, **optional)

    def build(self, spec: MachineSpec, jobs: Jobs) -> tuple[Any, np.ndarray, np.ndarray]:
        """The machine struct for the kernels, each job's size on it and its placement
        class, once its tables are known to fit in MEMORY_LIMIT_BYTES."""
        check_memory(f"machine {spec}", self.module.memory_bytes(spec))
        struct, size, placement_class = self.module.build(spec, jobs, **self.variant)
        return struct, np.ascontiguousarray(size, dtype=np.int64), placement_class


class KindGrammar(Protocol):
    """A machine kind's reading of its own spec argument (`kind:ARGUMENT`): the
    dimensions it describes, and the content hash of a file it names ("" if none)."""

    def parse_argument(self, argument: str, /) -> tuple[int, ...]: ...

    def argument_key(self, argument: str, /) -> str: ...


@dataclass(frozen=True, eq=False)
class UnitLayout:
    """Where a machine's units are, as a schedule's exports number them
    (`simcore.schedules.units`): the coordinates of each unit bit within `sides`, whether
    partitions wrap, and each bit's export id where the kind numbers its units itself
    (None: x fastest over the coordinates); a machine of several tori also names each
    bit's torus."""

    sides: tuple[int, ...]
    coords: np.ndarray  # (units, dims) int64: the coordinates of unit bit b
    wraps: bool
    ids: np.ndarray | None = None  # (units,) int64: the export id of unit bit b
    torus: np.ndarray | None = None  # (units,) int64: the torus of unit bit b
    torus_names: tuple[str, ...] = ()
    torus_sides: tuple[tuple[int, ...], ...] = ()


class KindHooks:
    """The optional functions of a kind's grammar module, each as a module without it
    behaves."""

    @staticmethod
    def unit_layout(argument: str) -> UnitLayout | None:
        """Where the units of the machine `argument` describes are: None, bit b is unit
        (x, y, ...) of the machine's dimensions row-major, the last coordinate fastest (as
        boxes and meshes place them)."""
        return None


class Wiring(Protocol):
    """A wired machine's description: its dimensions and its content hash."""

    dims: tuple[int, ...]

    def key(self) -> str: ...


class WiringReader(Protocol):
    """A wired kind's reader of description files (`<name>.yaml`)."""

    def load_wiring(self, path: str | Path, /) -> Wiring: ...


class OrderingModule(Protocol):
    """The processor orderings an ordered allocator packs jobs along: their names, the
    default, and the ranks of an ordering (a name or a file) on a machine's sides."""

    ORDERINGS: Mapping[str, Any]
    DEFAULT_ORDERING: str

    def order_of(self, ordering: str, sides: tuple[int, int, int], /) -> np.ndarray: ...
