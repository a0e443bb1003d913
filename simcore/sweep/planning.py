"""How much a configuration holds, and how much of it the run cache already has: what
`simcore plan` reports before a sweep runs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simcore.base.checksums import recorded_digest
from simcore.base.errors import IntegrityError
from simcore.base.patterns import REPOSITORY
from simcore.sweep.config import read_config, validate
from simcore.sweep.experiments import Shard, plan
from simcore.sweep.identity import definitions_of
from simcore.sweep.store import cache_path
from simcore.workload.io import read_workload
from simcore.workload.traces import load_catalogue

SCHEMA = REPOSITORY / "workflow" / "schemas" / "config.schema.yaml"


def load_plan(configfile: str | os.PathLike[str],
              notes: list[str] | None = None) -> list[Shard]:
    """The shards of the configuration in `configfile`, validated (what it may not mean as
    written appended to `notes`)."""
    config = read_config(configfile)
    validate(config, SCHEMA)
    return plan(config, load_catalogue(config["traces"]["catalogue"]), notes)


def summarize_plan(configfile: str | os.PathLike[str],
                   results: str | os.PathLike[str]) -> dict[str, Any]:
    """Shards and runs of the configuration in `configfile`, how many runs have a cache
    entry under `results` (`count_cached`), and the planning's warnings (`notes`)."""
    notes: list[str] = []
    shards = load_plan(configfile, notes)
    return {**count_cached(shards, definitions_of(shards), results), "notes": notes}


def count_cached(shards: Sequence[Shard], definitions: Sequence[str],
                 results: str | os.PathLike[str]) -> dict[str, Any]:
    """Shards and runs, and how many runs have a cache entry under `results` (runs whose
    workload file does not exist yet, or is not the one the shard reads, are `unknown`:
    their keys depend on its content), in all and per experiment. `definitions` are the
    shards' (`simcore.sweep.identity.definitions_of`)."""
    digests: dict[str, str | None] = {}
    experiments: dict[str, dict[str, int]] = {}
    totals = {"runs": 0, "cached": 0, "unknown": 0}
    for shard, definition in zip(shards, definitions, strict=True):
        row = experiments.setdefault(shard.experiment, {"shards": 0, "runs": 0, "cached": 0})
        row["shards"] += 1
        for run in shard.runs:
            path = Path(results) / shard.source.path(run.seed)
            if str(path) not in digests:
                try:
                    digests[str(path)] = recorded_digest(
                        read_workload(path, shard.source.provenance(run.seed)))
                except (FileNotFoundError, IntegrityError):
                    digests[str(path)] = None
            row["runs"] += 1
            totals["runs"] += 1
            if digests[str(path)] is None:
                totals["unknown"] += 1
            elif cache_path(results, shard.run_key(run, digests[str(path)], definition)).exists():
                row["cached"] += 1
                totals["cached"] += 1
    return {"dataset": shards[0].dataset, "shards": len(shards), **totals,
            "to_simulate": totals["runs"] - totals["cached"],
            "experiments": [{"experiment": k, **v} for k, v in experiments.items()]}


def describe_counts(counts: dict[str, Any]) -> str:
    """`count_cached`'s totals as a phrase: shards, runs, cached, to simulate."""
    return (f"{counts['shards']} shards, {counts['runs']} runs: {counts['cached']} cached, "
            f"{counts['to_simulate']} to simulate"
            + (f", {counts['unknown']} whose workload file is not made yet"
               if counts["unknown"] else ""))
