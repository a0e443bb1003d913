"""The result store knows what it holds: a shard file is refused when damaged or written for
another shard, with how to repair it, and the workflow's check finds such files cheaply."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from simcore.base.checksums import file_digest
from simcore.base.errors import IntegrityError
from simcore.jobs.cleaning import CleaningOptions
from simcore.policy import PolicySpec
from simcore.sweep import store
from simcore.sweep.cache import legacy_path
from simcore.sweep.experiments import Source, plan
from simcore.sweep.planning import summarize_plan
from simcore.sweep.runner import run_shard
from simcore.sweep.samples import write_samples
from simcore.sweep.store import SEAL_KEY, damaged_shards, read_shard, read_summaries, shard_dir
from simcore.workload.io import convert_trace, read_workload
from tests.conftest import ROOT
from tests.test_absurd_input import refused
from tests.test_runner import CONFIG, heavy_shard, workloads


@pytest.fixture
def two_shards(tmp_path: Path) -> tuple[Path, Path]:
    """The summary files of two shards of one dataset (policies bm and fcfs)."""
    shard = heavy_shard(jobs=60, loads=(0.6,), seeds=(1, 2))
    workloads(tmp_path, shard)
    other = dataclasses.replace(shard, policy="fcfs", policy_spec=PolicySpec("fcfs"))
    files = []
    for each in (shard, other):
        run_shard(each, tmp_path, log=io.StringIO())
        files.append(shard_dir(tmp_path, each.dataset, each.names) / "summary.parquet")
    return files[0], files[1]


def damage(path: Path, how: str, other: Path) -> None:
    """Damage `path` keeping its modification time, as a hostile user can."""
    info = path.stat()
    if how == "truncate":
        path.write_bytes(path.read_bytes()[:-100])
    elif how == "edit":  # one value changed, the metadata and its checksums kept
        table = pq.read_table(path)
        column = table.schema.get_field_index("utilization")
        edited = pa.array([0.5] * table.num_rows, pa.float64())
        pq.write_table(table.set_column(column, "utilization", edited), path)
    else:  # "foreign": another shard's whole, valid file
        shutil.copyfile(other, path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize(("how", "message"), [
    ("truncate", "unreadable"),
    ("edit", "content does not match its checksum"),
    ("foreign", "written for another shard: policy 'fcfs' (its place: 'bm')"),
])
def test_tables_refuse_a_damaged_shard_saying_how_to_repair(two_shards, how, message):
    bm, fcfs = two_shards
    damage(bm, how, fcfs)
    with pytest.raises(IntegrityError, match=re.escape(message)) as refused:
        read_summaries(None, [bm, fcfs])
    assert str(refused.value).startswith(f"{bm}: ")
    assert str(refused.value).endswith(
        "remove it and run snakemake again: the shard is rebuilt from the run cache, "
        "simulating only runs the cache lacks")


def test_a_shard_of_another_dataset_is_refused(two_shards, tmp_path):
    bm, _ = two_shards
    moved = tmp_path / "elsewhere" / bm.relative_to(tmp_path / "torus-sweep-test")
    moved.parent.mkdir(parents=True)
    shutil.copyfile(bm, moved)
    with pytest.raises(IntegrityError, match="dataset 'torus-sweep-test' "
                                             "\\(its place: 'elsewhere'\\)"):
        read_shard(moved)


def as_written(*files: Path) -> dict[str, str]:
    """Each file with the shard specification it was written for, as the configuration
    that planned it gives it to the workflow's check ("{}" for a file not made yet)."""
    return {str(f): pq.read_schema(f).metadata[b"shard"].decode() if f.exists() else "{}"
            for f in files}


@pytest.mark.parametrize("how", ["truncate", "edit", "foreign"])
def test_the_workflow_check_finds_damage_that_keeps_the_mtime(two_shards, tmp_path, how):
    bm, fcfs = two_shards
    planned = as_written(bm, fcfs, tmp_path / "not-made-yet" / "summary.parquet")
    assert damaged_shards(planned) == {}
    damage(bm, how, fcfs)
    found = damaged_shards(planned)
    assert list(found) == [str(bm)] and found[str(bm)].startswith(f"{bm}: ")


def test_the_workflow_check_reads_only_files_that_changed(two_shards, tmp_path, monkeypatch):
    """Written shard files are known good; a file is read again once it changed, and
    then, when it passes, known good again."""
    bm, fcfs = two_shards
    read = []
    checked = store.read_shard
    monkeypatch.setattr(store, "read_shard", lambda path: read.append(path) or checked(path))
    planned = as_written(bm, fcfs)
    assert damaged_shards(planned) == {} and read == []
    shutil.copyfile(bm, tmp_path / "copy")  # a rewrite in place: same bytes, new stamp
    os.replace(tmp_path / "copy", bm)
    assert damaged_shards(planned) == {} and read == [str(bm)]
    assert damaged_shards(planned) == {} and read == [str(bm)]


