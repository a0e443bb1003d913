"""The replay-fidelity report (docs/fidelity.md) from its configuration (config/fidelity.yaml).

Each trace of the configuration is read verified as the workflow reads it
(`resources/traces/<name>.swf.gz`, acquired from a mirror or the archive), cleaned with the
default rules and replayed whole under each policy (`simcore.fidelity.replay`). The report
gives, per trace, what its header says about its scheduler, queues and partitions beside
the configuration's reading of it, and per policy the metrics over all jobs and per half
beside the noise floor; with `factors`, the ablation of what the logs record beyond the
textbook (`simcore.report.fidelity_factors`); then earlier stated values recomputed, and
where they differ. A log that records no wait (every recorded wait unknown) is listed,
not replayed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from simcore.base.arrays import numpy_array
from simcore.base.atomic import atomic_write_bytes
from simcore.base.errors import ConfigError, SimcoreError
from simcore.base.patterns import TRACE
from simcore.base.texttable import markdown_table
from simcore.base.yamlfiles import read_yaml
from simcore.fidelity.compare import FIGURES, HALVES, REPORT_MD, Fidelity
from simcore.fidelity.factors import Model
from simcore.fidelity.fit import Row, ablation
from simcore.fidelity.noise import PERTURBATIONS, SHAKE_S
from simcore.fidelity.replay import Replay, check_fits, replay
from simcore.jobs.cleaning import clean
from simcore.jobs.swf import MISSING, SWFHeader, header_of, read_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.report.fidelity_factors import FactorsConfig, factors_section, trace_factors
from simcore.report.fidelity_figures import write_fidelity_figures
from simcore.workload.traces import TraceEntry, acquire, load_catalogue, mirror_dirs

#: The header keys the report quotes: what a log says of its scheduler, queues and
#: partitions (and of its machine, which a replay stands in for).
HEADER_KEYS = ("Computer", "Installation", "MaxNodes", "MaxProcs", "Note", "Information",
               "Queues", "MaxQueues", "Queue", "Partitions", "MaxPartitions", "Partition")


class Shown(NamedTuple):
    """How the report prints a stated metric (`value`) and its gap (`gap`), and the gap
    beyond which a recomputed value differs (`tolerance`: half the last printed digit)."""

    value: str
    gap: str
    tolerance: float


#: The metrics `stated` rows may give, each as the report shows it.
STATED = {"mean_wait_ratio": Shown("{:.2f}", "{:+.3f}", 0.005),
          "wait_rho": Shown("{:.2f}", "{:+.3f}", 0.005),
          "within_10_min": Shown("{:.1%}", "{:+.1%}", 0.0005)}
_KEYS = {"catalogue", "seed", "policies", "figures", "traces", "stated", "factors"}


class TraceSetting(NamedTuple):
    """A trace of the report: its catalogue entry, the machine it is replayed on
    (default flat:<machine_size>), the configuration's reading of its header, its fixed
    factors (`simcore.fidelity.factors`) and what its log lacks to go further."""

    entry: TraceEntry
    machine: MachineSpec
    reading: str
    fixed: Model = Model()
    lacks: str = ""


@dataclass(frozen=True)
class FidelityConfig:
    """The report's configuration (see config/fidelity.yaml): where it was read, the
    noise floor's seed, the policies by name, the policy whose figures are drawn, each
    trace's setting, and the stated values (`source`, `note`: what was measured of their
    gaps, and `rows`)."""

    path: Path
    seed: int
    policies: dict[str, PolicySpec]
    figures: str | None
    traces: dict[str, TraceSetting]
    stated_source: str
    stated_note: str
    stated: tuple[dict[str, Any], ...]
    factors: FactorsConfig | None = None

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> FidelityConfig:
        """The configuration in the file at `path`; an error names the file and key."""
        path = Path(path)
        document = read_yaml(path, ConfigError)
        where = f"{path}:"
        if not isinstance(document, dict):
            raise ConfigError(f"{where} expected a mapping with keys {sorted(_KEYS)}")
        unknown = set(document) - _KEYS
        if unknown:
            raise ConfigError(f"{where} unknown key(s) {sorted(unknown)}; expected some of "
                              f"{sorted(_KEYS)}")
        policies = {}
        for name, values in _mapping(document, "policies", where).items():
            if not isinstance(values, dict) or not isinstance(values.get("scheduler"), str):
                raise ConfigError(f"{where} policies.{name}: expected a mapping with a "
                                  "scheduler and its parameters")
            params = {k: v for k, v in values.items() if k != "scheduler"}
            try:
                policies[str(name)] = PolicySpec.from_params(values["scheduler"], params)
            except SimcoreError as exc:
                raise ConfigError(f"{where} policies.{name}: {exc}") from None
            if policies[str(name)].implementation.engine:
                raise ConfigError(f"{where} policies.{name}: scheduler {values['scheduler']} "
                                  "time-shares the machine, and its jobs need a BSP model no "
                                  "log records; expected a space-sharing scheduler")
        figures = document.get("figures")
        if figures is not None and figures not in policies:
            raise ConfigError(f"{where} figures: {figures!r} is no policy; expected one of "
                              f"{sorted(policies)}")
        catalogue_path = document.get("catalogue")
        if not isinstance(catalogue_path, str):
            raise ConfigError(f"{where} catalogue: expected the path of a trace catalogue")
        catalogue = load_catalogue(catalogue_path)
        traces = {}
        for name, values in _mapping(document, "traces", where).items():
            if not isinstance(values, dict) or set(values) - {"machine", "reading",
                                                              "factors"} or \
                    not isinstance(values.get("reading"), str):
                raise ConfigError(f"{where} traces.{name}: expected a mapping with a reading "
                                  "(text) and optionally a machine and factors")
            if name not in catalogue:
                raise ConfigError(f"{where} traces.{name}: not in the catalogue "
                                  f"{catalogue_path}; expected one of {sorted(catalogue)}")
            entry = catalogue[name]
            try:
                machine = MachineSpec.parse(values.get("machine")
                                            or f"flat:{entry.machine_size}")
            except SimcoreError as exc:
                raise ConfigError(f"{where} traces.{name}.machine: {exc}") from None
            fixed, lacks = trace_factors(values.get("factors", {}),
                                         f"{where} traces.{name}.factors")
            if "factors" in document and machine.kind != "flat":
                raise ConfigError(f"{where} traces.{name}.machine: {machine}; the factors "
                                  "replay a log on flat machines; expected flat:N")
            if sum(n for _, n in fixed.partitions) > machine.units or \
                    machine.units % fixed.node_processors:
                raise ConfigError(f"{where} traces.{name}.factors: partitions of "
                                  f"{sum(n for _, n in fixed.partitions)} processors, nodes "
                                  f"of {fixed.node_processors}; expected partitions within "
                                  f"the machine's {machine.units} and nodes that divide it")
            traces[str(name)] = TraceSetting(entry, machine, values["reading"], fixed, lacks)
        stated = document.get("stated", {"source": "", "rows": []})
        rows = stated.get("rows") if isinstance(stated, dict) else None
        if not isinstance(rows, list) or not isinstance(stated.get("source"), str) or \
                not isinstance(stated.get("note", ""), str) or \
                set(stated) - {"source", "note", "rows"}:
            raise ConfigError(f"{where} stated: expected a mapping with source (text), rows "
                              "(a list) and optionally a note (text)")
        for k, row in enumerate(rows):
            _check_stated(row, f"{where} stated.rows[{k}]", traces, policies)
        seed = document.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"{where} seed: {seed!r}; expected an integer >= 0")
        factors = None if "factors" not in document else FactorsConfig.read(
            document["factors"], where, policies, traces)
        return cls(path, seed, policies, figures, traces, stated["source"],
                   stated.get("note", ""), tuple(rows), factors)


def _mapping(document: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = document.get(key)
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where} {key}: expected a non-empty mapping")
    return value


def _check_stated(row: object, where: str, traces: Mapping[str, Any],
                  policies: Mapping[str, Any]) -> None:
    if not isinstance(row, dict) or row.get("trace") not in traces or \
            row.get("policy") not in policies:
        raise ConfigError(f"{where}: expected a trace of traces and a policy of policies, "
                          f"got {row!r}")
    for key, value in row.items():
        if key not in ("trace", "policy") and (key not in STATED or isinstance(
                value, bool) or not isinstance(value, int | float)):
            raise ConfigError(f"{where}.{key}: {value!r}; expected a number of one of "
                              f"{sorted(STATED)}")


@dataclass(frozen=True)
class TraceResult:
    """One trace of the report: its log's header and jobs (before cleaning),
    the cleaned jobs with a requested run time, its replays by policy and the rows of
    its ablation (none where the log records no wait, or the configuration no factors)."""

    name: str
    header: SWFHeader
    log_jobs: int
    requested: int
    replays: dict[str, Replay]
    ablation: list[Row]


def run_report(config: FidelityConfig, progress: Callable[[str], None] = print
               ) -> list[TraceResult]:
    """Replay every trace of `config` under every policy (`progress` hears of each)."""
    results = []
    for name, (entry, machine, *_) in config.traces.items():
        recorded = read_swf(acquire(entry, TRACE.format(trace=name), mirror_dirs()))
        log = clean(recorded)
        waits = numpy_array(log.column("wait_time"))
        replays = {}
        if (waits != MISSING).any():
            check_fits(log, machine, f"{config.path}: traces.{name}: machine {machine}")
            for label, policy in config.policies.items():
                progress(f"{name}: {label} on {machine}")
                try:
                    replays[label] = replay(log, machine, policy.on(machine.capabilities),
                                            config.seed)
                except SimcoreError as exc:
                    raise ConfigError(f"{config.path}: traces.{name} under policies.{label}: "
                                      f"{exc}") from None
        rows = []
        if replays and config.factors is not None:
            progress(f"{name}: the factors, fitted on the first half")
            try:
                rows = ablation(log, machine, config.policies[config.factors.policy],
                                config.factors.grids, config.traces[name].fixed, progress,
                                os.cpu_count() or 1)
            except SimcoreError as exc:
                raise ConfigError(f"{config.path}: traces.{name}.factors: {exc}") from None
        requested = int((numpy_array(log.column("requested_time")) > 0).sum())
        results.append(TraceResult(name, header_of(log),
                                   recorded.num_rows, requested, replays, rows))
    return results


#: The columns of every metrics table of the report and of `simcore fidelity`'s print-out.
METRIC_HEADER = ("jobs", "mean wait sim/rec", "wait rho", "within 10 min", "within 1 h",
                 "median abs start error")


def metric_cells(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The cells of METRIC_HEADER for one set of `compare`'s metrics; "-" for a value
    that does not exist (NaN)."""
    def shown(value: float, text: str) -> str:
        return "-" if math.isnan(value) else text

    return (f"{values['jobs']:,}",
            shown(values["mean_wait_ratio"], f"{values['mean_wait_ratio']:.2f}"),
            shown(values["wait_rho"], f"{values['wait_rho']:.2f}"),
            shown(values["within_10_min"], f"{values['within_10_min']:.1%}"),
            shown(values["within_1_h"], f"{values['within_1_h']:.1%}"),
            shown(values["median_abs_error_s"], f"{values['median_abs_error_s']:.0f} s"))


