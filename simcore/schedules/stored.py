"""A run of a result store simulated again, its placements recorded, for its schedule.

A store row names its shard (the hive directory of its summary.parquet, whose metadata
holds the shard's specification) and, within it, its run (seed and transforms). The
workload file is found under the results root the store sits in (`<root>/<dataset>/store`).
The run is simulated again with its placement log; a summary that differs from the stored
one (the code changed since the sweep) is refused rather than exported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcore.base.errors import SimcoreError, SpecError
from simcore.core.metrics import RUN_METRICS
from simcore.schedules.export import Schedule
from simcore.sweep.experiments import Run, Shard
from simcore.sweep.store import PARAMETERS, PARTITIONS, read_shard, run_row

#: Columns that tell runs of one shard apart, shown when several match.
DISTINGUISHING = ("seed", *(c.name for c in PARAMETERS))


@dataclass(frozen=True)
class StoredRun:
    """One row of a store's summaries, its shard file and the shard's specification."""

    row: dict[str, Any]
    path: Path
    shard: Shard

    @property
    def key(self) -> str:
        return str(self.row["run_key"])


def find_run(store: str | Path, run_key: str | None = None,
             names: dict[str, str] | None = None,
             params: dict[str, str] | None = None) -> StoredRun:
    """The run of `store` whose key starts with `run_key`, or the one run of the shard
    `names` (experiment, workload, machine, policy) whose columns equal `params`; a
    SpecError says why there is none, or lists the candidates where there are several."""
    if (run_key is None) == (names is None):
        raise SpecError("expected --run-key, or --experiment, --workload, --machine and "
                        "--policy")
    store = Path(store)
    pattern = "**/summary.parquet" if names is None else "/".join(
        f"{p}={names[p]}" for p in PARTITIONS) + "/summary.parquet"
    found = []
    for path in sorted(store.glob(pattern)):
        table = read_shard(path)
        for row in table.to_pylist():
            if run_key is not None and not str(row["run_key"]).startswith(run_key):
                continue
            if not all(_equal(row, k, v) for k, v in (params or {}).items()):
                continue
            found.append(StoredRun(row, path, Shard.from_json(
                (table.schema.metadata or {})[b"shard"].decode())))
    if not found:
        what = f"--run-key {run_key}" if run_key is not None else "the shard " + " ".join(
            f"{k}={v}" for k, v in names.items()) + "".join(
            f" {k}={v}" for k, v in (params or {}).items())
        raise SpecError(f"{what}: no run of the store {store} matches")
    if len(found) > 1:
        raise SpecError(f"{len(found)} runs of the store match; expected one, e.g. with "
                        f"--run-key or --param: {_candidates(found)}")
    return found[0]


def _equal(row: dict[str, Any], name: str, text: str) -> bool:
    """Whether the row's column `name` holds the value `text` means."""
    if name not in row:
        raise SpecError(f"--param {name}: no such column of the store's summaries")
    value = row[name]
    if value is None:
        return text in ("", "null", "none", "None")
    try:
        if isinstance(value, bool):
            return value == (text.lower() in ("true", "1", "yes"))
        if isinstance(value, int):
            return value == int(text)
        if isinstance(value, float):
            return math.isclose(value, float(text), rel_tol=1e-12)
    except ValueError:
        raise SpecError(f"--param {name}={text}: expected a value such as {value!r}") from None
    return str(value) == text


def _candidates(found: list[StoredRun]) -> str:
    """The matching runs, each by its key's first 12 characters and the columns in which
    they differ."""
    differ = [c for c in DISTINGUISHING if len({json.dumps(r.row.get(c)) for r in found}) > 1]
    listed = [f"{r.key[:12]} ({', '.join(f'{c}={r.row.get(c)}' for c in differ)})"
              if differ else r.key[:12] for r in found[:10]]
    return "; ".join(listed) + ("; ..." if len(found) > 10 else "")


def the_run(stored: StoredRun) -> Run:
    """The shard's run the row is: its seed and transforms."""
    for run in stored.shard.runs:
        if run.seed == stored.row["seed"] and all(
                _same(stored.row.get(k), v) for k, v in run.transforms.to_dict().items()):
            return run
    raise SimcoreError(f"{stored.path}: no run of its shard has the seed and transforms of "
                       f"run {stored.key[:12]}")


def _same(stored: Any, value: Any) -> bool:
    if isinstance(value, float) and isinstance(stored, float):
        return math.isclose(stored, value, rel_tol=1e-12) or (
            math.isnan(stored) and math.isnan(value))
    return stored == value


def resimulate(stored: StoredRun, store: str | Path) -> Schedule:
    """The stored run simulated again with its placement log, as a Schedule; an error if
    its summary differs from the stored one."""
    from simcore.simulate import simulate
    from simcore.workload.io import read_workload
    from simcore.workload.transforms import prepare

    shard, run = stored.shard, the_run(stored)
    root = Path(store).resolve().parent.parent
    path = root / shard.source.path(run.seed)
    if not path.is_file():
        raise SpecError(f"run {stored.key[:12]}: its workload file {path} is missing; expected "
                        "the results root the store sits in (<root>/<dataset>/store)")
    table = read_workload(path, shard.source.provenance(run.seed))
    jobs = prepare(table, run.transforms, shard.machine_spec, run.seed)
    result = simulate(jobs, shard.machine_spec, shard.policy_spec, run.seed,
                      record_placements=True)
    again = run_row(stored.key, shard.machine_spec, shard.policy_spec, run.transforms,
                    run.seed, jobs, result.summary)
    differ = [c.name for c in RUN_METRICS
              if c.name in stored.row and not _same(stored.row[c.name], again.get(c.name))]
    if differ:
        raise SimcoreError(f"run {stored.key[:12]} simulated again differs from the stored one "
                           f"in {', '.join(differ[:6])}: the code changed since the sweep; "
                           "re-run the sweep, then export")
    workload = {"source": shard.workload, **run.transforms.to_dict(),
                "store": {**shard.names, "dataset": shard.dataset, "run_key": stored.key}}
    return Schedule.of(result, jobs, shard.machine_spec, workload)
