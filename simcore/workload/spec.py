"""The workload transforms: a field of `WorkloadSpec` each, defined by a `Parameter` (what a
config's `transforms:` and `grid:` take; `simcore list transforms`).

This is a registry. The built-in transforms are applied by `simcore.workload.transforms
.prepare`, in the order its docstring gives; a transform whose field names a `module`
(`TransformModule`) is an extension, applied by its own module after them wherever its value
differs from its neutral one (the value that leaves jobs unchanged, by default its default).
A run's key holds the values of every built-in transform and of the extensions that act in
the run, so adding an extension whose default is neutral re-simulates nothing; a built-in
transform added after run keys were first stored is held, like an extension, only where it
acts (`keyed` False), so that adding it changes no other run's key. A renamed
transform keeps its first name in run keys and is still read under it (RENAMED), so that
results stored before the rename stay cached and older configurations keep working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from simcore.base.errors import SpecError
from simcore.base.params import Parameter
from simcore.jobs.bsp import MODELS as BSP_MODELS
from simcore.jobs.bsp import RANDOM_GRANULARITY_S
from simcore.jobs.submeshes import RULES

if TYPE_CHECKING:
    from simcore.jobs.jobs import Jobs
    from simcore.machines.spec import MachineSpec

#: Where an experiment sets a transform: once (`transforms:`) or as a grid axis (`grid:`).
FIXED, GRID = "transforms", "grid"

class TransformModule(Protocol):
    """The module of an extension transform: `apply(jobs, value, machine, seed)` returns
    the jobs transformed for `value` (drawing, if at all, from `seed`)."""

    def apply(self, jobs: Jobs, value: Any, machine: MachineSpec, seed: int, /) -> Jobs: ...


def _transform(parameter: Parameter, shaped: bool = False, draws: bool = False,
               module: str | None = None, neutral: Any = None, keyed: bool = True) -> Field:
    """A WorkloadSpec field defined by `parameter`. `shaped`: it only matters on machines
    whose jobs ask for shapes, and values strictly between 0 and 1 draw random numbers.
    `draws`: any value but null draws random numbers. `module`: an extension transform's
    module (`TransformModule`), which acts where the value is not `neutral` (None: the
    parameter's default). `keyed`: a built-in transform held in every run key (False: only
    where its value is not neutral, as an extension is)."""
    return field(default=parameter.default, metadata={
        "parameter": parameter, "shaped": shaped, "draws": draws, "module": module,
        "neutral": parameter.default if neutral is None else neutral,
        "keyed": keyed and module is None})


@dataclass(frozen=True)
class WorkloadSpec:
    """How a job table becomes the jobs of one simulation (see the module docstring)."""

    insert_per_h: float = _transform(Parameter(
        "insert_per_h", float, 0.0, "one-processor jobs inserted per hour of the source's "
        "arrival span at seeded uniform times, before the span is taken (the NASA log's "
        "24,025 removed one-node jobs: 10.9)", unit="jobs/h", minimum=0.0))
    insert_run_s: float = _transform(Parameter(
        "insert_run_s", float, 60.0, "run (and requested) time of each inserted job (the "
        "NASA log keeps none of the removed jobs' times)",
        unit="s", minimum=0.0, exclusive_minimum=True))
    skip_jobs: int = _transform(Parameter(
        "skip_jobs", int, 0, "jobs skipped at the start of the source", unit="jobs",
        minimum=0))
    first_jobs: int | None = _transform(Parameter(
        "first_jobs", int, None, "jobs kept after them (Krevat: 10,000); null: all",
        unit="jobs", minimum=1, optional=True))
    processors_per_unit: int = _transform(Parameter(
        "processors_per_unit", int, 1, "processors per allocation unit; sizes are divided "
        "and rounded up (CTC on BG/L midplanes: 4)", unit="procs/unit", minimum=1))
    fit_to_machine: bool = _transform(Parameter(
        "fit_to_machine", bool, False, "sizes mapped onto the machine: processors x machine "
        "units / the workload's MaxProcs, rounded up (any granularity, e.g. a trace at "
        "node level)"))
    replication: int = _transform(Parameter(
        "replication", int, 1, "copies of every job (Leung et al.'s replication factor); "
        "copies after the first arrive up to replication_jitter_s later", unit="copies",
        minimum=1))
    replication_jitter_s: float = _transform(Parameter(
        "replication_jitter_s", float, 60.0, "largest arrival delay of a job's copies "
        "(uniform, seeded)", unit="s", minimum=0.0))
    arrival_shake_s: float = _transform(Parameter(
        "arrival_shake_s", float, 0.0, "largest move of an arrival, earlier or later "
        "(uniform, seeded; input shaking: seeds sample how much a result owes to exact "
        "arrival times)", unit="s", minimum=0.0))
    runtime_scale: float = _transform(Parameter(
        "runtime_scale", float, 1.0, "run and requested times multiplied by this (Krevat's "
        "c, Leung et al.'s work multiple)", unit="factor", minimum=0.0,
        exclusive_minimum=True))
    estimate_factor: float | None = _transform(Parameter(
        "estimate_factor", float, None, "requested times drawn as run x U(1, f), the f-model "
        "of user estimates (Mu'alem and Feitelson 2001), after runtime scaling; null: the "
        "source's own (or none)", unit="factor", minimum=1.0, optional=True), draws=True)
    offered_load: float | None = _transform(Parameter(
        "offered_load", float, None, "arrivals rescaled so that sum(size x run) / (units x "
        "arrival span) is this (Aridor); null: arrivals kept", unit="fraction", minimum=0.0,
        exclusive_minimum=True, optional=True))
    p_fat: float = _transform(Parameter(
        "p_fat", float, 0.0, "probability that a job's shape is fat (sides >= 2) rather than "
        "slim (Aridor)", unit="prob", minimum=0.0, maximum=1.0), shaped=True)
    p_torus: float = _transform(Parameter(
        "p_torus", float, 0.0, "probability that a job wants a torus rather than a mesh "
        "(Aridor)", unit="prob", minimum=0.0, maximum=1.0), shaped=True)
    slim_size: str = _transform(Parameter(
        "slim_size", str, "own", "a slim job's size: its own, or its fat shape's volume, so "
        "that slim and fat jobs have the same sizes and differ in shape only (Aridor's "
        "Figure 8)", choices=("own", "fat")), shaped=True)
    machine_fit: str = _transform(Parameter(
        "machine_fit", str, "reject", "jobs larger than the machine after size scaling: "
        "reject (an error), drop or clamp (to the machine), counted either way (not the "
        "trace cleaning rule `oversize`, which compares sizes with the trace's MaxProcs; "
        "alias: oversize)", choices=("reject", "drop", "clamp")))
    mesh_shape: str = _transform(Parameter(
        "mesh_shape", str, "squarest", "w x h of jobs whose workload gives none, on 2D meshes "
        "with submesh allocators: squarest (the squarest least-area rectangle holding the "
        "size) or square (the smallest k x k)", choices=RULES))
    warmup_jobs: int = _transform(Parameter(
        "warmup_jobs", int, 0, "jobs at the start of the span that are simulated but left "
        "out of the job statistics (Chu: 1000)", unit="jobs", minimum=0))
    bsp_model: str | None = _transform(Parameter(
        "bsp_model", str, None, "BSP job model (pattern, granularity, imbalance) drawn for "
        "each job, for time-sharing schedulers: 'random' (docs/timesharing.md); null: the "
        "source's own, if any", choices=tuple(BSP_MODELS), optional=True), draws=True)
    bsp_granularity_min_s: float = _transform(Parameter(
        "bsp_granularity_min_s", float, RANDOM_GRANULARITY_S[0], "least compute per "
        "iteration of the 'random' BSP model (log-uniform up to bsp_granularity_max_s)",
        unit="s", minimum=0.0, exclusive_minimum=True), keyed=False)
    bsp_granularity_max_s: float = _transform(Parameter(
        "bsp_granularity_max_s", float, RANDOM_GRANULARITY_S[1], "greatest compute per "
        "iteration of the 'random' BSP model", unit="s", minimum=0.0,
        exclusive_minimum=True), keyed=False)

    def __post_init__(self) -> None:
        for f in _FIELDS:  # 1 and 1.0 must be one run: one canonical type
            value = getattr(self, f.name)
            if value is f.default:  # left out: the default is canonical already
                continue
            try:
                object.__setattr__(self, f.name, f.metadata["parameter"].convert(value))
            except SpecError as exc:
                raise SpecError(f"workload transform {exc}") from None
        self._check_granularity()

    def _check_granularity(self) -> None:
        """The granularity range is a range, of a model that draws granularities."""
        low, high = self.bsp_granularity_min_s, self.bsp_granularity_max_s
        if low > high:
            raise SpecError(f"workload transform bsp_granularity_min_s={low!r} above "
                            f"bsp_granularity_max_s={high!r}; expected min <= max")
        if self.bsp_model != "random" and (low, high) != RANDOM_GRANULARITY_S:
            changed = "bsp_granularity_min_s" if low != RANDOM_GRANULARITY_S[0] \
                else "bsp_granularity_max_s"
            raise SpecError(f"workload transform {changed}={getattr(self, changed)!r} with "
                            f"bsp_model={self.bsp_model!r}: no random BSP model to draw "
                            "granularities for; expected bsp_model: random")

    def to_dict(self) -> dict[str, Any]:
        """Every transform parameter by name (all plain values)."""
        return {f.name: getattr(self, f.name) for f in _FIELDS}

    def identity(self) -> dict[str, Any]:
        """What a run key holds of the spec: every keyed built-in transform, and each other
        transform that acts (its value is not its neutral one)."""
        return {RENAMED.get(f.name, f.name): value for f in _FIELDS
                if (value := getattr(self, f.name)) != f.metadata["neutral"]
                or f.metadata["keyed"]}

    def extensions(self) -> list[tuple[str, str]]:
        """(name, module) of the extension transforms that act, in field order."""
        return [(f.name, f.metadata["module"]) for f in _FIELDS
                if f.metadata["module"] is not None
                and getattr(self, f.name) != f.metadata["neutral"]]

    def changes(self) -> dict[str, Any]:
        """The transform parameters whose values differ from their defaults."""
        return {f.name: value for f in _FIELDS
                if (value := getattr(self, f.name)) != f.metadata["parameter"].default}

    def span_jobs(self, rows: int) -> int:
        """Jobs the span keeps of a source of `rows` jobs (before inserted jobs and
        copies)."""
        return min(max(rows - self.skip_jobs, 0), self.first_jobs or rows)

    def key(self) -> str:
        """Canonical JSON of every transform parameter."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def random(self) -> bool:
        """Whether preparing with this spec draws random numbers (a shape probability
        strictly between 0 and 1, jittered copies, shaking, inserted jobs or a BSP
        model)."""
        return any((f.metadata["shaped"] and isinstance(getattr(self, f.name), float)
                    and 0.0 < getattr(self, f.name) < 1.0)
                   or (f.metadata["draws"] and getattr(self, f.name) is not None)
                   for f in _FIELDS) or self.arrival_shake_s > 0 or (
                       self.insert_per_h > 0) or (
                       self.replication > 1 and self.replication_jitter_s > 0)


#: WorkloadSpec's fields, looked up once: planning a large configuration builds and
#: compares thousands of specs.
_FIELDS: tuple[Field, ...] = fields(WorkloadSpec)


#: Transforms renamed, by their first name: the name a run key holds them under and an
#: alias configurations may still use (the trace cleaning rule is `oversize` too).
RENAMED = {"machine_fit": "oversize"}
ALIASES = {old: new for new, old in RENAMED.items()}


def current_names(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`values` (transforms by name) with every alias (ALIASES) replaced by its name; a
    SpecError naming `where` if both are given."""
    for old, new in ALIASES.items():
        if old in values and new in values:
            raise SpecError(f"{where}: {old} and {new} both given; expected {new} alone "
                            f"({old} is its former name)")
    return {ALIASES.get(name, name): value for name, value in values.items()}


def transforms() -> dict[str, Field]:
    """WorkloadSpec's fields by name."""
    return {f.name: f for f in _FIELDS}
