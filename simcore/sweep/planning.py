"""How much a configuration holds, and how much of it the run cache already has: what
`simcore plan` reports before a sweep runs. An experiment with a two-stage plan of seeds
(`simcore.sweep.stages`) holds its pilot's seeds until every pilot run is in the run cache,
then the seeds its pilot's spread fixed (`staged_plan`)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from simcore.base.errors import SpecError
from simcore.base.patterns import REPOSITORY
from simcore.sweep.cache import find, read_entries
from simcore.sweep.config import read_config, validate
from simcore.sweep.experiments import Run, Shard, plan
from simcore.sweep.identity import definitions_of
from simcore.sweep.samples import Listings, workload_digests
from simcore.sweep.stages import Decision, TwoStage, decide
from simcore.workload.traces import load_catalogue

SCHEMA = REPOSITORY / "workflow" / "schemas" / "config.schema.yaml"


@dataclass(frozen=True)
class Stages:
    """Where an experiment's two-stage plan stands: its pilot's runs and how many the run
    cache holds, and once they are all there the decision and the second stage's runs
    (the seeds past the pilot) with how many the cache holds."""

    experiment: str
    two_stage: TwoStage
    pilot_runs: int
    pilot_done: int
    decision: Decision | None = None
    second_runs: int = 0
    second_cached: int = 0

    def describe(self) -> list[str]:
        """Two lines: the pilot, then the second stage."""
        stage = self.two_stage
        pilot = (f"pilot: seeds {_span(stage.pilot_seeds())}, {self.pilot_done} of "
                 f"{self.pilot_runs} runs done")
        decision = self.decision
        if decision is None:
            return [pilot, "second stage: planned after the pilot (run the sweep again once "
                           "it is done)"]
        widest = ("" if not decision.widest else
                  f" (largest relative half-width {_percent(decision.relative)} on "
                  f"{decision.widest})")
        if decision.n == stage.pilot:
            return [pilot, f"second stage: none, n = {decision.n} from the pilot's spread"
                           f"{widest}"]
        seeds = _span(stage.seeds(decision.n)[stage.pilot:])
        return [pilot, f"second stage: n = {decision.n} from the pilot's spread{widest}, "
                       f"seeds {seeds}, {self.second_runs - self.second_cached} to run"]

    def to_dict(self) -> dict[str, Any]:
        stage, decision = self.two_stage, self.decision
        return {"experiment": self.experiment, "pilot_seeds": stage.pilot_seeds(),
                "pilot_runs": self.pilot_runs, "pilot_done": self.pilot_done,
                "metric": stage.metric, "relative_half_width": stage.relative_half_width,
                "level": stage.level, "max": stage.max,
                "n": None if decision is None else decision.n,
                "widest": None if decision is None else decision.widest,
                "widest_relative": None if decision is None else decision.relative,
                "second_runs": self.second_runs, "second_cached": self.second_cached,
                "lines": self.describe()}


def _span(seeds: Sequence[int]) -> str:
    return f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"


def _percent(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.1%}"


def load_plan(configfile: str | os.PathLike[str], notes: list[str] | None = None,
              results: str | os.PathLike[str] | None = None) -> list[Shard]:
    """The shards of the configuration in `configfile`, validated (what it may not mean as
    written appended to `notes`); with `results`, two-stage plans as the run cache under
    it decides them (`staged_plan`), else their pilots."""
    config, catalogue = _read(configfile)
    if results is None:
        return plan(config, catalogue, notes)
    return staged_plan(config, catalogue, results, notes)[0]


def _read(configfile: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The configuration in `configfile`, validated, and the trace catalogue it names."""
    config = read_config(configfile)
    validate(config, SCHEMA)
    return config, load_catalogue(config["traces"]["catalogue"])


def staged_plan(config: Mapping[str, Any], traces: Mapping[str, Any] | None,
                results: str | os.PathLike[str],
                notes: list[str] | None = None) -> tuple[list[Shard], list[Stages]]:
    """The shards of a validated configuration (`plan`), each two-stage experiment with its
    pilot's seeds, or, once every pilot run is in the run cache under `results`, with the n
    seeds its pilot fixed (`simcore.sweep.stages.decide`); and where each stands."""
    pilot = plan(config, traces, notes)
    plans = {s.experiment: s.two_stage for s in pilot if s.two_stage is not None}
    staged = [s for s in pilot if s.experiment in plans]
    values: dict[str, dict[str, list[float | None]]] = {}
    counts: dict[str, list[int]] = {}
    listings: Listings = {}
    for shard, definition in zip(staged, definitions_of(staged), strict=True):
        configurations = values.setdefault(shard.experiment, {})
        count = counts.setdefault(shard.experiment, [0, 0])
        keyed = list(run_keys(shard, definition, results, listings))
        stored = _stored(results, definition, [key for _, key in keyed if key],
                         plans[shard.experiment].metric)
        for run, key in keyed:
            count[0] += 1
            if key in stored:
                count[1] += 1
                configurations.setdefault(_configuration(shard, run), []).append(stored[key])
    stages = {name: Stages(name, plans[name], runs, done)
              for name, (runs, done) in counts.items()}
    for name, stage in stages.items():
        if stage.pilot_done == stage.pilot_runs:
            stages[name] = replace(stage, decision=decide(stage.two_stage, values[name]))
    decided = {name: stage.decision.n for name, stage in stages.items() if stage.decision}
    if not decided:
        return pilot, list(stages.values())
    shards = plan(config, traces, None, decided)
    second = [s for s in shards if s.experiment in decided]
    for shard, definition in zip(second, definitions_of(second), strict=True):
        later = plans[shard.experiment].first + plans[shard.experiment].pilot
        keys = [key for run, key in run_keys(shard, definition, results, listings)
                if run.seed >= later]
        stage = stages[shard.experiment]
        stages[shard.experiment] = replace(
            stage, second_runs=stage.second_runs + len(keys),
            second_cached=stage.second_cached + len(
                find(results, definition, [key for key in keys if key])))
    return shards, list(stages.values())


