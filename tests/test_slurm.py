"""The sweep through a real Slurm: the Snakemake executor plugin, and Dask workers as jobs.

These tests submit jobs, so they run only where asked: TORUS_SWEEP_SLURM_TESTS=1 and a
Slurm that answers. `.ci/run` starts a single-node Slurm (.ci/slurm-up.sh, as root),
opts in and stops Slurm at the end; the tests themselves never install or start Slurm.
Without the variable they are skipped, even where a Slurm answers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import simcore.report.tables
from tests.conftest import SLURM_ENV
from tests.workflow import scratch_workflow, small_config, snakemake

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
TABLES = tuple(f"{name}.csv" for name in simcore.report.tables.TABLES)
TABLES_DIR = "results/torus-sweep-test/tables"  # the small config's dataset


def _slurm_answers() -> bool:
    if shutil.which("sinfo") is None:
        return False
    result = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                            check=False)
    return result.returncode == 0 and bool(result.stdout.strip())


@pytest.fixture(scope="module")
def slurm():
    """A Slurm that accepts jobs, where the user opted in (TORUS_SWEEP_SLURM_TESTS=1)."""
    if os.environ.get(SLURM_ENV) != "1":
        pytest.skip(f"submits jobs to Slurm: set {SLURM_ENV}=1 to run it where a Slurm "
                    "answers (.ci/run starts one with .ci/slurm-up.sh and sets it)")
    if not _slurm_answers():
        pytest.fail(f"{SLURM_ENV}=1 but no Slurm answers `sinfo`; start one (as root, "
                    ".ci/slurm-up.sh installs and starts a single-node Slurm; "
                    f".ci/slurm-down.sh stops it) or unset {SLURM_ENV}", pytrace=False)


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
