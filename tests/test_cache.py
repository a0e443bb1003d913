"""The run cache at scale: runs written in parts of batches, samples many seeds to a file,
and compaction to the runs the configurations use."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from simcore.base.errors import SpecError
from simcore.sweep import runner
from simcore.sweep.cache import compact, find, legacy_path, parts_index, read_entries
from simcore.sweep.experiments import plan
from simcore.sweep.identity import definitions
from simcore.sweep.planning import used_keys
from simcore.sweep.runner import run_shard, shard_tasks, simulate_task
from simcore.sweep.store import summary_table, write_table
from tests.conftest import ROOT, write_samples_of
from tests.test_runner import summary

CONFIG = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())


def seeds_config(count: int, jobs: int = 20, policies=("fcfs",)) -> dict:
    """`count` seeds of a small Lublin workload on flat:4."""
    return {**CONFIG, "workloads": {"tiny": {"synthetic": {"model": "lublin", "jobs": jobs,
                                                           "max_procs": 4}}},
            "machines": {"flat": "flat:4"},
            "policies": {p: {"scheduler": p} for p in policies},
            "experiments": {"seeds": {"workloads": ["tiny"], "machines": ["flat"],
                                      "policies": list(policies),
                                      "seeds": {"first": 1, "count": count}}}}


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if "store" not in p.parts)


def test_a_thousand_runs_are_two_files_and_equal_each_run_alone(tmp_path, monkeypatch):
    """A batch writes a part at its end (and every FLUSH_S seconds, here never)."""
    monkeypatch.setattr(runner, "FLUSH_S", float("inf"))
    (shard,) = plan(seeds_config(1000))
    write_samples_of(tmp_path, shard)
    report = run_shard(shard, tmp_path, log=io.StringIO())
    assert report.simulated == 1000
    # one sample file and one cache part: files grow with batches, not runs
    assert [p.parent.name if "cache" in p.parts else p.name for p in files(tmp_path)] == [
        definitions(shard), "seeds=0-9999.parquet"]
    alone = summary_table([simulate_task(task, tmp_path)[0]
                           for task in shard_tasks(shard, tmp_path)])
    assert summary(tmp_path, shard).equals(alone), "stored as each run alone gives it"


def test_a_batch_writes_a_part_every_flush_interval(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "FLUSH_S", 0.0)
    (shard,) = plan(seeds_config(3))
    write_samples_of(tmp_path, shard)
    run_shard(shard, tmp_path, log=io.StringIO())
    parts = sorted((tmp_path / "cache" / "batches" / definitions(shard)).glob("*.parquet"))
    assert [p.name[-13:] for p in parts] == ["00000.parquet", "00001.parquet", "00002.parquet"]
    assert len({p.name[:24] for p in parts}) == 1, "parts of one batch"


def test_compact_keeps_the_runs_the_configurations_use(tmp_path):
    """Runs of a configuration no longer used go; used runs, also those a store of an
    older simcore kept in files of their own, are kept in one part, cached."""
    config = seeds_config(6, policies=("fcfs", "backfill"))
    configfile = tmp_path / "two.yaml"
    configfile.write_text(yaml.safe_dump(config))
    shards = plan(config)
    write_samples_of(tmp_path, *shards)
    for shard in shards:
        run_shard(shard, tmp_path, log=io.StringIO())
    fcfs, backfill = shards
    tasks = shard_tasks(fcfs, tmp_path)
    (part,) = (tmp_path / "cache" / "batches" / definitions(fcfs)).glob("*.parquet")
    runs = read_entries(find(tmp_path, definitions(fcfs), [t.key for t in tasks]))
    for task in tasks[:2]:  # two runs as an older store kept them
        write_table(summary_table([runs.row(task.key)]), legacy_path(tmp_path, task.key),
                    {"run_key": task.key})
    fewer = {**config, "policies": {"fcfs": {"scheduler": "fcfs"}}}
    fewer["experiments"]["seeds"]["policies"] = ["fcfs"]
    configfile.write_text(yaml.safe_dump(fewer))
    used = used_keys([configfile], tmp_path)
    assert used == {definitions(fcfs): {t.key for t in tasks}}
    directory = (tmp_path / fcfs.source.path(1)).parent
    directory.rename(directory.with_name("aside"))
    with pytest.raises(SpecError, match=r"6 runs of shard seeds/tiny/flat/fcfs have no key yet: "
                       r"the workload file .* is not made or is damaged"):
        used_keys([configfile], tmp_path)  # nothing is compacted away for want of a key
    directory.with_name("aside").rename(directory)
    counts = compact(tmp_path, used, io.StringIO())
    assert counts == {"files_before": 4, "files_after": 1, "runs_kept": 6}
    assert not (tmp_path / "cache" / "batches" / definitions(backfill)).exists()
    assert not legacy_path(tmp_path, tasks[0].key).exists()
    index = parts_index(tmp_path / "cache" / "batches" / definitions(fcfs))
    assert set(index) == {t.key for t in tasks} and part not in {e.summary for e in index.values()}
    clean = summary(tmp_path, fcfs)
    again = run_shard(fcfs, tmp_path, log=io.StringIO())
    assert (again.cached, again.simulated) == (6, 0)
    assert summary(tmp_path, fcfs).equals(clean)
    assert compact(tmp_path, used, io.StringIO())["files_after"] == 1, "compacting again"


@pytest.mark.parametrize("text", ["1-3,5,7-8", "0", "10-10"])
def test_seed_spans_round_trip(text):
    from simcore.sweep.samples import parse_spans, seed_spans

    assert seed_spans(parse_spans(text)) == text.replace("10-10", "10")


def test_a_shard_of_a_hundred_thousand_seeds_is_a_short_specification():
    (shard,) = plan(seeds_config(100_000))
    assert len(shard.runs) == 100_000
    assert len(shard.packed()) < 1000
    assert shard.runs[:3] == tuple(shard.from_json(shard.to_json()).runs[:3])
    assert [r.seed for r in shard.runs[:3]] == [1, 2, 3]