def _configuration(shard: Shard, run: Run) -> str:
    """A configuration's label: the shard's names and the run's settings, its seed aside."""
    settings = {**run.transforms.changes(), **dict(run.policy), **dict(run.machine)}
    return " ".join([shard.label(), *(f"{k}={v}" for k, v in settings.items())])


def _stored(results: str | os.PathLike[str], definition: str, keys: Sequence[str],
            metric: str) -> dict[str, float | None]:
    """The metric of each run of `keys` whose cache entry exists, read and verified (null,
    or NaN, as None); a run whose entry is damaged is left out (the sweep simulates it
    again)."""
    runs = read_entries(find(results, definition, keys))
    values = {}
    for key in runs.rows:
        value = runs.row(key)[metric]
        values[key] = (None if not isinstance(value, int | float) or not math.isfinite(value)
                       else float(value))
    return values


def summarize_plan(configfile: str | os.PathLike[str],
                   results: str | os.PathLike[str]) -> dict[str, Any]:
    """Shards and runs of the configuration in `configfile`, how many runs have a cache
    entry under `results` (`count_cached`), where each two-stage plan stands (`stages`)
    and the planning's warnings (`notes`)."""
    notes: list[str] = []
    shards, stages = staged_plan(*_read(configfile), results, notes)
    return {**count_cached(shards, definitions_of(shards), results),
            "stages": [stage.to_dict() for stage in stages], "notes": notes}


def run_keys(shard: Shard, definition: str, results: str | os.PathLike[str],
             listings: Listings) -> list[tuple[Run, str | None]]:
    """Each run of `shard` with its key, None where its workload file does not exist yet,
    or is not the one the shard reads (the key depends on its content). `listings` keeps
    what was read of the workload files between calls."""
    digests = [None if isinstance(d, Exception) else d for d in workload_digests(
        results, shard.source, [run.seed for run in shard.runs], listings)]
    known = [(run, digest) for run, digest in zip(shard.runs, digests, strict=True) if digest]
    keys = iter(shard.run_keys([d for _, d in known], definition, [r for r, _ in known]))
    return [(run, None if digest is None else next(keys))
            for run, digest in zip(shard.runs, digests, strict=True)]


def used_keys(configfiles: Sequence[str | os.PathLike[str]],
              results: str | os.PathLike[str]) -> dict[str, set[str]]:
    """The keys of every run the configurations hold (two-stage plans as the run cache
    decides them), by the definitions of their shards: what `simcore store compact`
    keeps. A run whose workload file is not made yet, or is damaged, has no key, so
    nothing could be kept for it: a SpecError names the first."""
    used: dict[str, set[str]] = {}
    listings: Listings = {}
    for configfile in configfiles:
        shards = load_plan(configfile, results=results)
        for shard, definition in zip(shards, definitions_of(shards), strict=True):
            keyed = run_keys(shard, definition, results, listings)
            unknown = [run for run, key in keyed if key is None]
            if unknown:
                raise SpecError(
                    f"{configfile}: {len(unknown)} runs of shard {shard.label()} have no key "
                    f"yet: the workload file {shard.source.path(unknown[0].seed)} under "
                    f"{results} is not made or is damaged; expected every workload made "
                    "(run snakemake first), since compacting keeps only runs with a key")
            used.setdefault(definition, set()).update(key for _, key in keyed if key)
    return used


def count_cached(shards: Sequence[Shard], definitions: Sequence[str],
                 results: str | os.PathLike[str]) -> dict[str, Any]:
    """Shards and runs, and how many runs have a cache entry under `results` (runs whose
    workload file does not exist yet, or is not the one the shard reads, are `unknown`:
    their keys depend on its content), in all and per experiment. `definitions` are the
    shards' (`simcore.sweep.identity.definitions_of`)."""
    listings: Listings = {}
    experiments: dict[str, dict[str, int]] = {}
    totals = {"runs": 0, "cached": 0, "unknown": 0}
    for shard, definition in zip(shards, definitions, strict=True):
        row = experiments.setdefault(shard.experiment, {"shards": 0, "runs": 0, "cached": 0})
        row["shards"] += 1
        keys = [key for _, key in run_keys(shard, definition, results, listings)]
        known = [key for key in keys if key is not None]
        cached = len(find(results, definition, known, shard.per_job))
        row["runs"] += len(keys)
        row["cached"] += cached
        totals["runs"] += len(keys)
        totals["unknown"] += len(keys) - len(known)
        totals["cached"] += cached
    return {"dataset": shards[0].dataset, "shards": len(shards), **totals,
            "to_simulate": totals["runs"] - totals["cached"],
            "experiments": [{"experiment": k, **v} for k, v in experiments.items()]}


def describe_counts(counts: dict[str, Any]) -> str:
    """`count_cached`'s totals as a phrase: shards, runs, cached, to simulate."""
    return (f"{counts['shards']} shards, {counts['runs']} runs: {counts['cached']} cached, "
            f"{counts['to_simulate']} to simulate"
            + (f", {counts['unknown']} whose workload file is not made yet"
               if counts["unknown"] else ""))