def report_markdown(config: FidelityConfig, results: list[TraceResult], command: str) -> str:
    """docs/fidelity.md's text for the `results` of `config`, written by `command`."""
    lines = [
        "# Replay fidelity",
        "",
        f"Generated by `{command}` from `{config.path.as_posix()}`; do not edit by hand.",
        "",
        "Each trace is replayed whole, as recorded and cleaned with the default rules "
        "(docs/input.md), on a machine of its size under each policy, and each job's "
        "simulated start is compared with the one its log recorded (submit time plus wait, "
        "SWF fields 2 and 3); docs/schedules.md (\"Against the log\") defines the metrics. "
        "The halves split each cleaned log by job count in queue order, the same for every "
        "policy: a policy fitted on the first half is scored on the second. The noise floor "
        f"is the same replay again with every arrival moved by up to {SHAKE_S:g} s (seed "
        f"{config.seed}) and with jobs submitted in the same second queued the other way, "
        "each against the unperturbed replay over the same jobs: agreement with a log "
        "means something only below the agreement of a replay with itself.",
        "",
        "## Every trace",
        "",
    ]
    rows = []
    for result in results:
        machine = config.traces[result.name].machine
        if not result.replays:
            rows.append((result.name, machine, "no recorded waits",
                         *("-",) * (len(METRIC_HEADER) + 1)))
        for label, found in result.replays.items():
            floor = " / ".join(f"{found.noise_floor[p]['all']['within_10_min']:.1%}"
                               for p in PERTURBATIONS)
            rows.append((result.name, machine, label,
                         *metric_cells(_part(found.fidelity, "all")), floor))
    lines += markdown_table(("trace", "machine", "policy", *METRIC_HEADER,
                             "noise floor, within 10 min: shaken / ties"), rows, names=3)
    if config.factors is not None:
        lines += ["", *factors_section(
            config.factors, {r.name: r.ablation for r in results if r.ablation},
            {r.name: r.replays[config.factors.policy].noise_floor
             for r in results if r.ablation},
            {name: setting.lacks for name, setting in config.traces.items()})]
    for result in results:
        lines += ["", *_trace_section(config, result)]
    lines += ["", *_stated_section(config, results)]
    return "\n".join(lines) + "\n"


