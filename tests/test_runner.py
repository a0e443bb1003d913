"""Shard execution: cache reuse, worker counts, killed workers, interrupted shards."""

from __future__ import annotations

import dataclasses
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
import yaml

from simcore.sweep import samples
from simcore.sweep.cache import parts_index
from simcore.sweep.experiments import plan
from simcore.sweep.runner import run_shard
from simcore.sweep.store import read_verified, shard_dir
from simcore.sweep.timing import PHASES
from simcore.workload.io import with_source
from simcore.workload.synthetic import synthesize
from tests.conftest import ROOT, write_samples_of

CONFIG = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())


def heavy_shard(jobs: int = 1500, loads=(0.5, 0.6, 0.7, 0.8, 0.9), seeds=(1, 2, 3, 4)):
    """A B+M shard on a 2x2x4 torus with enough runs to interrupt."""
    config = {**CONFIG, "workloads": {"lublin16": {"synthetic": {
        "model": "lublin", "jobs": jobs, "max_procs": 16}}}}
    config["experiments"] = {"heavy": {"workloads": ["lublin16"], "machines": ["torus"],
                                       "policies": ["bm"], "grid": {"offered_load": list(loads)},
                                       "seeds": list(seeds)}}
    return plan(config)[0]


def workloads(root: Path, shard) -> None:
    write_samples_of(root, shard)


def summary(root: Path, shard):
    return pq.read_table(shard_dir(root, shard.dataset, shard.names) / "summary.parquet")


