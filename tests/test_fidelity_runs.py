"""Replay fidelity as run metrics: the runner stores `compare`'s numbers for a replay of a
log, and nulls for any other run."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math

import polars as pl
import pyarrow as pa
import pytest
import yaml

from simcore.base.errors import SimcoreError
from simcore.core.columns import FIDELITY_SETS, fidelity_metrics, fidelity_name
from simcore.fidelity.compare import compare
from simcore.fidelity.runs import MOVED
from simcore.jobs.cleaning import CLEANING_METADATA_KEY
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.report.tables import aggregate
from simcore.schedules.stored import find_run, stored_schedule
from simcore.sweep.cache import find, read_entries
from simcore.sweep.experiments import Run, Source, plan
from simcore.sweep.runner import Batch, Task, run_shard, simulate_batch
from simcore.sweep.store import (
    read_summaries,
    shard_dir,
    summary_table,
    write_table,
)
from simcore.workload.io import with_source, write_workload
from simcore.workload.spec import WorkloadSpec
from tests.conftest import ROOT
from tests.test_fidelity import JOBS, log, swf_text

NAMES = [c.name for c in fidelity_metrics()]
FCFS = PolicySpec.from_params("fcfs")


def stored_run(root, table: pa.Table, policy: PolicySpec = FCFS,
               **transforms) -> tuple[dict, pa.Table]:
    """The summary row and the schedule the runner stores for `table` on flat:4 under
    `policy` with these transforms."""
    source = Source("hand", trace="T")
    path = root / source.path(1)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_workload(table, path)
    key = hashlib.sha256(f"{policy.key()} {transforms}".encode()).hexdigest()
    task = Task(key, source, Run(WorkloadSpec(**transforms), 1), MachineSpec.parse("flat:4"),
                policy)
    simulate_batch(Batch(str(root), "definitions", True, (task,)))
    runs = read_entries(find(root, "definitions", [key], per_job=True), per_job=True)
    return runs.row(key), runs.job_rows(key)


@pytest.mark.parametrize("transforms", [{}, {"first_jobs": 5, "runtime_scale": 2.0},
                                        {"estimate_factor": 3.0, "machine_fit": "clamp"}])
def test_a_replay_stores_what_compare_finds_over_all_jobs_and_each_half(tmp_path,
                                                                         transforms):
    row, schedule = stored_run(tmp_path, log(), **transforms)
    report = compare(log(), schedule).report
    expected = {fidelity_name(metric, jobs): None if isinstance(value, float)
                and math.isnan(value) else value
                for jobs in FIDELITY_SETS for metric, value in report[jobs or "all"].items()}
    assert {name: row[name] for name in NAMES} == expected
    assert row["fidelity_jobs"] == report["counts"]["compared"] > 0


@pytest.mark.parametrize("transforms", [
    {"insert_per_h": 1.0}, {"replication": 2}, {"arrival_shake_s": 1.0},
    {"offered_load": 0.5}])
def test_a_run_whose_transforms_move_arrivals_or_add_jobs_has_no_fidelity(tmp_path,
                                                                          transforms):
    assert set(transforms) <= set(MOVED)
    row, _ = stored_run(tmp_path, log(), **transforms)
    assert [row[name] for name in NAMES] == [None] * len(NAMES)


def test_a_workload_that_is_no_log_with_waits_has_no_fidelity(tmp_path):
    table = log()
    metadata = {k: v for k, v in table.schema.metadata.items() if k != CLEANING_METADATA_KEY}
    synthetic = table.replace_schema_metadata(metadata)  # what a model's sample is like
    no_waits = log(swf_text([(j, s, -1, r, p, u, q) for j, s, _, r, p, u, q in JOBS]))
    for name, table in {"synthetic": synthetic, "no_waits": no_waits}.items():
        (tmp_path / name).mkdir()
        row, _ = stored_run(tmp_path / name, table)
        assert [row[name] for name in NAMES] == [None] * len(NAMES)


def test_a_sweep_of_a_policy_knob_reads_fidelity_from_its_table(tmp_path):
    names = {"experiment": "fit", "workload": "hand", "machine": "flat", "policy": "easy"}
    rows = [stored_run(tmp_path, log(), PolicySpec.from_params(
        "backfill", {"estimates": estimates}))[0] for estimates in ("requested", "actual")]
    write_table(summary_table(rows), shard_dir(tmp_path, "d", names) / "summary.parquet",
                {"shard": {"dataset": "d", **names}})
    table = aggregate(read_summaries(tmp_path / "d" / "store"))["fidelity"]
    assert table["estimates"].to_list() == ["actual", "requested"]
    for row in rows:
        found = table.filter(pl.col("estimates") == row["estimates"]).row(0, named=True)
        assert found["n"] == 1
        assert found["fidelity_within_10_min_first_half_mean"] == \
            row["fidelity_within_10_min_first_half"]
        assert found["fidelity_median_abs_error_s_mean"] == row["fidelity_median_abs_error_s"]


def test_a_replay_of_a_log_with_a_negative_wait_fails_naming_the_run_and_the_job(tmp_path):
    table = log(swf_text([(j, s, -5 if j == 2 else w, r, p, u, q)
                          for j, s, w, r, p, u, q in JOBS]))
    with pytest.raises(SimcoreError, match=r"^run [0-9a-f]{12} \(.*\): fidelity: job 2 of the "
                       r"log recorded a wait of -5 s \(field 3; 1 such jobs\); expected 0 or "
                       r"more, or -1 for unknown$"):
        stored_run(tmp_path, table)


def test_a_stored_replay_simulated_again_has_the_fidelity_it_stored(tmp_path):
    """The hand-made log stands in for a catalogued trace's converted file."""
    config = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())
    config.update(workloads={"hand": {"trace": "CTC-SP2-1996-3.1-cln"}},
                  machines={"flat": "flat:4"}, policies={"fcfs": {"scheduler": "fcfs"}},
                  experiments={"fit": {"workloads": ["hand"], "machines": ["flat"],
                                       "policies": ["fcfs"], "seeds": [1]}})
    shard = plan(config)[0]
    write_workload(with_source(log(), shard.source.provenance(1)),
                   tmp_path / shard.source.path(1))
    run_shard(shard, tmp_path, log=io.StringIO())
    store = tmp_path / shard.dataset / "store"
    stored = find_run(store, names=shard.names, params={})
    assert stored.row["fidelity_jobs"] == 6
    assert len(stored_schedule(stored, store).jobs) == 7  # simulated again, checked
    changed = dataclasses.replace(stored, row={**stored.row, "fidelity_wait_rho": 0.5})
    with pytest.raises(SimcoreError, match="differs from the stored one in fidelity_wait_rho"):
        stored_schedule(changed, store)