# -- a shard file's specification: inside its checksum, and the configuration's --------------

#: Rewrites of a shard specification that keep the directories' names.
REWRITES: dict[str, Callable[[dict], dict]] = {
    "machine": lambda spec: {**spec, "machine_spec": "mesh:2x2x4"},
    "policy": lambda spec: {**spec, "policy_spec": {**spec["policy_spec"], "start_delay_s": 1.0}},
    "run order": lambda spec: {**spec, "runs": spec["runs"][::-1]},
}


def rewrite_specification(path: Path, change: Callable[[dict], dict]) -> None:
    """Give a shard file another specification in its metadata, its rows and their
    recorded checksum kept (as anyone with pyarrow can)."""
    table = pq.read_table(path)
    metadata = dict(table.schema.metadata)
    metadata[b"shard"] = json.dumps(change(json.loads(metadata[b"shard"]))).encode()
    pq.write_table(table.replace_schema_metadata(metadata), path, compression="zstd")


@pytest.mark.parametrize("rewrite", REWRITES)
@pytest.mark.parametrize("command", ["tables", "export", "archive pack"])
def test_commands_refuse_a_shard_whose_specification_was_rewritten(two_shards, tmp_path,
                                                                   capsys, rewrite, command):
    bm, _ = two_shards
    key = pq.read_table(bm).column("run_key")[0].as_py()
    rewrite_specification(bm, REWRITES[rewrite])
    dataset, out = tmp_path / "torus-sweep-test", tmp_path / "out.tar"
    (dataset / "tables").mkdir()
    (dataset / "tables" / "summary.csv").write_text("policy\nbm\n")
    argv = {"tables": ["tables", "--store", str(dataset / "store"), "--out", str(out)],
            "export": ["export", "--store", str(dataset / "store"), "--run-key", key,
                       "--out", str(out)],
            "archive pack": ["archive", "pack", "--out", str(out), "--results", str(dataset)]}
    error = refused(capsys, *argv[command])
    assert f"{bm}: metadata does not match its checksum" in error
    assert not out.exists()


def test_the_workflow_check_refuses_a_shard_of_another_specification(tmp_path):
    """A shard made for an earlier configuration (a restored backup of its directory, its
    `.checked` records with it) is removed and rebuilt by the workflow, never read."""
    shard = heavy_shard(jobs=60, loads=(0.6,), seeds=(1,))
    workloads(tmp_path, shard)
    delayed = dataclasses.replace(shard,
                                  policy_spec=shard.policy_spec.replace(start_delay_s=1.0))
    directory = shard_dir(tmp_path, shard.dataset, shard.names)
    files = [directory / "summary.parquet", directory / "jobs.parquet"]
    run_shard(shard, tmp_path, log=io.StringIO())
    backup = shutil.copytree(directory, tmp_path / "backup")
    planned = {str(f): delayed.to_json() for f in files}

    def refused_as_stale() -> None:
        found = damaged_shards(planned)
        assert sorted(found) == sorted(planned)
        assert all("policy_spec.start_delay_s 0.0 (the configuration's: 1.0)" in problem
                   for problem in found.values()), found

    refused_as_stale()  # unchanged files, but the configuration now plans another shard
    run_shard(delayed, tmp_path, log=io.StringIO())
    assert damaged_shards(planned) == {}
    shutil.rmtree(directory)
    shutil.copytree(backup, directory)
    refused_as_stale()


def test_a_shard_file_of_an_older_simcore_is_rebuilt_not_trusted(two_shards):
    """A file whose checksums leave its metadata out, with the record an older simcore
    wrote beside it: the workflow's check removes it for a rebuild from the run cache, and
    readers refuse it saying so."""
    bm, fcfs = two_shards
    planned = as_written(bm, fcfs)
    table = pq.read_table(bm)
    older = {k: v for k, v in table.schema.metadata.items() if k != SEAL_KEY}
    pq.write_table(table.replace_schema_metadata(older), bm, compression="zstd")
    info = bm.stat()
    stamp = [info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]
    bm.with_name(".summary.parquet.checked").write_text(
        json.dumps({"stat": stamp, "sha256": file_digest(bm)}))
    problem = f"{bm}: no checksum of its metadata (a file of an older simcore)"
    assert damaged_shards(planned) == {str(bm): problem}
    with pytest.raises(IntegrityError, match=re.escape(f"{problem}; remove it and run")):
        read_shard(bm)


# -- workload files: what made them, and whose they are ------------------------------------

