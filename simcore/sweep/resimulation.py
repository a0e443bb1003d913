"""Simulating chosen runs again: after the store gained a column (a new run metric or
parameter), older cache entries read it as null; `resimulate` fills it in for the runs a
researcher selects, by experiment, policy or parameter value, and for no others."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from simcore.base.errors import SpecError
from simcore.base.params import SEED, Parameter
from simcore.machines.registry import all_options
from simcore.policy import all_parameters
from simcore.sweep.cache import forget
from simcore.sweep.experiments import Run, Shard
from simcore.sweep.identity import definitions
from simcore.sweep.planning import load_plan
from simcore.sweep.runner import run_shard, shard_tasks
from simcore.workload.spec import transforms


def selectable() -> dict[str, Parameter]:
    """What `--where NAME=VALUE` may name: a transform, a scheduler parameter, an allocator
    option or the seed."""
    return {**{name: f.metadata["parameter"] for name, f in transforms().items()},
            **all_parameters(), **all_options(), SEED.name: SEED}


def conditions(texts: Sequence[str]) -> dict[str, Any]:
    """`NAME=VALUE` texts as {name: value converted by the parameter}; a SpecError names a
    text that is not of that form or a name nothing has."""
    known = selectable()
    out: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or name not in known:
            raise SpecError(f"--where {text!r}: expected NAME=VALUE, NAME one of "
                            f"{', '.join(sorted(known))}")
        out[name] = None if value == "null" else known[name].convert(value)
    return out


def matches(shard: Shard, run: Run, where: Mapping[str, Any]) -> bool:
    """Whether `run` has every value of `where` (a name it does not have never matches)."""
    values = {**run.transforms.to_dict(), **dict(shard.machine_of(run).options),
              **shard.policy_of(run).params(), SEED.name: run.seed}
    return all(name in values and values[name] == value for name, value in where.items())


def resimulate(configfile: str | os.PathLike[str], results: str | os.PathLike[str],
               experiments: Sequence[str] = (), policies: Sequence[str] = (),
               where: Mapping[str, Any] | None = None, workers: int = 1,
               log: TextIO = sys.stderr) -> int:
    """Forget the cache entries of the selected runs of the configuration and run their
    shards again, which simulates those runs and rewrites the shard files; returns how many
    runs were simulated. Selections combine: experiments (any of), policies (any of) and
    every condition of `where`."""
    shards = load_plan(configfile, results=results)
    for name, known in (("experiment", {s.experiment for s in shards}),
                        ("policy", {s.policy for s in shards})):
        chosen = experiments if name == "experiment" else policies
        unknown = sorted(set(chosen) - known)
        if unknown:
            raise SpecError(f"--{name} {unknown[0]}: not in {configfile}; expected one of "
                            f"{', '.join(sorted(known))}")
    root = Path(results).resolve()
    simulated = 0
    for shard in shards:
        if (experiments and shard.experiment not in experiments) or \
                (policies and shard.policy not in policies):
            continue
        definition = definitions(shard)
        tasks = [t for t in shard_tasks(shard, root, definition)
                 if matches(shard, t.run, where or {})]
        if not tasks:
            continue
        forget(root, definition, [task.key for task in tasks], log)
        simulated += run_shard(shard, root, workers, log=log).simulated
    return simulated