def cached(root: Path) -> int:
    """Runs the parts of the run cache hold (their metadata read as a search reads it)."""
    batches = root / "cache" / "batches"
    return sum(len(parts_index(d)) for d in batches.iterdir()) if batches.exists() else 0


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The heavy shard run in-process, uninterrupted, one worker."""
    root = tmp_path_factory.mktemp("reference")
    shard = heavy_shard()
    workloads(root, shard)
    log = io.StringIO()
    report = run_shard(shard, root, workers=1, log=log)
    assert report.simulated == report.runs == 20
    return summary(root, shard)


def test_a_shard_of_short_runs_starts_no_workers(tmp_path):
    """Measured runs that would end before workers start keep the shard in one process."""
    shard = heavy_shard(jobs=50, loads=(0.6,), seeds=tuple(range(1, 21)))
    workloads(tmp_path, shard)
    report = run_shard(shard, tmp_path, workers=2, log=io.StringIO(),
                       dask={"backend": "local", "probe_s": 1e-9})
    assert (report.simulated, report.processes) == (20, 1)


def test_second_run_reads_everything_from_cache(tmp_path):
    shard = heavy_shard(jobs=300, loads=(0.6,), seeds=(1, 2))
    workloads(tmp_path, shard)
    first = run_shard(shard, tmp_path, log=io.StringIO())
    log = io.StringIO()
    second = run_shard(shard, tmp_path, log=log)
    assert (first.simulated, second.simulated, second.cached) == (2, 0, 2)
    assert "2 runs: 2 cached, 0 simulated" in log.getvalue()
    # where the simulated runs' seconds went: each phase measured, all within their batches,
    # the batches within the shard (one worker: the shard's own process)
    timing = first.timing(workers=1)
    assert all(timing[name] > 0 for name in ("in_simulate_s", "prepare_s", "store_s"))
    assert all(timing[name] >= 0 for name in PHASES)
    assert sum(first.phases[name] for name in PHASES) <= first.phases["batches_s"]
    assert first.phases["batches_s"] <= first.seconds
    assert all(second.timing(workers=1)[name] == 0 for name in ("batches_s", *PHASES))


@pytest.mark.slow
def test_two_workers_give_identical_results(tmp_path, reference):
    shard = heavy_shard()
    workloads(tmp_path, shard)
    report = run_shard(shard, tmp_path, workers=2, log=io.StringIO(),
                       dask={"backend": "local", "probe_s": 0})
    assert (report.simulated, report.processes) == (20, 2)
    assert report.phases["in_simulate_s"] > 0  # the seconds travel back from the workers
    assert summary(tmp_path, shard).equals(reference)


def start_shard(root: Path, shard, workers: int) -> subprocess.Popen:
    """The shard's command, its workers started at once (no runs measured first)."""
    return subprocess.Popen(
        [sys.executable, "-m", "simcore", "sweep-shard", "--spec", shard.to_json(),
         "--results", str(root), "--workers", str(workers),
         "--dask", '{"backend": "local", "probe_s": 0}'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def wait_for(condition, process: subprocess.Popen, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"shard ended early:\n{process.stdout.read()}"
        assert time.monotonic() < deadline, "timed out waiting for the shard"
        time.sleep(0.05)


@pytest.mark.slow
def test_killed_worker_loses_nothing(tmp_path, reference):
    shard = heavy_shard()
    workloads(tmp_path, shard)
    process = start_shard(tmp_path, shard, workers=2)
    wait_for(lambda: cached(tmp_path) >= 3, process)
    workers = [p for p in psutil.Process(process.pid).children(recursive=True)
               if "multiprocessing" in " ".join(p.cmdline())]
    assert workers, "the shard runs its simulations in worker processes"
    workers[0].send_signal(signal.SIGKILL)
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 0, output
    assert summary(tmp_path, shard).equals(reference)


@pytest.mark.slow
def test_interrupted_shard_resumes_without_redoing_runs(tmp_path, reference):
    shard = heavy_shard()
    workloads(tmp_path, shard)
    process = start_shard(tmp_path, shard, workers=2)
    wait_for(lambda: cached(tmp_path) >= 5, process)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    process.stdout.close()
    done = cached(tmp_path)
    assert 5 <= done < 20
    assert not shard_dir(tmp_path, shard.dataset, shard.names).exists(), "no partial shard file"
    for part in (tmp_path / "cache" / "batches").rglob("*.parquet"):  # a killed write
        read_verified(part)  # leaves only a hidden .tmp, never a damaged part
    log = io.StringIO()
    report = run_shard(shard, tmp_path, workers=1, log=log)
    assert report.cached >= done and report.simulated == 20 - report.cached
    assert summary(tmp_path, shard).equals(reference)


def test_per_job_rows_added_to_runs_cached_without_them(tmp_path):
    shard = heavy_shard(jobs=200, loads=(0.6,), seeds=(1,))
    workloads(tmp_path, shard)
    run_shard(shard, tmp_path, log=io.StringIO())
    with_jobs = dataclasses.replace(shard, per_job=True)
    report = run_shard(with_jobs, tmp_path, log=io.StringIO())
    assert report.simulated == 1, "the summary alone does not make a per-job entry"
    jobs = pq.read_table(shard_dir(tmp_path, shard.dataset, shard.names) / "jobs.parquet")
    assert jobs.num_rows == 200


def test_rewritten_workload_file_is_read_again(tmp_path, monkeypatch):
    """Keys hash the file's content; the in-process table cache must not serve old jobs."""
    shard = heavy_shard(jobs=300, loads=(0.6,), seeds=(1,))
    workloads(tmp_path, shard)
    run_shard(shard, tmp_path, log=io.StringIO())
    directory = (tmp_path / shard.source.path(1)).parent
    # other jobs recorded as made by the same source (as by an edited model)
    monkeypatch.setattr(samples, "synthesize", lambda spec, seed: with_source(
        synthesize(spec, 99), shard.source.provenance(seed)))
    samples.write_samples(shard.source.synthetic, [1], directory)
    run_shard(shard, tmp_path, log=io.StringIO())
    fresh = tmp_path / "fresh"
    samples.write_samples(shard.source.synthetic, [1], fresh / directory.relative_to(tmp_path))
    run_shard(shard, fresh, log=io.StringIO())
    assert summary(tmp_path, shard).equals(summary(fresh, shard))


def test_warm_up_says_what_it_compiles_before_compiling(monkeypatch):
    """The first minutes of a first run compile engines: a line says so before they start."""
    from simcore.sweep import runner

    log = io.StringIO()
    compiled = []

    def compile_engine(allocator: str, scheduler: str) -> float:
        compiled.append(log.getvalue())
        return 0.0

    monkeypatch.setattr(runner, "engines_to_compile", lambda pairs: list(pairs))
    monkeypatch.setattr(runner, "_compile_engine", compile_engine)
    runner.warm_kernels([("any-free", "fcfs")], log=log)
    assert compiled == [
        f"kernels: compiling 1 engine(s) in 1 process(es) (any-free x fcfs): a few minutes on "
        "a first run or after their code changes; later runs load them from the cache "
        f"({runner.numba_base()})\n"]
    assert log.getvalue().endswith("(1/1)\n")
