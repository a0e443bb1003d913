"""Experiments: from the configuration to shards of runs, each run with its identity.

A configuration names workload sources, machines and policies, and experiments that cross
them with a grid (axes of workload transforms, of the policies' scheduler parameters and of
the machines' allocator options) and seeds (see
`workflow/schemas/config.schema.yaml` and `simcore.sweep.config`). `plan` expands it:

- a shard is one experiment x workload x machine x policy: one Snakemake job, one file of
  results. Policies that cannot run on a machine (a scheduler needing an allocator
  capability the machine lacks, e.g. migration on a flat machine) are left out of an
  experiment's cross product;
- a run is one grid point and seed inside a shard. Seeds are a list, a range, or a
  two-stage plan (`simcore.sweep.stages`) whose runs are its pilot's seeds until the
  pilot's stored results fix the rest (`simcore.sweep.planning.staged_plan`). A
  parameter axis applies to the policies (or machines) that have the parameter and is
  left out of the others' runs. Parameters that cannot change a run are normalised away
  so identical simulations are planned once: shape transforms on machines
  whose jobs have no shapes, parameters needing a capability the allocator lacks (growth
  where jobs never grow), the seed of a run where nothing is drawn at random (a trace
  without a shape probability strictly between 0 and 1, on a machine without failures);
- a run's key is a hash of everything that determines its result: the workload's content,
  transforms, seed, machine (including its wiring and every option), policy (every
  parameter), the registry rows the run uses and the source of the code it executes
  (`simcore.sweep.identity`) and the result schema version. The run cache is keyed by
  it, so a re-run simulates only what changed.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import itertools
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simcore.base import patterns
from simcore.base.errors import ConfigError, SimcoreError, SpecError
from simcore.base.params import INT64_MAX, SEED, Parameter
from simcore.jobs.cleaning import CleaningOptions
from simcore.machines.registry import ALLOCATORS, all_options, check_compatible
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, PolicySpec, all_parameters
from simcore.sweep.limits import Limits, check_plan, experiment_runs
from simcore.sweep.samples import parse_spans, sample_name, seed_spans
from simcore.sweep.stages import METRICS, TwoStage
from simcore.sweep.store import RESULT_SCHEMA_VERSION
from simcore.workload.spec import FIXED, GRID, WorkloadSpec, current_names, transforms
from simcore.workload.synthetic import JOBS, SyntheticSpec

DEFAULT_DATASET = "torus-sweep"
SEED_COUNT = Parameter("count", int, 1, "how many seeds, from `first` on", unit="seeds",
                       minimum=1)
PILOT = Parameter("pilot", int, 3, "seeds of a two-stage plan's first stage, from `first` "
                  "on", unit="seeds", minimum=2)
MAX_SEEDS = Parameter("max", int, None, "the most seeds a two-stage plan may give a "
                      "configuration", unit="seeds", minimum=2)
RELATIVE_HALF_WIDTH = Parameter("relative_half_width", float, None, "the confidence "
                                "half-width a two-stage plan seeks, as a fraction of the mean",
                                unit="fraction", minimum=0, exclusive_minimum=True)
LEVEL = Parameter("level", float, 0.95, "the confidence level of a two-stage plan's "
                  "half-width", unit="fraction", minimum=0, maximum=0.999,
                  exclusive_minimum=True)
#: What an experiment that leaves these keys out gets (the config schema states them).
EXPERIMENT_DEFAULTS = {"seeds": [1], "per_job": False, "schedules": 0}


@dataclass(frozen=True)
class Source:
    """A named workload source: a catalogued trace (its sha256, where the catalogue is
    known, and the cleaning options), or a synthetic model sampled per seed."""

    name: str
    trace: str | None = None
    synthetic: SyntheticSpec | None = None
    processors_per_unit: int = 1
    sha256: str | None = None
    cleaning: tuple[tuple[str, Any], ...] = ()

    def provenance(self, seed: int) -> dict[str, Any]:
        """What a workload file of this source records as its `source` metadata (see
        `simcore.workload.io`) for a run with `seed`."""
        if self.trace is None:
            assert self.synthetic is not None
            return {"kind": "synthetic", **self.synthetic.to_dict(), "seed": seed}
        made = {"kind": "trace", "file": Path(patterns.TRACE.format(trace=self.trace)).name,
                "cleaning": dict(self.cleaning)}
        return made if self.sha256 is None else {**made, "sha256": self.sha256}

    @functools.cached_property
    def variant(self) -> str:
        """A digest of what makes this source's files, the seed aside: sources that differ
        (in two datasets, say) never share a file, identical ones do."""
        made = {k: v for k, v in self.provenance(0).items() if k != "seed"}
        return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()[:12]

    def path(self, seed: int) -> str:
        """The file (relative to the results root) of the job table a run with `seed`
        reads: the converted trace, or the sample file holding the seed's sample
        (`simcore.sweep.samples`), in a directory named by the source's variant."""
        if self.trace is not None:
            return patterns.TRACE_WORKLOAD.format(trace=self.trace, variant=self.variant)
        directory = patterns.SYNTHETIC_SAMPLES.format(workload=self.name, variant=self.variant)
        assert self.synthetic is not None  # a source is a trace or a model
        return f"{directory}/{sample_name(self.synthetic, seed)}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "trace": self.trace,
                "processors_per_unit": self.processors_per_unit,
                "synthetic": None if self.synthetic is None else self.synthetic.to_dict(),
                "sha256": self.sha256, "cleaning": dict(self.cleaning)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Source:
        synthetic = values.get("synthetic")
        if synthetic is not None:
            synthetic = dict(synthetic)
            synthetic = SyntheticSpec.create(synthetic.pop("model"), synthetic)
        return cls(values["name"], values.get("trace"), synthetic,
                   values.get("processors_per_unit", 1), values.get("sha256"),
                   tuple(sorted(values.get("cleaning", {}).items())))


