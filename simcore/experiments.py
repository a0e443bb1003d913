"""Experiments: from the configuration to shards of runs, each run with its identity.

A configuration names workload sources, machines and policies, and experiments that cross
them with a grid of load and shape parameters and a list of seeds (see
`workflow/schemas/config.schema.yaml`). `plan` expands it:

- a shard is one experiment x workload x machine x policy: one Snakemake job, one file of
  results. Policies that cannot run on a machine (migration needs a torus or mesh) are left
  out of an experiment's cross product;
- a run is one grid point and seed inside a shard. Parameters that cannot change a run are
  normalised away so identical simulations are planned once: shapes on machines that do not
  allocate shapes, growth where jobs never grow (flat and wired machines: max_growth 0),
  the seed of a run where nothing is drawn at random (a trace without p_fat or p_torus
  strictly between 0 and 1);
- a run's key is a hash of everything that determines its result: the workload's content,
  transforms, seed, machine (including its wiring), policy, the source of the code that
  simulates it and the result schema version. The run cache is keyed by it, so a re-run
  simulates only what changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from simcore.errors import ConfigError, SimcoreError
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.store import RESULT_SCHEMA_VERSION
from simcore.workload.synthetic import SyntheticSpec
from simcore.workload.transforms import WorkloadSpec

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
GRID_KEYS = ("runtime_scale", "offered_load", "p_fat", "p_torus")
FIXED_KEYS = ("skip_jobs", "first_jobs", "processors_per_unit", "oversize")
PACKAGE = Path(__file__).resolve().parent

# Source files whose code decides a run's result, by what the run uses (paths in simcore/).
# Code that makes workload files (SWF reading, cleaning, synthetic models) is not here: the
# rules that write those files depend on it, and the run key holds the files' content.
_CORE_CODE = ("engine.py", "state.py", "jit.py", "bitset.py", "simulate.py", "metrics.py",
              "jobs.py", "policy.py", "store.py", "machines/allocate.py", "machines/spec.py",
              "schedulers/fcfs.py", "workload/transforms.py")
_MACHINE_CODE = {"flat": (), "torus": ("machines/boxes.py",), "mesh": ("machines/boxes.py",)}
_WIRED_CODE = ("machines/links.py", "machines/wiring.py", "workload/shapes.py")
_SCHEDULER_CODE = {"fcfs": (), "backfill": ("schedulers/backfill.py",),
                   "migration": ("schedulers/migration.py",),
                   "bm": ("schedulers/backfill.py", "schedulers/migration.py")}
#: Code that writes workload files: inputs of the rules that make them.
TRACE_CODE = ("swf.py", "cleaning.py", "workload/io.py")
SYNTHETIC_CODE = ("swf.py", "workload/io.py", "workload/synthetic.py", "workload/lublin.py")


@dataclass(frozen=True)
class Source:
    """A named workload source: a catalogued trace, or a synthetic model sampled per seed."""

    name: str
    trace: str | None = None
    synthetic: SyntheticSpec | None = None
    processors_per_unit: int = 1

    def path(self, seed: int) -> str:
        """The converted job table (relative to the results root) a run with `seed` reads."""
        if self.trace is not None:
            return f"workloads/{self.trace}/jobs.parquet"
        return f"workloads/{self.name}/seed={seed}/jobs.parquet"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "trace": self.trace, "processors_per_unit":
                self.processors_per_unit,
                "synthetic": None if self.synthetic is None else asdict(self.synthetic)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Source:
        synthetic = values.get("synthetic")
        return cls(values["name"], values.get("trace"),
                   None if synthetic is None else SyntheticSpec(**synthetic),
                   values.get("processors_per_unit", 1))


@dataclass(frozen=True)
class Run:
    """One simulation of a shard: a grid point and a seed."""

    transforms: WorkloadSpec
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"transforms": json.loads(self.transforms.key()), "seed": self.seed}


@dataclass(frozen=True)
class Shard:
    """experiment x workload x machine x policy, and its runs in a fixed order."""

    experiment: str
    workload: str
    machine: str
    policy: str
    source: Source
    machine_spec: str
    policy_spec: PolicySpec
    runs: tuple[Run, ...]
    per_job: bool = False
    names: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", {"experiment": self.experiment, "workload":
                                           self.workload, "machine": self.machine,
                                           "policy": self.policy})

    def input_paths(self) -> list[str]:
        """Job tables the shard reads (relative to the results root)."""
        return sorted({self.source.path(run.seed) for run in self.runs})

    def code_files(self) -> list[Path]:
        """Source files whose change changes this shard's results."""
        machine = MachineSpec.parse(self.machine_spec)
        names = [*_CORE_CODE, *_MACHINE_CODE.get(machine.kind, _WIRED_CODE),
                 *_SCHEDULER_CODE[self.policy_spec.scheduler]]
        return sorted({PACKAGE / name for name in names})

    def code_fingerprint(self) -> str:
        """sha256 over the code files (a wiring's content is in the machine's key)."""
        digest = hashlib.sha256()
        for path in self.code_files():
            digest.update(path.relative_to(PACKAGE).as_posix().encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def run_key(self, run: Run, workload_hash: str, code_fingerprint: str) -> str:
        """Identity of one run: the hash of everything that determines its result."""
        identity = {
            "workload": workload_hash,
            "transforms": json.loads(run.transforms.key()),
            "seed": run.seed,
            "machine": MachineSpec.parse(self.machine_spec).key(),
            "policy": json.loads(self.policy_spec.key()),
            "code": code_fingerprint,
            "result_schema": RESULT_SCHEMA_VERSION,
        }
        text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def to_json(self) -> str:
        """Canonical JSON of the shard (a Snakemake param, so any change re-runs it)."""
        return json.dumps({
            **self.names, "source": self.source.to_dict(), "machine_spec": self.machine_spec,
            "policy_spec": json.loads(self.policy_spec.key()), "per_job": self.per_job,
            "runs": [run.to_dict() for run in self.runs],
        }, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Shard:
        try:
            values = json.loads(text)
            policy = dict(values["policy_spec"])
            return cls(
                values["experiment"], values["workload"], values["machine"], values["policy"],
                Source.from_dict(values["source"]), values["machine_spec"],
                PolicySpec.from_params(policy.pop("scheduler"), policy),
                tuple(Run(WorkloadSpec(**r["transforms"]), r["seed"]) for r in values["runs"]),
                values["per_job"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SimcoreError(f"not a shard specification: {exc}") from exc

    def label(self) -> str:
        return "/".join(self.names.values())


def plan(config: Mapping[str, Any], traces: Sequence[str] | None = None) -> list[Shard]:
    """Every shard of every experiment, validated; errors name the config key. `traces`,
    when given, are the catalogued trace names workloads may use."""
    sources = _sources(config, traces)
    machines = {name: _machine(name, text) for name, text in _section(config, "machines").items()}
    policies = {name: _policy(name, values)
                for name, values in _section(config, "policies").items()}
    experiments = _section(config, "experiments")
    shards = []
    for name, values in experiments.items():
        where = f"experiments.{name}"
        _check_name(name, "experiments")
        shards.extend(_experiment(name, values, where, sources, machines, policies))
    if not shards:
        raise ConfigError("experiments: no experiment defines a run")
    return shards


def _section(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    section = config.get(key)
    if not isinstance(section, Mapping) or not section:
        raise ConfigError(f"{key}: expected a non-empty mapping of names to definitions")
    for name in section:
        _check_name(name, key)
    return section


def _check_name(name: object, section: str) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise ConfigError(f"{section}.{name}: names may hold letters, digits, '_', '.', '-' "
                          "and start with a letter or digit (they become directory names)")


def _sources(config: Mapping[str, Any], traces: Sequence[str] | None) -> dict[str, Source]:
    sources = {}
    for name, values in _section(config, "workloads").items():
        where = f"workloads.{name}"
        if not isinstance(values, Mapping) or ("trace" in values) == ("synthetic" in values):
            raise ConfigError(f"{where}: expected exactly one of 'trace' or 'synthetic'")
        unknown = set(values) - {"trace", "synthetic", "processors_per_unit"}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
        ppu = values.get("processors_per_unit", 1)
        if not isinstance(ppu, int) or ppu < 1:
            raise ConfigError(f"{where}.processors_per_unit: expected an integer >= 1")
        if "trace" in values:
            if traces is not None and values["trace"] not in traces:
                raise ConfigError(f"{where}.trace: {values['trace']!r} is not in the trace "
                                  f"catalogue; expected one of {sorted(traces)}")
            sources[name] = Source(name, trace=values["trace"], processors_per_unit=ppu)
        else:
            spec = SyntheticSpec.from_mapping(values["synthetic"], f"{where}.synthetic")
            sources[name] = Source(name, synthetic=spec, processors_per_unit=ppu)
    return sources


def _machine(name: str, text: object) -> MachineSpec:
    if not isinstance(text, str):
        raise ConfigError(f"machines.{name}: expected a spec string such as torus:4x4x8")
    try:
        return MachineSpec.parse(text)
    except SimcoreError as exc:
        raise ConfigError(f"machines.{name}: {exc}") from None


def _policy(name: str, values: object) -> PolicySpec:
    where = f"policies.{name}"
    if not isinstance(values, Mapping) or "scheduler" not in values:
        raise ConfigError(f"{where}: expected a mapping with a 'scheduler' key")
    params = {k: v for k, v in values.items() if k != "scheduler"}
    try:
        return PolicySpec.from_params(values["scheduler"], params)
    except SimcoreError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _names(values: Mapping[str, Any], key: str, where: str, known: Mapping[str, Any]) -> list[str]:
    names = values.get(key)
    if not isinstance(names, list) or not names:
        raise ConfigError(f"{where}.{key}: expected a non-empty list of names")
    for i, name in enumerate(names):
        if name not in known:
            raise ConfigError(f"{where}.{key}[{i}]: unknown name {name!r}; expected one of "
                              f"{sorted(known)}")
    return names


def _experiment(name: str, values: Any, where: str, sources: Mapping[str, Source],
                machines: Mapping[str, MachineSpec],
                policies: Mapping[str, PolicySpec]) -> list[Shard]:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping")
    allowed = {"workloads", "machines", "policies", "transforms", "grid", "seeds", "per_job"}
    unknown = set(values) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; expected some of "
                          f"{sorted(allowed)}")
    fixed = dict(values.get("transforms") or {})
    stray = set(fixed) - set(FIXED_KEYS)
    if stray:
        raise ConfigError(f"{where}.transforms: unknown key(s) {sorted(stray)}; expected some "
                          f"of {list(FIXED_KEYS)}")
    grid = dict(values.get("grid") or {})
    stray = set(grid) - set(GRID_KEYS)
    if stray:
        raise ConfigError(f"{where}.grid: unknown key(s) {sorted(stray)}; expected some of "
                          f"{list(GRID_KEYS)}")
    for key, axis in grid.items():
        if not isinstance(axis, list) or not axis:
            raise ConfigError(f"{where}.grid.{key}: expected a non-empty list of values")
    seeds = values.get("seeds", [1])
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and s >= 0 for s in seeds)):
        raise ConfigError(f"{where}.seeds: expected a non-empty list of integers >= 0")
    shards = []
    for workload in _names(values, "workloads", where, sources):
        source = sources[workload]
        for machine_name in _names(values, "machines", where, machines):
            machine = machines[machine_name]
            for policy_name in _names(values, "policies", where, policies):
                policy = policies[policy_name]
                boxes = machine.kind in ("torus", "mesh")
                if policy.scheduler in ("migration", "bm") and not boxes:
                    continue
                if not boxes and "max_growth" in policy.params():
                    policy = dataclasses.replace(policy, max_growth=0)  # nothing grows here
                runs = _runs(source, machine, grid, fixed, seeds, f"{where}.grid")
                shards.append(Shard(name, workload, machine_name, policy_name, source,
                                    str(machine), policy, runs,
                                    bool(values.get("per_job", False))))
    return shards


def _runs(source: Source, machine: MachineSpec, grid: Mapping[str, Sequence[Any]],
          fixed: Mapping[str, Any], seeds: Sequence[int], where: str) -> tuple[Run, ...]:
    """Grid points x seeds, normalised and without duplicates, in grid order."""
    shaped = machine.wiring is not None
    axes = [grid.get(key, [None]) for key in GRID_KEYS]
    runs: dict[Run, None] = {}
    for point in itertools.product(*axes):
        values = {k: v for k, v in zip(GRID_KEYS, point, strict=True) if v is not None}
        if not shaped:
            values.pop("p_fat", None)
            values.pop("p_torus", None)
        transforms = {"processors_per_unit": source.processors_per_unit, **fixed, **values}
        try:
            spec = WorkloadSpec(**transforms)
        except (SimcoreError, TypeError) as exc:
            raise ConfigError(f"{where}: {exc}") from None
        random = source.synthetic is not None or 0 < spec.p_fat < 1 or 0 < spec.p_torus < 1
        for seed in seeds:
            runs[Run(spec, seed if random else 0)] = None
    return tuple(runs)