def _part(fidelity: Fidelity, name: str) -> Mapping[str, Any]:
    """One entry of `compare`'s report: the counts, or the metrics of "all" jobs or of a
    half."""
    entry = fidelity.report[name]
    assert isinstance(entry, Mapping)  # the report maps each entry's names to values
    return entry


def _trace_section(config: FidelityConfig, result: TraceResult) -> list[str]:
    """One trace: its header's words, the reading, the counts and the metrics."""
    lines = [f"## {result.name}", "", "What its header says:", ""]
    for key, value in result.header.entries:
        if key in HEADER_KEYS:
            lines.append(f"- {key}: " + " ".join(value.split()))
    lines += ["", " ".join(config.traces[result.name].reading.split()), ""]
    if not result.replays:
        lines.append(f"Not replayed: none of its {result.log_jobs:,} jobs records a wait "
                     "(field 3 is -1 throughout).")
        return lines
    counts = _part(next(iter(result.replays.values())).fidelity, "counts")
    removed = ", ".join(f"{rule} {n:,}" for rule, n in counts["cleaning_removed"].items()
                        if n)
    lines += [
        f"{counts['log_jobs']:,} jobs in the log; the cleaning removed "
        f"{sum(counts['cleaning_removed'].values()):,}" + (f" ({removed})" if removed else "")
        + f"; unknown wait {counts['unknown_wait']:,}; compared {counts['compared']:,}; "
        f"replayed on {config.traces[result.name].machine}. Requested run times (field 9) "
        f"are recorded for {result.requested:,} of the cleaned jobs; a job without one is "
        "scheduled on its run time, as with exact run times.",
        "",
        *markdown_table(("policy", "jobs of", *METRIC_HEADER), [
            (label, part.replace("_", " "), *metric_cells(_part(found.fidelity, part)))
            for label, found in result.replays.items() for part in ("all", *HALVES)],
            names=2),
    ]
    if config.figures in result.replays:
        lines += ["", f"Under {config.figures}: simulated against recorded waits, both waits' "
                  "distributions, and the start error over the log (docs/schedules.md, "
                  "\"Against the log\", describes them).", ""]
        lines += [f"![{name.replace('-', ' ')}]({figure_dir(result.name)}/{name}.png)"
                  for name in FIGURES]
    lines += ["", "The noise floor: each perturbed replay against the replay itself.", "",
              *markdown_table(("policy", "perturbation", *METRIC_HEADER), [
                  (label, name.replace("_", " "), *metric_cells(found.noise_floor[name]["all"]))
                  for label, found in result.replays.items() for name in PERTURBATIONS],
                  names=2)]
    return lines


