"""The factors of a log fitted on its first half and scored on its second: the ablation.

Every model simulates the whole log (`simcore.fidelity.factors.model_schedule`) and is
compared with the recorded starts over each half (`compare`). A fit chooses, among
candidate values, the one of least `loss` over the jobs of the first half:

    |ln(mean wait ratio)| + (1 - wait rho) + (1 - share within 10 minutes),

each term 0 for a replay that agrees exactly. The second half is scored and never fitted
on. The search (`ablation`):

1. the textbook replay (every factor off);
2. each factor alone: its grid (which holds its off value), the others off; a fixed
   factor (partitions, whole nodes: from the header) is one model;
3. all factors together: coordinate search from the textbook, each fitted factor in
   turn set to its best value given the others, rounds until none moves (at most
   `MAX_ROUNDS`), the fixed factors on;
4. the diagnostics, never fitted and never scored as predictions: the fitted model with
   outages inferred from the whole log, and the queue ranked by recorded starts.

Models are simulated once each; `Row.configs` counts the distinct models a row's search
tried.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from simcore.core.columns import HALVES
from simcore.fidelity.compare import compare
from simcore.fidelity.factors import PRIORITY_FIELDS, Model, model_schedule
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec

#: The fitted factors: the Model field each sets, from its grid (config `factors.grids`,
#: whose keys these are, and whose values scale to the field's unit by the factor).
FITTED = {"capacity": ("capacity", 1.0), "outage_gap_h": ("outage_gap_s", 3600.0),
          "queue_scale": ("queue_scale", 1.0), "user_scale": ("user_scale", 1.0),
          "group_scale": ("group_scale", 1.0)}
#: The value of each fitted factor that switches it off.
OFF = {"capacity": 1.0, "outage_gap_h": None, "queue_scale": 0.0, "user_scale": 0.0,
       "group_scale": 0.0}
#: The coordinate search stops after this many rounds even if a factor still moves.
MAX_ROUNDS = 4


def loss(metrics: Mapping[str, Any]) -> float:
    """The fit's loss over one half's metrics (module docstring); inf where one is
    undefined."""
    ratio, rho, within = (metrics["mean_wait_ratio"], metrics["wait_rho"],
                          metrics["within_10_min"])
    if any(value is None or math.isnan(value) for value in (ratio, rho, within)) or ratio <= 0:
        return math.inf
    return abs(math.log(ratio)) + (1 - rho) + (1 - within)


@dataclass(frozen=True)
class Row:
    """One row of the ablation: its name, the model, how many models its search tried,
    whether it is a diagnostic, and the metrics over each half (`compare`'s)."""

    name: str
    model: Model
    configs: int
    diagnostic: bool
    halves: dict[str, dict[str, Any]]


class Search:
    """The models of one log, each simulated once (a memo by model), `workers` at a time
    in processes of their own (each model's schedule is the same in any process)."""

    def __init__(self, log: pa.Table, machine: MachineSpec, policy: PolicySpec,
                 progress: Callable[[str], None], pool: Executor | None) -> None:
        self.log, self.machine, self.policy, self.progress = log, machine, policy, progress
        self.pool = pool
        self.memo: dict[Model, dict[str, dict[str, Any]]] = {}

    def halves(self, model: Model) -> dict[str, dict[str, Any]]:
        """The metrics over each half of the log under `model`."""
        self.simulate([model])
        return self.memo[model]

    def simulate(self, models: Sequence[Model]) -> None:
        """Simulate the `models` not simulated yet."""
        missing = [model for model in dict.fromkeys(models) if model not in self.memo]
        for model in missing:
            self.progress(f"  {model.label()}")
        if self.pool is not None and len(missing) > 1:
            found = list(self.pool.map(_model_halves, missing))
        else:
            found = [model_halves(self.log, self.machine, self.policy, model)
                     for model in missing]
        self.memo.update(zip(missing, found, strict=True))

    def best(self, models: Sequence[Model]) -> Model:
        """The model of least first-half loss (the first of equals)."""
        self.simulate(models)
        return min(models, key=lambda model: loss(self.memo[model][HALVES[0]]))


def model_halves(log: pa.Table, machine: MachineSpec, policy: PolicySpec,
                 model: Model) -> dict[str, dict[str, Any]]:
    """`compare`'s metrics over each half of `log` replayed under `model`."""
    report = compare(log, model_schedule(log, machine, policy, model)).report
    return {half: report[half] for half in HALVES}


_WORKER: tuple[pa.Table, MachineSpec, PolicySpec] | None = None


def _start_worker(log: pa.Table, machine: MachineSpec, policy: PolicySpec) -> None:
    global _WORKER
    _WORKER = (log, machine, policy)


def _model_halves(model: Model) -> dict[str, dict[str, Any]]:
    assert _WORKER is not None  # set by the pool's initializer
    return model_halves(*_WORKER, model)


def ablation(log: pa.Table, machine: MachineSpec, policy: PolicySpec,
             grids: Mapping[str, Sequence[float | None]], fixed: Model,
             progress: Callable[[str], None] = print, workers: int = 1) -> list[Row]:
    """The rows of the module docstring for the cleaned `log` replayed on `machine` under
    the textbook `policy`: `grids` by FITTED name (each holding its OFF value), `fixed`
    the model of the log's fixed factors (partitions, whole nodes); `workers` processes
    simulate a grid's models side by side (the rows do not depend on how many). A
    priority factor whose field holds one value throughout the log is left out."""
    grids = {name: grid for name, grid in grids.items()
             if name not in PRIORITY_FIELDS
             or len(pc.unique(log.column(PRIORITY_FIELDS[name]))) > 1}
    if workers <= 1:
        return _ablation(Search(log, machine, policy, progress, None), grids, fixed)
    with ProcessPoolExecutor(workers, get_context("spawn"), _start_worker,
                             (log, machine, policy)) as pool:
        return _ablation(Search(log, machine, policy, progress, pool), grids, fixed)


def _ablation(search: Search, grids: Mapping[str, Sequence[float | None]],
              fixed: Model) -> list[Row]:
    textbook = Model()

    def row(name: str, model: Model, tried: set[Model], diagnostic: bool = False) -> Row:
        return Row(name, model, len(tried), diagnostic, search.halves(model))

    rows = [row("textbook", textbook, {textbook})]
    fixed_factors = {"partitions": fixed.partitions,
                     "whole nodes": fixed.node_processors > 1}
    for name, on in fixed_factors.items():
        if on:
            alone = _only(fixed, name)
            rows.append(row(name, alone, {alone}))
    alone = {name: [_set(textbook, name, value) for value in grid]
             for name, grid in grids.items()}
    search.simulate([model for models in alone.values() for model in models])
    for name, models in alone.items():
        rows.append(row(FACTOR_NAMES[name], search.best(models), set(models)))
    model, tried = fixed, {fixed}
    for _ in range(MAX_ROUNDS):
        moved = False
        for name, grid in grids.items():
            models = [_set(model, name, value) for value in grid]
            tried.update(models)
            best = search.best(models)
            moved |= best != model
            model = best
        if not moved:
            break
    rows.append(row("all factors", model, tried))
    gap = model.outage_gap_s or next((r.model.outage_gap_s for r in rows
                                      if r.model.outage_gap_s is not None), None)
    if gap is not None:
        whole = dataclasses.replace(model, outage_gap_s=gap, outages_from_whole_log=True)
        rows.append(row("all factors, outages from the whole log", whole, {whole}, True))
    recorded = dataclasses.replace(model, recorded_order=True, queue_scale=0.0,
                                   user_scale=0.0, group_scale=0.0)
    rows.append(row("all factors, queue in recorded start order", recorded, {recorded},
                    True))
    return rows


#: The ablation's row name of each fitted factor alone.
FACTOR_NAMES = {"capacity": "capacity", "outage_gap_h": "outages",
                "queue_scale": "queue priorities", "user_scale": "user priorities",
                "group_scale": "group priorities"}


def _set(model: Model, name: str, value: float | None) -> Model:
    """`model` with fitted factor `name` at the grid's `value`."""
    field, unit = FITTED[name]
    return dataclasses.replace(model, **{field: None if value is None else value * unit})


def _only(fixed: Model, name: str) -> Model:
    """The textbook with only fixed factor `name` of `fixed` on."""
    if name == "partitions":
        return Model(partitions=fixed.partitions)
    return Model(node_processors=fixed.node_processors)