@dataclass(frozen=True)
class Run:
    """One simulation of a shard: a grid point and a seed. `policy` and `machine` are the
    values the grid gives parameters of the shard's scheduler and options of its
    allocator (sorted (name, value) pairs), over the shard's policy and machine."""

    transforms: WorkloadSpec
    seed: int
    policy: tuple[tuple[str, Any], ...] = ()
    machine: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The seed, the transforms that differ from their defaults (the rest are implied:
        `WorkloadSpec(**transforms)` rebuilds the same spec) and the grid's parameters."""
        out = {"transforms": self.transforms.changes(), "seed": self.seed}
        for key in ("policy", "machine"):
            if getattr(self, key):
                out[key] = dict(getattr(self, key))
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Run:
        return cls(WorkloadSpec(**current_names(values["transforms"], "transforms")),
                   values["seed"],
                   *(tuple(sorted(values.get(key, {}).items())) for key in ("policy",
                                                                          "machine")))


@dataclass(frozen=True)
class Shard:
    """experiment x workload x machine x policy of a dataset, and its runs in a fixed
    order."""

    dataset: str
    experiment: str
    workload: str
    machine: str
    policy: str
    source: Source
    machine_spec: MachineSpec
    policy_spec: PolicySpec
    runs: tuple[Run, ...]
    per_job: bool = False
    schedules: int = 0  # its first runs whose schedules the workflow exports; not in the
    # specification (`to_json`), since exporting changes no result
    two_stage: TwoStage | None = None  # its experiment's two-stage plan of seeds, if
    # any; not in the specification either: `runs` hold the seeds planned so far

    def scheduled_runs(self) -> range:
        """Indices of the runs whose schedules are exported."""
        return range(min(self.schedules, len(self.runs)))

    @property
    def names(self) -> dict[str, str]:
        """The shard's names in the store's partition order."""
        return {"experiment": self.experiment, "workload": self.workload,
                "machine": self.machine, "policy": self.policy}

    def policy_of(self, run: Run) -> PolicySpec:
        """The policy `run` simulates: the shard's, with the grid's parameters."""
        return self.policy_spec.replace(**dict(run.policy)) if run.policy else self.policy_spec

    def machine_of(self, run: Run) -> MachineSpec:
        """The machine `run` simulates on: the shard's, with the grid's allocator options."""
        return _with_options(self.machine_spec, dict(run.machine)) if run.machine \
            else self.machine_spec

    def input_paths(self) -> list[str]:
        """Job tables the shard reads (relative to the results root)."""
        return sorted({self.source.path(run.seed) for run in self.runs})

    def run_key(self, run: Run, workload_hash: str, definitions: str) -> str:
        """Identity of one run: the hash of everything that determines its result, where
        `definitions` is the digest of the rows it uses and the code it executes
        (`simcore.sweep.identity.definitions`)."""
        return self.run_keys([workload_hash], definitions, [run])[0]

    def run_keys(self, workload_hashes: Sequence[str], definitions: str,
                 runs: Sequence[Run] | None = None) -> list[str]:
        """`run_key` of each of `runs` (default: the shard's), with its workload's hash:
        the sha256 of the canonical JSON (sorted keys) of the workload hash, the
        transforms' identity, the seed, the machine and its options, the policy with every
        parameter, `definitions` and the result schema's version. The JSON of what runs
        share is written once, so a million keys take seconds."""
        def dump(value: object) -> str:
            return json.dumps(value, sort_keys=True, separators=(",", ":"))

        settings: dict[tuple, tuple[str, str]] = {}
        keys = []
        for run, workload in zip(self.runs if runs is None else runs, workload_hashes,
                                 strict=True):  # runs of a setting share its transforms
            setting = (id(run.transforms), run.policy, run.machine)
            if setting not in settings:
                machine = self.machine_of(run)
                settings[setting] = (
                    f'{{"definitions":{dump(definitions)},"machine":{dump(machine.key())},'
                    f'"machine_options":{dump(dict(machine.options))},'
                    f'"policy":{dump(json.loads(self.policy_of(run).key()))},'
                    f'"result_schema":{dump(RESULT_SCHEMA_VERSION)},"seed":',
                    f',"transforms":{dump(run.transforms.identity())},"workload":')
            head, middle = settings[setting]
            text = f"{head}{dump(run.seed)}{middle}{dump(workload)}}}"
            keys.append(hashlib.sha256(text.encode()).hexdigest())
        return keys

    def to_json(self) -> str:
        """Canonical JSON of the shard."""
        return json.dumps({
            "dataset": self.dataset, **self.names, "source": self.source.to_dict(),
            "machine_spec": self.machine_spec.to_config(),
            "policy_spec": json.loads(self.policy_spec.key()), "per_job": self.per_job,
            "runs": _grouped(self.runs),
        }, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Shard:
        """The shard `to_json` wrote. Its names become directories of the store and the
        workload files, so each must be a name (no path); its runs are at least one, each
        with a valid seed and given once (a run given twice would be stored twice)."""
        try:
            values = json.loads(text)
            policy = dict(values["policy_spec"])
            shard = cls(
                values["dataset"], values["experiment"], values["workload"],
                values["machine"], values["policy"], Source.from_dict(values["source"]),
                MachineSpec.from_config(values["machine_spec"]),
                PolicySpec.from_params(policy.pop("scheduler"), policy),
                tuple(_expanded(values["runs"])),
                values["per_job"])
            shard._check()
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SimcoreError(f"not a shard specification: {exc}") from exc
        return shard

    def _check(self) -> None:
        names = {"dataset": self.dataset, **self.names, "source.name": self.source.name}
        for key, name in names.items():
            if not patterns.is_name(name):
                raise ValueError(f"{key} {name!r}; expected a name of {patterns.NAME_RULE}")
        if not self.runs:
            raise ValueError("no runs; expected at least one")
        for run in self.runs:
            SEED.convert(run.seed)
        repeat = _first_repeat(self.runs)
        if repeat is not None:
            raise ValueError(f"runs[{repeat[1]}] given again (first as [{repeat[0]}]); "
                             "expected each run once")

    def packed(self) -> str:
        """The canonical JSON, compressed into one short shell-safe word (base64 of zlib):
        a shard of thousands of runs still fits on a command line."""
        return base64.b64encode(zlib.compress(self.to_json().encode(), 9)).decode()

    @classmethod
    def unpack(cls, word: str) -> Shard:
        """The shard `packed` wrote."""
        try:
            text = zlib.decompress(base64.b64decode(word, validate=True)).decode()
        except (ValueError, zlib.error) as exc:
            raise SimcoreError(f"not a packed shard specification: {exc}") from None
        return cls.from_json(text)

    def describe(self) -> str:
        """One readable line: what the shard simulates and how many runs."""
        return (f"{self.policy_spec} on {self.machine_spec}, workload {self.workload}, "
                f"{len(self.runs)} runs")

    def label(self) -> str:
        return "/".join(self.names.values())


def _grouped(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Runs as `Run.to_dict` writes them, consecutive runs that differ only by consecutive
    seeds written once with their seeds as ranges (`seeds`: `1-1000`), so that a shard of
    a million seeds is a few words."""
    groups: list[tuple[dict[str, Any], list[int]]] = []
    for run in runs:
        values = run.to_dict()
        seed = values.pop("seed")
        if groups and groups[-1][0] == values and groups[-1][1][-1] + 1 == seed:
            groups[-1][1].append(seed)
        else:
            groups.append((values, [seed]))
    return [{**values, "seeds": seed_spans(seeds)} for values, seeds in groups]


def _expanded(groups: Sequence[Mapping[str, Any]]) -> Iterator[Run]:
    """The runs `_grouped` wrote (or a run per entry, with its `seed`)."""
    for group in groups:
        values = dict(group)
        seeds = parse_spans(values.pop("seeds")) if "seeds" in values else [values["seed"]]
        for seed in seeds:
            yield Run.from_dict({**values, "seed": seed})


def plan(config: Mapping[str, Any], traces: Mapping[str, Any] | None = None,
         notes: list[str] | None = None,
         decided: Mapping[str, int] | None = None) -> list[Shard]:
    """Every shard of every experiment, validated; errors name the config key. `traces`,
    when given, is the trace catalogue (`simcore.workload.traces.load_catalogue`): the traces
    workloads may use, their sha256 and their number of jobs (for the size estimate). A
    configuration above its `limits` (`simcore.sweep.limits`) is refused before it is
    expanded. What the configuration may not mean as written (seeds that cannot differ) is
    appended to `notes`, a line each. An experiment with a two-stage plan of seeds runs its
    pilot's seeds, or the n seeds `decided` gives it by name once its pilot fixed them
    (`simcore.sweep.planning.staged_plan`)."""
    dataset = config.get("dataset", DEFAULT_DATASET)
    patterns.check_dataset(dataset)
    sources = _sources(config, traces)
    machines = {name: _machine(name, text) for name, text in _section(config, "machines").items()}
    policies = {name: _policy(name, values)
                for name, values in _section(config, "policies").items()}
    experiments = _section(config, "experiments")
    trace_jobs = {name: entry.jobs for name, entry in (traces or {}).items()}
    sizes = [_estimate(values, f"experiments.{name}", sources, trace_jobs)
             for name, values in experiments.items()]
    check_plan(sum(runs for runs, _ in sizes), sum(runs * jobs for runs, jobs in sizes),
               max(jobs for _, jobs in sizes), Limits.from_config(config.get("limits")))
    shards = []
    for name, values in experiments.items():
        shards.extend(_experiment(dataset, name, values, f"experiments.{name}", sources,
                                  machines, policies, config["policies"],
                                  [] if notes is None else notes, (decided or {}).get(name)))
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
    if not patterns.is_name(name):
        raise ConfigError(f"{section}.{name}: names may hold {patterns.NAME_RULE} (they become "
                          "directory names)")


def _sources(config: Mapping[str, Any],
             traces: Mapping[str, Any] | None) -> dict[str, Source]:
    sources = {}
    cleaning = _cleaning(config)
    for name, values in _section(config, "workloads").items():
        where = f"workloads.{name}"
        if not isinstance(values, Mapping) or ("trace" in values) == ("synthetic" in values):
            raise ConfigError(f"{where}: expected exactly one of 'trace' or 'synthetic'")
        unknown = set(values) - {"trace", "synthetic", "processors_per_unit"}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
        ppu = _value(transforms()["processors_per_unit"].metadata["parameter"],
                     values.get("processors_per_unit", 1), f"{where}.processors_per_unit")
        if "trace" in values:
            if traces is not None and values["trace"] not in traces:
                raise ConfigError(f"{where}.trace: {values['trace']!r} is not in the trace "
                                  f"catalogue; expected one of {sorted(traces)}")
            sha256 = None if traces is None else traces[values["trace"]].sha256
            sources[name] = Source(name, trace=values["trace"], processors_per_unit=ppu,
                                   sha256=sha256, cleaning=cleaning)
        else:
            if not isinstance(values["synthetic"], Mapping):
                raise ConfigError(f"{where}.synthetic: expected a mapping with a 'model' key")
            spec = SyntheticSpec.from_mapping(values["synthetic"], f"{where}.synthetic")
            sources[name] = Source(name, synthetic=spec, processors_per_unit=ppu)
    return sources


def _cleaning(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The trace cleaning options with defaults filled in (key order and spelt-out
    defaults are no change)."""
    values = (config.get("traces") or {}).get("cleaning") or {}
    try:
        return tuple(sorted(asdict(CleaningOptions.from_mapping(values)).items()))
    except (SimcoreError, TypeError) as exc:
        raise ConfigError(f"traces.cleaning: {exc}") from None


def _value(parameter: Parameter, value: Any, where: str) -> Any:
    try:
        return parameter.convert(value)
    except SimcoreError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _machine(name: str, value: object) -> MachineSpec:
    try:
        return MachineSpec.from_config(value)
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
    return _once(names, f"{where}.{key}")


def _once(values: list[Any], where: str) -> list[Any]:
    """`values`, refused if one is given twice (it would count, or run, twice)."""
    repeat = _first_repeat(values)
    if repeat is not None:
        first, again = repeat
        raise ConfigError(f"{where}[{again}]: {values[again]!r} given again (first as "
                          f"[{first}]); expected each value once")
    return values


def _first_repeat(values: Sequence[Any]) -> tuple[int, int] | None:
    """The indices of the first value given again and of its first place, or None."""
    first: dict[Any, int] = {}
    for index, value in enumerate(values):
        if first.setdefault(value, index) != index:
            return first[value], index
    return None


def _axes(values: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, list]]:
    """The experiment's fixed transforms and its grid's transform axes, checked against
    WorkloadSpec: any transform may be either, not both. The grid's other axes are
    parameters (`_parameter_axes`)."""
    fixed = _current(values.get(FIXED) or {}, f"{where}.{FIXED}")
    allowed = transforms()
    grid = {k: v for k, v in _current(values.get(GRID) or {}, f"{where}.{GRID}").items()
            if k in allowed}
    both = sorted(set(fixed) & set(grid))
    if both:
        raise ConfigError(f"{where}: {both} set both in {FIXED} and in {GRID}; expected one")
    stray = sorted(set(fixed) - set(allowed))
    if stray:
        raise ConfigError(f"{where}.{FIXED}: unknown key(s) {stray}; expected some of "
                          f"{list(allowed)}")
    for name, value in fixed.items():
        fixed[name] = _value(allowed[name].metadata["parameter"], value,
                             f"{where}.{FIXED}.{name}")
    for name, value in grid.items():
        grid[name] = _axis(allowed[name].metadata["parameter"], value, f"{where}.{GRID}.{name}")
    return fixed, grid


def _current(values: Any, where: str) -> dict[str, Any]:
    """A mapping of transforms by name with former names (ALIASES) replaced by the current
    ones."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: {values!r}; expected a mapping")
    try:
        return current_names(values, where)
    except SpecError as exc:
        raise ConfigError(str(exc)) from None


def _axis(parameter: Parameter, value: Any, where: str) -> list[Any]:
    """A grid axis: a non-empty list of the parameter's values, each converted."""
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: expected a non-empty list of values")
    return _once([_value(parameter, v, f"{where}[{i}]") for i, v in enumerate(value)], where)


def _parameter_axes(values: Mapping[str, Any], where: str,
                    policies: Mapping[str, tuple[PolicySpec, Mapping[str, Any]]],
                    machines: Mapping[str, MachineSpec]) -> tuple[dict[str, list],
                                                                  dict[str, list]]:
    """The grid's axes over scheduler parameters and allocator options: each a parameter of
    at least one of the experiment's policies (`policies`: spec and its configuration) or
    an option of one of its machines' allocators, set by none of those policies."""
    policy_axes: dict[str, list] = {}
    machine_axes: dict[str, list] = {}
    parameters = all_parameters()
    for name, value in _current(values.get(GRID) or {}, f"{where}.{GRID}").items():
        if name in transforms():
            continue
        at = f"{where}.{GRID}.{name}"
        having = [p for p, (spec, _) in policies.items() if name in spec.row.parameter_names]
        options = [m for m, spec in machines.items()
                   if name in {o.name for o in spec.allocator_row.options}]
        if having:
            setting = [p for p in having if name in policies[p][1]]
            if setting:
                raise ConfigError(f"{at}: policies {setting} set {name} themselves; expected "
                                  "the grid or the policy to set it, not both")
            policy_axes[name] = _axis(parameters[name], value, at)
        elif options:
            machine_axes[name] = _axis(all_options()[name], value, at)
        elif name in parameters or name in all_options():
            users = [row.name for row in SCHEDULERS.values() if name in row.parameter_names]
            users += [f"allocator {row.name}" for row in ALLOCATORS.values()
                      if name in {o.name for o in row.options}]
            raise ConfigError(f"{at}: no policy of {list(policies)} and no machine of "
                              f"{list(machines)} has the parameter {name} (it belongs to "
                              f"{', '.join(users)})")
        else:
            raise ConfigError(f"{where}.{GRID}: unknown key {name!r}; expected a workload "
                              f"transform ({', '.join(transforms())}), a parameter of the "
                              "experiment's policies or an option of its machines' allocators")
    return policy_axes, machine_axes


def _seeds(value: Any, where: str) -> list[int] | TwoStage:
    """`seeds:` as a list of seeds, a mapping {first: F, count: N} for F..F+N-1, or a
    two-stage plan {first: F, pilot: N0, max: M, target: {...}} (`_two_stage`)."""
    if isinstance(value, Mapping):
        if "count" in value and "pilot" in value:
            raise ConfigError(f"{where}.pilot: given with count; expected count (a fixed "
                              "number of seeds) or pilot, max and target (a two-stage plan)")
        if not {"pilot", "max", "target"}.isdisjoint(value):
            return _two_stage(value, where)
        unknown = sorted(set(value) - {"first", "count"})
        if unknown or "count" not in value:
            raise ConfigError(f"{where}: expected a list of seeds or a mapping with 'count' "
                              f"(and optionally 'first', default 1), got {dict(value)!r}")
        first = _value(SEED, value.get("first", 1), f"{where}.first")
        count = _value(SEED_COUNT, value["count"], f"{where}.count")
        _check_last(first, count, where)
        return list(range(first, first + count))
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: expected a non-empty list of integers >= 0, or a mapping "
                          "{first: F, count: N}")
    return _once([_value(SEED, s, f"{where}[{i}]") for i, s in enumerate(value)], where)


