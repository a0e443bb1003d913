"""The result store knows what it holds: a shard file is refused when damaged or written for
another shard, with how to repair it, and the workflow's check finds such files cheaply."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
from pathlib import Path

import pytest

from simcore import store
from simcore.errors import IntegrityError
from simcore.policy import PolicySpec
from simcore.runner import run_shard
from simcore.store import damaged_shards, read_shard, read_summaries, shard_dir
from tests.test_integrity import flip_a_data_bit
from tests.test_runner import heavy_shard, workloads


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
    elif how == "flip":
        flip_a_data_bit(path)
    else:  # "foreign": another shard's whole, valid file
        shutil.copyfile(other, path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize(("how", "message"), [
    ("truncate", "unreadable"),
    ("flip", "content does not match its checksum"),
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


@pytest.mark.parametrize("how", ["truncate", "flip", "foreign"])
def test_the_workflow_check_finds_damage_that_keeps_the_mtime(two_shards, tmp_path, how):
    bm, fcfs = two_shards
    missing = tmp_path / "not-made-yet" / "summary.parquet"
    assert damaged_shards([bm, fcfs, missing]) == {}
    damage(bm, how, fcfs)
    found = damaged_shards([bm, fcfs, missing])
    assert list(found) == [str(bm)] and found[str(bm)].startswith(f"{bm}: ")


def test_the_workflow_check_reads_only_files_that_changed(two_shards, tmp_path, monkeypatch):
    """Written shard files are known good; a file is read again once it changed, and
    then, when it passes, known good again."""
    bm, fcfs = two_shards
    read = []
    checked = store.read_shard
    monkeypatch.setattr(store, "read_shard", lambda path: read.append(path) or checked(path))
    assert damaged_shards([bm, fcfs]) == {} and read == []
    shutil.copyfile(bm, tmp_path / "copy")  # a rewrite in place: same bytes, new stamp
    os.replace(tmp_path / "copy", bm)
    assert damaged_shards([bm, fcfs]) == {} and read == [str(bm)]
    assert damaged_shards([bm, fcfs]) == {} and read == [str(bm)]
