"""The sweep through a real Slurm: the Snakemake executor plugin, and Dask workers as jobs.

Needs a running slurmctld/slurmd. `.ci/run` starts a single-node Slurm (.ci/slurm-up.sh);
when none answers and the tests run as root, the session starts (and later stops) one
itself. Only where Slurm cannot be started (not root, no apt) are these tests skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import simcore.tables
from tests.conftest import ROOT
from tests.workflow import scratch_workflow, small_config, snakemake

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
TABLES = tuple(f"{name}.csv" for name in simcore.tables.TABLES)
TABLES_DIR = "results/torus-sweep-test/tables"  # the small config's dataset


def _slurm_answers() -> bool:
    if shutil.which("sinfo") is None:
        return False
    result = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                            check=False)
    return result.returncode == 0 and bool(result.stdout.strip())


@pytest.fixture(scope="module")
def slurm():
    """A Slurm that accepts jobs: the one already running, or one started here."""
    started = False
    if not _slurm_answers():
        if os.geteuid() != 0:
            pytest.skip("no Slurm answers and only root can start one (.ci/slurm-up.sh)")
        up = subprocess.run(["bash", str(ROOT / ".ci/slurm-up.sh")], capture_output=True,
                            text=True, check=False)
        if up.returncode != 0:
            pytest.skip(f"Slurm could not be started here: {up.stderr.strip()[-500:]}")
        started = True
    yield
    if started:
        subprocess.run(["bash", str(ROOT / ".ci/slurm-down.sh")], check=False)


def all_jobs() -> dict[str, str]:
    """Every job Slurm still knows (finished ones too): id -> name."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %j"], capture_output=True,
                         text=True, check=True).stdout
    return dict(line.split(maxsplit=1) for line in out.splitlines() if line.strip())


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    workdir = scratch_workflow(tmp_path_factory.mktemp("local"))
    snakemake(workdir, "--configfile", "config/test/small.yaml")
    return {name: (workdir / TABLES_DIR / name).read_bytes() for name in TABLES}


def assert_same_tables(workdir, local_tables) -> None:
    for name in TABLES:
        assert (workdir / TABLES_DIR / name).read_bytes() == local_tables[name], name


def test_snakemake_slurm_executor(slurm, local_tables, tmp_path):
    """The Slurm profile sends the shards in groups: the small config's 8 shards are one
    Slurm job (a group of 8), whose tables equal a workstation's."""
    workdir = scratch_workflow(tmp_path)
    before = set(all_jobs())
    result = snakemake(workdir, "--workflow-profile", "profiles/slurm",
                       "--configfile", "config/test/small.yaml",
                       "--slurm-status-command", "squeue", "--slurm-no-account",
                       "--slurm-init-seconds-before-status-checks", "2",
                       "--slurm-keep-successful-logs", "--jobs", "4", "--cores", "2")
    assert_same_tables(workdir, local_tables)
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", result.stdout + result.stderr)
    known = all_jobs()
    assert sorted(submitted) == sorted(set(known) - before), "every submission is counted"
    assert len(submitted) == 1, "8 shards, one group of 8"
    logs = list((workdir / ".snakemake/slurm_logs/group_sweep_simulate_shard").glob("*.log"))
    assert [log.stem for log in logs] == submitted
    text = logs[0].read_text()
    assert "8 of 8 steps (100%) done" in text, "the job ran the 8 shards of its group"


def test_dask_workers_as_slurm_jobs(slurm, local_tables, tmp_path):
    workdir = scratch_workflow(tmp_path)
    config = small_config(workdir, sweep={"dask": {
        "backend": "slurm", "cores": 1, "processes": 1, "memory": "1GB",
        "walltime": "00:20:00", "interface": "lo", "minimum_jobs": 1, "maximum_jobs": 2,
        "log_directory": str(workdir / "logs/dask-slurm")}})
    snakemake(workdir, "--configfile", config)
    assert_same_tables(workdir, local_tables)
    worker_logs = list((workdir / "logs/dask-slurm").glob("dask-worker-*.out"))
    assert len(worker_logs) >= 8, "every shard ran its simulations on Slurm-started workers"
    known = all_jobs()
    for log in worker_logs:
        job = re.search(r"dask-worker-(\d+)\.out", log.name).group(1)
        assert known.get(job) == "dask-worker", f"Slurm job {job} is not a Dask worker"