def _two_stage(value: Mapping[str, Any], where: str) -> TwoStage:
    """`seeds:` as a two-stage plan (`simcore.sweep.stages`), every key checked."""
    unknown = sorted(set(value) - {"first", "pilot", "max", "target"})
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; expected some of first, "
                          "pilot, max and target (a two-stage plan)")
    for key in ("max", "target"):
        if key not in value:
            raise ConfigError(f"{where}.{key}: missing; expected max and target with pilot "
                              "(a two-stage plan), or {first, count}")
    first = _value(SEED, value.get("first", 1), f"{where}.first")
    pilot = _value(PILOT, value.get("pilot", PILOT.default), f"{where}.pilot")
    most = _value(MAX_SEEDS, value["max"], f"{where}.max")
    if most < pilot:
        raise ConfigError(f"{where}.max: {most}; expected at least pilot ({pilot})")
    _check_last(first, most, where)
    target, at = value["target"], f"{where}.target"
    if not isinstance(target, Mapping):
        raise ConfigError(f"{at}: {target!r}; expected a mapping {{metric, "
                          "relative_half_width, level}}")
    unknown = sorted(set(target) - {"metric", "relative_half_width", "level"})
    if unknown:
        raise ConfigError(f"{at}.{unknown[0]}: unknown key; expected some of metric, "
                          "relative_half_width and level")
    for key in ("metric", "relative_half_width"):
        if key not in target:
            raise ConfigError(f"{at}.{key}: missing; expected it")
    if target["metric"] not in METRICS:
        raise ConfigError(f"{at}.metric: {target['metric']!r}; expected a numeric summary "
                          "column (simcore list outputs), e.g. mean_wait_s")
    return TwoStage(first, pilot, most, target["metric"],
                    _value(RELATIVE_HALF_WIDTH, target["relative_half_width"],
                           f"{at}.relative_half_width"),
                    _value(LEVEL, target.get("level", LEVEL.default), f"{at}.level"))