@pytest.mark.parametrize("made", ["other seeds", "another source"])
def test_a_sample_file_without_the_runs_sample_is_refused(tmp_path, made):
    shard = heavy_shard(jobs=60, loads=(0.6,), seeds=(1, 2))
    path = tmp_path / shard.source.path(1)
    spec = shard.source.synthetic
    if made == "another source":  # same seeds, other parameters (a file copied in)
        spec = dataclasses.replace(spec, params=tuple(
            (k, 61 if k == "jobs" else v) for k, v in spec.params))
    write_samples(spec, (2, 3) if made == "other seeds" else (1, 2), path.parent)
    with pytest.raises(IntegrityError, match=re.escape(
            f"{path}: holds no sample of lublin16 with seed 1; remove it and run snakemake "
            "again to make the workload's samples again")):
        run_shard(shard, tmp_path, log=io.StringIO())


def test_a_trace_workload_records_its_sha256_and_cleaning(tmp_path):
    swf = tmp_path / "T.swf"
    swf.write_text("; MaxProcs: 8\n" + "".join(
        f"{i} {i * 10} 0 100 {1 + i % 16} -1 -1 {1 + i % 16} 100 -1 1 1 1 1 1 1 -1 -1\n"
        for i in range(1, 21)))
    out = tmp_path / "jobs.parquet"
    convert_trace(swf, out, {"oversize": "drop"})
    source = Source("t", trace="T", sha256=file_digest(swf),
                    cleaning=tuple(sorted(asdict(CleaningOptions(oversize="drop")).items())))
    made = {**source.provenance(1), "file": "T.swf"}
    assert read_workload(out, made).num_rows > 0
    with pytest.raises(IntegrityError, match=re.escape("cleaning {'drop_negative_submit'")):
        read_workload(out, {**made, "cleaning": {**made["cleaning"], "oversize": "clamp"}})
    with pytest.raises(IntegrityError, match="made from another source: sha256"):
        read_workload(out, {**made, "sha256": "0" * 64})


def two_datasets(tmp_path, second_jobs: int) -> list[Path]:
    """Config files of two datasets that both name a workload lublin16, the second with
    `second_jobs` jobs."""
    files = []
    for dataset, jobs in (("first", 60), ("second", second_jobs)):
        config = {**CONFIG, "dataset": dataset,
                  "traces": {**CONFIG["traces"], "catalogue": str(ROOT / "config/traces.yaml")},
                  "workloads": {"lublin16": {"synthetic": {"model": "lublin", "jobs": jobs,
                                                           "max_procs": 16}}},
                  "experiments": {"e": {"workloads": ["lublin16"], "machines": ["flat"],
                                        "policies": ["fcfs"], "grid": {"offered_load": [0.6]},
                                        "seeds": [1]}}}
        files.append(tmp_path / f"{dataset}.yaml")
        files[-1].write_text(yaml.safe_dump(config))
    return files


def test_datasets_never_share_a_workload_file_they_define_differently(tmp_path):
    first, second = two_datasets(tmp_path, second_jobs=80)
    shard = plan(yaml.safe_load(first.read_text()))[0]
    other = plan(yaml.safe_load(second.read_text()))[0]
    assert shard.source.path(1) != other.source.path(1)
    workloads(tmp_path / "results", shard)
    run_shard(shard, tmp_path / "results", log=io.StringIO())
    report = summarize_plan(second, tmp_path / "results")
    assert (report["cached"], report["unknown"]) == (0, 1), "not the first dataset's runs"
    assert summarize_plan(first, tmp_path / "results")["cached"] == 1


def test_datasets_defining_a_workload_alike_share_its_file(tmp_path):
    first, second = two_datasets(tmp_path, second_jobs=60)
    paths = [plan(yaml.safe_load(f.read_text()))[0].source.path(1) for f in (first, second)]
    assert paths[0] == paths[1]


def test_a_run_cache_entry_written_before_a_transform_was_renamed_is_read(tmp_path):
    """A cache entry holding the machine-fit transform under its former column name,
    `oversize`, is read with it under `machine_fit`: results simulated before the rename
    stay cached."""
    row = {"run_key": "k", "machine_spec": "flat:16", "scheduler": "fcfs", "seed": 1,
           "machine_fit": "drop", "utilization": 0.5}
    table = store.summary_table([row])
    older = table.rename_columns(["oversize" if n == "machine_fit" else n
                                  for n in table.column_names])
    path = legacy_path(tmp_path, "k")
    store.write_table(older, path, {"run_key": "k"})
    read = store.read_verified(path, store.SUMMARY_SCHEMA, "k")
    assert read.schema.remove_metadata().equals(store.SUMMARY_SCHEMA)
    assert read.schema.metadata[b"run_key"] == b"k"  # the metadata kept
    assert read.column("machine_fit").to_pylist() == ["drop"]
    assert read.column("utilization").to_pylist() == [0.5]
