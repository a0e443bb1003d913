"""The replay-fidelity report's ablation (docs/fidelity.md, "Closing the replay gap"): its
configuration (config/fidelity.yaml, `factors`) and its section.

Per trace with recorded waits, the rows of `simcore.fidelity.fit.ablation` over each half
beside the textbook replay's noise floor over the second half; then the targets on the
scored halves of the targeted traces, met or by how far, and what each log lacks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simcore.base.errors import ConfigError
from simcore.base.texttable import markdown_table
from simcore.fidelity.factors import Model
from simcore.fidelity.fit import FACTOR_NAMES, FITTED, MAX_ROUNDS, OFF, Row
from simcore.fidelity.noise import PERTURBATIONS

_KEYS = {"policy", "grids", "targets"}
_TRACE_KEYS = {"partitions", "node_processors", "lacks"}
#: The targets' metrics, each with how a target is read: a [low, high] range or a floor.
TARGETS = ("mean_wait_ratio", "wait_rho", "within_10_min")


@dataclass(frozen=True)
class FactorsConfig:
    """`factors` of the configuration: the textbook policy's name, the grids of the
    fitted factors (each with its off value first), the traces the targets apply to and
    the targets by metric (`TARGETS`: a (low, high) range or a floor)."""

    policy: str
    grids: dict[str, tuple[float | None, ...]]
    target_traces: tuple[str, ...]
    targets: dict[str, tuple[float, float]]

    @classmethod
    def read(cls, document: object, where: str, policies: Mapping[str, Any],
             traces: Mapping[str, Any]) -> FactorsConfig:
        """`factors` of a configuration; an error names the file and key."""
        where = f"{where} factors"
        if not isinstance(document, dict) or set(document) != _KEYS:
            raise ConfigError(f"{where}: expected a mapping with keys {sorted(_KEYS)}")
        policy = document["policy"]
        if policy not in policies:
            raise ConfigError(f"{where}.policy: {policy!r} is no policy; expected one of "
                              f"{sorted(policies)}")
        grids = document["grids"]
        if not isinstance(grids, dict) or set(grids) - set(FITTED):
            raise ConfigError(f"{where}.grids: expected a mapping with some of "
                              f"{sorted(FITTED)}")
        checked = {}
        for name, values in grids.items():
            highest = 1.0 if name == "capacity" else math.inf
            if not isinstance(values, list) or not values or values[0] != OFF[name] or \
                    not all(_number(v) and 0 < v <= highest for v in values[1:]) or \
                    len(set(values)) != len(values):
                raise ConfigError(f"{where}.grids.{name}: {values!r}; expected a list of "
                                  f"distinct values, the first {OFF[name]!r} (off), the "
                                  "others numbers > 0" + (" and <= 1" if highest == 1 else ""))
            checked[name] = tuple(values)
        targets = document["targets"]
        if not isinstance(targets, dict) or set(targets) != {"traces", *TARGETS}:
            raise ConfigError(f"{where}.targets: expected a mapping with keys "
                              f"{sorted({'traces', *TARGETS})}")
        names = targets["traces"]
        if not isinstance(names, list) or any(name not in traces for name in names):
            raise ConfigError(f"{where}.targets.traces: {names!r}; expected a list of "
                              "traces of traces")
        bounds = {}
        for metric in TARGETS:
            value = targets[metric]
            if not _number(value) and (not isinstance(value, list) or len(value) != 2 or
                                       not all(_number(v) for v in value) or
                                       value[0] > value[1]):
                raise ConfigError(f"{where}.targets.{metric}: {targets[metric]!r}; expected "
                                  "a number (a floor) or [low, high]")
            bounds[metric] = (float(value), math.inf) if _number(value) else \
                (float(value[0]), float(value[1]))
        return cls(policy, checked, tuple(names), bounds)


def trace_factors(values: Mapping[str, Any], where: str) -> tuple[Model, str]:
    """A trace's fixed factors (`partitions`: {partition: processors}, `node_processors`)
    as a Model, and what its log lacks (`lacks`, text)."""
    unknown = set(values) - _TRACE_KEYS
    partitions = values.get("partitions", {})
    nodes = values.get("node_processors", 1)
    lacks = values.get("lacks", "")
    if unknown or not isinstance(partitions, dict) or not isinstance(lacks, str) or \
            not all(str(p).lstrip("-").isdigit() and isinstance(n, int) and n > 0
                    for p, n in partitions.items()) or \
            not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise ConfigError(f"{where}: expected a mapping with some of {sorted(_TRACE_KEYS)}: "
                          "partitions {'partition': processors}, node_processors (an integer "
                          ">= 1), lacks (text)")
    return Model(partitions=tuple(sorted((int(p), n) for p, n in partitions.items())),
                 node_processors=nodes), lacks


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)


def factors_section(config: FactorsConfig, ablations: Mapping[str, Sequence[Row]],
                    floors: Mapping[str, Mapping[str, Any]],
                    lacks: Mapping[str, str]) -> list[str]:
    """The section: the ablation table, the targets and what each log lacks. `floors`:
    the textbook replay's noise floor of each trace (`noise_floor`'s mapping)."""
    grids = "; ".join(f"{FACTOR_NAMES[name]} {_grid(name, values)}"
                      for name, values in config.grids.items())
    lines = [
        "## Closing the replay gap: factors fitted on the first half, scored on the second",
        "",
        f"The textbook replay ({config.policy}) and, each alone and all together, what the "
        "log records beyond it (`simcore.fidelity.factors`): partitions and whole-node "
        "allocation where the header gives them, and fitted on the first half's recorded "
        "waits alone: the share of the processors the jobs had (capacity), outages "
        "inferred from the first half's recorded starts (drains: no new starts, running "
        "jobs continue), and priorities by queue, user and group as head starts (left out "
        "where the log records one value throughout). Nothing of "
        "the second half's recorded waits or starts is an input (the first half's jobs' "
        "recorded waits are, including those of its last jobs, which started after the "
        "second half's first arrival). The fit minimises "
        "|ln mean wait ratio| + (1 - rho) + (1 - within 10 min) over the first half, each "
        f"factor over its grid ({grids}); all factors together by coordinate search "
        f"(at most {MAX_ROUNDS} rounds). \"models\" counts the models a row's search "
        "simulated. Diagnostics (marked) use the second half's recorded starts and are "
        "never predictions. The noise floor is the textbook replay against itself over "
        "the second half.",
        "",
    ]
    rows = []
    for trace, found in ablations.items():
        floor = " / ".join(f"{floors[trace][p]['second_half']['within_10_min']:.1%}"
                           for p in PERTURBATIONS)
        for row in found:
            first, second = row.halves["first_half"], row.halves["second_half"]
            rows.append((trace, row.name + (" (diagnostic)" if row.diagnostic else ""),
                         row.model.label(), f"{row.configs}", *_cells(first),
                         *_cells(second), floor))
    lines += markdown_table(
        ("trace", "model", "fitted values", "models", "1st: ratio", "1st: rho",
         "1st: within 10 min", "2nd: ratio", "2nd: rho", "2nd: within 10 min",
         "noise floor, 2nd within 10 min: shaken / ties"), rows, names=3)
    lines += ["", "### Targets on the scored halves", "",
              "Targets: " + ", ".join(f"{m.replace('_', ' ')} {_bound(m, b)}"
                                      for m, b in config.targets.items())
              + ", by the second half of all factors together.", ""]
    target_rows = []
    for trace in config.target_traces:
        if trace not in ablations:
            continue
        best = next(r for r in ablations[trace] if r.name == "all factors")
        textbook = ablations[trace][0]
        for metric, bound in config.targets.items():
            before = textbook.halves["second_half"][metric]
            after = best.halves["second_half"][metric]
            target_rows.append((trace, metric.replace("_", " "), _bound(metric, bound),
                                _shown(metric, before), _shown(metric, after),
                                _verdict(metric, after, bound)))
    lines += markdown_table(("trace", "metric", "target", "textbook", "all factors",
                             "met?"), target_rows, names=2)
    lines += ["", "### What each log lacks", ""]
    lines += [f"- {trace}: " + " ".join(text.split()) for trace, text in lacks.items()
              if text and trace in ablations]
    return lines


def _grid(name: str, values: Sequence[float | None]) -> str:
    return "off, " + ", ".join(f"{v:g}" for v in values[1:] if v is not None) + \
        (" h" if name == "outage_gap_h" else "")


def _cells(metrics: Mapping[str, Any]) -> tuple[str, str, str]:
    return tuple(_shown(m, metrics[m]) for m in TARGETS)  # type: ignore[return-value]


def _shown(metric: str, value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.1%}" if metric == "within_10_min" else f"{value:.2f}"


def _bound(metric: str, bound: tuple[float, float]) -> str:
    low, high = bound
    if high == math.inf:
        return f">= {_shown(metric, low)}"
    return f"[{_shown(metric, low)}, {_shown(metric, high)}]"


def _verdict(metric: str, value: float, bound: tuple[float, float]) -> str:
    """"yes", or how far the value is from the target."""
    low, high = bound
    if value is None or math.isnan(value):
        return "no value"
    if low <= value <= high:
        return "yes"
    gap = low - value if value < low else value - high
    return f"no, short by {_shown(metric, gap)}" if value < low else \
        f"no, over by {_shown(metric, gap)}"