def _check_last(first: int, count: int, where: str) -> None:
    if first + count - 1 > INT64_MAX:
        raise ConfigError(f"{where}: seeds {first}..{first + count - 1}; expected the last "
                          "below 2^63")


def _estimate(values: Any, where: str, sources: Mapping[str, Source],
              trace_jobs: Mapping[str, int]) -> tuple[int, int]:
    """An experiment's runs before merging (workloads x machines x policies x grid points x
    seeds) and the jobs of its largest run."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping")
    fixed, grid = _axes(values, where)
    kept = [fixed.get("first_jobs"), *grid.get("first_jobs", [])]
    first = max((n for n in kept if n is not None), default=None)
    copies = max([fixed.get("replication", 1), *grid.get("replication", [])])
    names = values.get("workloads")
    jobs = 0
    for name in names if isinstance(names, list) else []:
        source = sources.get(name) if isinstance(name, str) else None
        if source is None:
            continue
        size = (dict(source.synthetic.params).get(JOBS.name) if source.synthetic is not None
                else trace_jobs.get(str(source.trace))) or 0
        jobs = max(jobs, (size if first is None else min(size, first)) * copies)
    return experiment_runs(values), jobs


def _experiment(dataset: str, name: str, values: Any, where: str,
                sources: Mapping[str, Source], machines: Mapping[str, MachineSpec],
                policies: Mapping[str, PolicySpec], configured: Mapping[str, Any],
                notes: list[str], decided: int | None = None) -> list[Shard]:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping")
    allowed = {"workloads", "machines", "policies", FIXED, GRID, "seeds", "per_job",
               "schedules"}
    unknown = set(values) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; expected some of "
                          f"{sorted(allowed)}")
    fixed, grid = _axes(values, where)
    workloads = _names(values, "workloads", where, sources)
    machine_names = _names(values, "machines", where, machines)
    policy_names = _names(values, "policies", where, policies)
    policy_axes, machine_axes = _parameter_axes(
        values, where, {p: (policies[p], configured[p]) for p in policy_names},
        {m: machines[m] for m in machine_names})
    given = _seeds(values.get("seeds", EXPERIMENT_DEFAULTS["seeds"]), f"{where}.seeds")
    two_stage = given if isinstance(given, TwoStage) else None
    seeds = given if not isinstance(given, TwoStage) else given.seeds(
        given.pilot if decided is None else decided)
    schedules = values.get("schedules", EXPERIMENT_DEFAULTS["schedules"])
    if isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 0:
        raise ConfigError(f"{where}.schedules: expected an integer >= 0 (how many runs of "
                          f"each shard to export as schedules), got {schedules!r}")
    per_job = bool(values.get("per_job", EXPERIMENT_DEFAULTS["per_job"]))
    shards: list[Shard] = []
    merged: dict[str, int] = {}
    for workload in workloads:
        source = sources[workload]
        for machine_name in machine_names:
            machine = machines[machine_name]
            found = len(shards)
            points = _points(source, machine, grid, fixed, f"{where}.grid")
            for policy_name in policy_names:
                policy = _normalised(policies[policy_name], machine)
                if policy is None:
                    continue
                if schedules and policy.implementation.engine:
                    raise ConfigError(f"{where}.schedules: policy {policy_name} (scheduler "
                                      f"{policy.scheduler}) time-shares the machine, so its "
                                      "runs have no schedule to export; expected 0")
                runs, lost = _runs(source, machine, policy, points, seeds, policy_axes,
                                   machine_axes, f"{where}.grid")
                if lost:
                    merged[workload] = merged.get(workload, 0) + lost
                shards.append(Shard(dataset, name, workload, machine_name, policy_name, source,
                                    machine, policy, runs, per_job, schedules, two_stage))
            if len(shards) == found:  # every policy needs what the machine lacks
                policy = policies[values["policies"][0]]
                try:
                    check_compatible(machine, policy.row.needs, f"scheduler {policy.scheduler}")
                except SimcoreError as exc:
                    raise ConfigError(f"{where}: no policy of {values['policies']} can run on "
                                      f"machine {machine_name}: {exc}") from None
    for workload, lost in merged.items():
        notes.append(f"{where}.seeds: on workload {workload}, {lost} runs were merged into "
                     f"others: where nothing is random, the {len(seeds)} seeds give the same "
                     f"run (tables show fewer runs per row); set {FIXED}.arrival_shake_s "
                     "(input shaking) for seeds that differ")
    return shards


def _normalised(policy: PolicySpec, machine: MachineSpec) -> PolicySpec | None:
    """The policy as it runs on `machine` (parameters the allocator cannot use set to their
    neutral value), or None if the scheduler cannot run there."""
    try:
        check_compatible(machine, policy.row.needs, f"scheduler {policy.scheduler}")
    except SimcoreError:
        return None
    return policy.on(machine.capabilities)


def _with_options(machine: MachineSpec, options: Mapping[str, Any]) -> MachineSpec:
    """`machine` with some of its allocator's options set otherwise."""
    return dataclasses.replace(machine, options=tuple(sorted(
        {**dict(machine.options), **options}.items())))


