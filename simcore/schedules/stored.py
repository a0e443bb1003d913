"""The schedule of a run of a result store.

A store row names its shard (the hive directory of its summary.parquet, whose metadata
holds the shard's specification) and, within it, its run (seed and transforms). The
workload file is found under the results root the store sits in (`<root>/<dataset>/store`).
Where the shard kept per-job rows (`per_job: true`), they hold the run's placements and
the schedule is read from them. Otherwise, or on a machine that fails (whose replay needs
the outage events the store does not keep), the run is simulated again; a summary that
differs from the stored one (the code changed since the sweep) is refused rather than
exported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simcore.base.errors import SimcoreError, SpecError
from simcore.core.columns import RUN_METRICS
from simcore.core.placements import PlacementLog
from simcore.core.result import SimulationResult
from simcore.jobs.jobs import Jobs
from simcore.schedules.export import Schedule, time_shared
from simcore.schedules.held import check_holdings, check_times
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
             params: dict[str, str] | None = None, index: int | None = None) -> StoredRun:
    """The run of `store` whose key starts with `run_key`, or the one run of the shard
    `names` (experiment, workload, machine, policy) whose columns equal `params` (and
    that is the shard's `index`-th run); a SpecError says why there is none, or lists the
    candidates where there are several."""
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
    if index is not None:
        found = [r for r in found if _is_run(r, index)]
    if not found:
        what = f"--run-key {run_key}" if names is None else "the shard " + " ".join(
            f"{k}={v}" for k, v in names.items()) + "".join(
            f" {k}={v}" for k, v in (params or {}).items()) + (
            f" --run {index}" if index is not None else "")
        raise SpecError(f"{what}: no run of the store {store} matches")
    if len(found) > 1:
        raise SpecError(f"{len(found)} runs of the store match; expected one, e.g. with "
                        f"--run-key or --param: {_candidates(found)}")
    return found[0]


def _is_run(stored: StoredRun, index: int) -> bool:
    """Whether the stored row is its shard's `index`-th run (an index past the shard's
    runs is an error)."""
    runs = stored.shard.runs
    if not 0 <= index < len(runs):
        raise SpecError(f"--run {index}: the shard has {len(runs)} runs, 0 to {len(runs) - 1}")
    return the_run(stored) is runs[index]


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
    """The matching runs, each by its key's first 12 characters and the shard names or
    columns in which they differ (one run may sit in the shards of several experiments)."""
    def value(run: StoredRun, name: str) -> Any:
        return run.shard.names[name] if name in PARTITIONS else run.row.get(name)

    differ = [c for c in (*PARTITIONS, *DISTINGUISHING)
              if len({json.dumps(value(r, c)) for r in found}) > 1]
    listed = [f"{r.key[:12]} ({', '.join(f'{c}={value(r, c)}' for c in differ)})"
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


def stored_schedule(stored: StoredRun, store: str | Path) -> Schedule:
    """The stored run's schedule: from the shard's per-job rows where it kept them and
    the machine never fails, else simulated again (an error if its summary differs from
    the stored one)."""
    from simcore.workload.transforms import prepare

    shard, run = stored.shard, the_run(stored)
    time_shared(shard.policy_spec, f"run {stored.key[:12]}")
    table = _workload(stored, store, run)
    jobs = prepare(table, run.transforms, shard.machine_spec, run.seed)
    workload = {"source": shard.workload, **run.transforms.to_dict(),
                "store": {**shard.names, "dataset": shard.dataset, "run_key": stored.key}}
    rows = stored.path.with_name("jobs.parquet")
    if shard.per_job and rows.is_file() and not shard.machine_spec.fails():
        schedule = Schedule.of(_kept(stored, rows, jobs), jobs, shard.machine_spec, workload)
        check_holdings(schedule, rows)
        return schedule
    return Schedule.of(_simulated(stored, run, table, jobs), jobs, shard.machine_spec,
                       workload)


def _workload(stored: StoredRun, store: str | Path, run: Run) -> pa.Table:
    """The job table the run simulated (from its workload file), before the run's
    transforms."""
    from simcore.sweep.samples import run_table

    shard = stored.shard
    root = Path(store).resolve().parent.parent
    path = root / shard.source.path(run.seed)
    if not path.is_file():
        raise SpecError(f"run {stored.key[:12]}: its workload file {path} is missing; expected "
                        "the results root the store sits in (<root>/<dataset>/store)")
    return run_table(root, shard.source, run.seed)


def _kept(stored: StoredRun, rows: Path, jobs: Jobs) -> SimulationResult:
    """The run's result as the shard's per-job rows and summary row hold it."""
    table = read_shard(rows)
    table = table.filter(pc.equal(table.column("run_key"), stored.key))
    if table.num_rows == 0 or table.column("placed_at").null_count:
        raise SimcoreError(f"{rows}: no placements of run {stored.key[:12]}; expected the "
                           "per-job rows of every run of the shard")
    table = table.select([name for name in table.column_names if name != "run_key"
                          and table.column(name).null_count < table.num_rows])  # the run's own
    shard = stored.shard
    words = shard.machine_spec.implementation.build(shard.machine_spec, jobs)[0].words
    summary = {"machine": str(shard.machine_spec),
               "policy": {"scheduler": shard.policy_spec.scheduler,
                          **shard.policy_spec.params()},
               "seed": stored.row["seed"], "jobs": len(jobs),
               **{c.name: stored.row[c.name] for c in RUN_METRICS
                  if stored.row.get(c.name) is not None}}  # the metrics the run has
    log = PlacementLog.from_job_columns(table, words)
    check_times(table, log.time_s, log.job_id, rows)
    return SimulationResult(table, summary, np.zeros(0), {}, log)


def _simulated(stored: StoredRun, run: Run, table: pa.Table, jobs: Jobs
               ) -> SimulationResult:
    """The run on `table` (as `jobs`) simulated again; an error if its summary, with its
    fidelity where it replays a log, differs from the stored one."""
    from simcore.fidelity.runs import replay_metrics
    from simcore.simulate import simulate

    shard = stored.shard
    result = simulate(jobs, shard.machine_spec, shard.policy_spec, run.seed)
    fidelity = replay_metrics(table, run.transforms, result.jobs)
    again = run_row(stored.key, shard.machine_spec, shard.policy_spec, run.transforms,
                    run.seed, jobs, {**result.summary, **fidelity})
    differ = [c.name for c in RUN_METRICS
              if c.name in stored.row and not _same(stored.row[c.name], again.get(c.name))]
    if differ:
        raise SimcoreError(f"run {stored.key[:12]} simulated again differs from the stored one "
                           f"in {', '.join(differ[:6])}: the code changed since the sweep; "
                           "re-run the sweep, then export")
    return result