def _stated_section(config: FidelityConfig, results: list[TraceResult]) -> list[str]:
    """The stated values beside the ones recomputed here, and where they differ."""
    replays = {(r.name, label): found for r in results for label, found in r.replays.items()}
    lines = ["## Stated values, recomputed", "",
             "Values stated earlier: " + " ".join(config.stated_source.split()) + ". Each is "
             "recomputed here under this project's cleaning; a value differs where it is "
             "further from the stated one than half its last printed digit.", ""]
    rows, differing = [], []
    for row in config.stated:
        found = replays.get((row["trace"], row["policy"]))
        for metric, shown in STATED.items():
            if metric not in row:
                continue
            here = math.nan if found is None else _part(found.fidelity, "all")[metric]
            gap = here - row[metric]
            differs = not abs(gap) <= shown.tolerance  # NaN differs
            if differs:
                differing.append(f"{row['trace']} {row['policy']} {metric}")
            rows.append((row["trace"], row["policy"], metric.replace("_", " "),
                         shown.value.format(row[metric]),
                         "-" if math.isnan(here) else shown.value.format(here),
                         shown.gap.format(gap) if differs else ""))
    lines += markdown_table(("trace", "policy", "metric", "stated", "here", "differs by"),
                            rows, names=3)
    lines += ["", f"{len(differing)} of {len(rows)} stated values differ"
              + (": " + "; ".join(differing) + "." if differing else ".")]
    if config.stated_note:
        lines += ["", " ".join(config.stated_note.split())]
    return lines


def figure_dir(trace: str) -> str:
    """Where the report's figures of `trace` go, relative to its directory."""
    return f"fidelity/{trace}"


def write_report(config: FidelityConfig, out: Path, command: str,
                 progress: Callable[[str], None] = print) -> Path:
    """Replay `config`'s traces and write `out`/REPORT_MD, atomically, with the figures
    of the `figures` policy's replay of each trace in `out`/`figure_dir(trace)`."""
    results = run_report(config, progress)
    for result in results:
        if config.figures in result.replays:
            found = result.replays[config.figures]
            target = out / figure_dir(result.name)
            target.mkdir(parents=True, exist_ok=True)
            write_fidelity_figures(found.fidelity.residuals, target, result.name,
                                   str(config.traces[result.name].machine), config.figures)
    path = out / REPORT_MD
    atomic_write_bytes(path, report_markdown(config, results, command).encode())
    return path