def _points(source: Source, machine: MachineSpec, grid: Mapping[str, Sequence[Any]],
            fixed: Mapping[str, Any], where: str) -> list[WorkloadSpec]:
    """The grid's transform points on `machine`, normalised, in grid order (shape
    transforms left out where jobs have no shapes)."""
    keys = list(transforms())
    shaped = {name for name, f in transforms().items() if f.metadata["shaped"]}
    axes = [grid.get(key, [None]) for key in keys]
    points: dict[WorkloadSpec, None] = {}
    for point in itertools.product(*axes):
        values = {k: v for k, v in zip(keys, point, strict=True) if v is not None}
        if not machine.row.shaped_jobs:
            values = {k: v for k, v in values.items() if k not in shaped}
        settings = {"processors_per_unit": source.processors_per_unit, **fixed, **values}
        try:
            points[WorkloadSpec(**settings)] = None
        except SimcoreError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return list(points)


def _runs(source: Source, machine: MachineSpec, policy: PolicySpec,
          points: Sequence[WorkloadSpec], seeds: Sequence[int],
          policy_axes: Mapping[str, Sequence[Any]], machine_axes: Mapping[str, Sequence[Any]],
          where: str) -> tuple[tuple[Run, ...], int]:
    """Transform points x the policy's parameter axes x the allocator's option axes x
    seeds, without duplicates, in that order (axes of parameters the policy or allocator
    does not have are left out), and how many runs were merged because their seeds cannot
    differ."""
    mine = {k: v for k, v in policy_axes.items() if k in policy.row.parameter_names}
    options = {o.name for o in machine.allocator_row.options}
    theirs = {k: v for k, v in machine_axes.items() if k in options}
    settings = []  # (the policy's grid values, the machine with the grid's options, them)
    for chosen in itertools.product(*mine.values()):
        swept = policy.replace(**dict(zip(mine, chosen, strict=True))).on(
            machine.capabilities) if mine else policy
        params = tuple((k, v) for k, v in swept.params().items() if v != getattr(policy, k))
        for picked in itertools.product(*theirs.values()):
            try:
                on = _with_options(machine, dict(zip(theirs, picked, strict=True))) \
                    if theirs else machine
            except SimcoreError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            changed = tuple((k, v) for k, v in on.options if v != machine.option(k))
            settings.append((params, on, changed))
    runs: list[Run] = []
    seen: set[tuple] = set()  # the points are distinct objects, so their ids stand for them
    lost = 0
    for spec in points:
        for params, on, changed in settings:
            random = source.synthetic is not None or spec.random() or on.random()
            if not random and (id(spec), params, changed, 0) not in seen:
                lost += len(set(seeds)) - 1
            for seed in seeds if random else [0] * len(seeds):
                identity = (id(spec), params, changed, seed)
                if identity not in seen:
                    seen.add(identity)
                    runs.append(Run(spec, seed, params, changed))
    return tuple(runs), lost
