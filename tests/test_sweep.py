"""The sweep workflow end to end: DAG, outputs, incremental re-runs, archive, report."""

from __future__ import annotations

import io
import re
import shutil
import tarfile

import polars as pl
import pytest
import yaml

from simcore.report.tables import TABLES
from tests.test_docs_commands import check_study_commands
from tests.workflow import dry_run, planned_rules, scratch_workflow, snakemake

pytestmark = pytest.mark.slow
SMALL = "config/test/small.yaml"
DATASET = "results/torus-sweep-test"  # the small config's dataset
LOGS = "logs/simulate_shard/torus-sweep-test"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The small configuration run once to completion (its standard output in
    console.txt, its standard error in console-err.txt)."""
    workdir = scratch_workflow(tmp_path_factory.mktemp("sweep"))
    result = snakemake(workdir, "--configfile", SMALL)
    (workdir / "console.txt").write_text(result.stdout)
    (workdir / "console-err.txt").write_text(result.stderr)
    return workdir


def test_the_first_lines_say_what_the_run_holds(swept):
    """Before the first job (the engines' warm-up compiles for minutes on a first run):
    the shards and runs, how many are cached, the processes, the engines."""
    lines = (swept / "console-err.txt").read_text().splitlines()
    first = lines.index("plan: 8 shards, 28 runs: 0 cached, 28 to simulate, 28 whose "
                        "workload file is not made yet; 2 core(s): shards run side by side, "
                        "1 process(es) each")
    assert lines[first + 1].startswith("kernels: ")
    assert first < lines.index("localrule warm_kernels:")


def test_the_last_lines_say_where_the_results_are(swept):
    tail = (swept / "console.txt").read_text().splitlines()[-8:]
    assert "Results of dataset torus-sweep-test: results/torus-sweep-test/" in tail
    assert "  open results/torus-sweep-test/tables/utilization.md  " in "\n".join(tail)


def test_tables_figures_and_store(swept):
    tables = {p.name for p in (swept / DATASET / "tables").iterdir() if p.name[0] != "."}
    assert {f"{t}.{ext}" for t in TABLES for ext in ("parquet", "csv", "columns.csv", "md")
            } == tables
    figures = {p.relative_to(swept / DATASET / "figures").as_posix()
               for p in (swept / DATASET / "figures").rglob("*") if p.is_file()}
    assert {"small/capacity.png", "small/migrations-vs-load.svg",
            "shapes/utilization-vs-load.png"} <= figures
    assert "shapes/migrations-vs-load.png" not in figures
    summaries = pl.read_parquet(swept / DATASET / "store/**/summary.parquet",
                                hive_partitioning=True)
    assert summaries.height == 6 * 4 + 2 * 2  # (torus 4 + flat 2 policies) x 4 runs + shapes
    jobs = pl.read_parquet(swept / DATASET / "store/experiment=small/**/jobs.parquet")
    assert jobs.height == 24 * 300 and jobs["run_key"].n_unique() == 24
    util = pl.read_parquet(swept / DATASET / "tables/utilization.parquet")
    assert util.filter(pl.col("experiment") == "small")["n"].to_list() == [2] * 12


def test_tables_cover_only_the_configurations_shards(swept, tmp_path):
    workdir = tmp_path / "wf"
    shutil.copytree(swept, workdir, symlinks=True)
    store = workdir / DATASET / "store"
    shutil.copytree(store / "experiment=small", store / "experiment=old-sweep")
    snakemake(workdir, "--configfile", SMALL, "--forcerun", "tables", "--until", "tables")
    experiments = pl.read_parquet(workdir / DATASET / "tables/utilization.parquet")["experiment"]
    assert set(experiments) == {"small", "shapes"}


def test_policy_change_reruns_only_its_shards(swept, tmp_path):
    workdir = tmp_path / "wf"
    shutil.copytree(swept, workdir, symlinks=True)
    config = yaml.safe_load((workdir / SMALL).read_text())
    config["policies"]["backfill"]["max_growth"] = 2  # only tori and meshes grow jobs
    (workdir / SMALL).write_text(yaml.safe_dump(config))
    dag = dry_run(workdir, SMALL)
    (job,) = [j for j in dag.needrun_jobs(exclude_finished=False)
              if j.rule.name == "simulate_shard"]
    reason = str(dag.reason(job))  # as Snakemake prints it: words, not a packed word
    assert re.search(r"before: '4 runs, specification [0-9a-f]{16}, rows and code "
                     r"([0-9a-f]{16})' now: '4 runs, specification [0-9a-f]{16}, rows and code "
                     r"\1'", reason), reason
    assert not re.search(r"[A-Za-z0-9+/=]{40,}", reason.partition("Params")[2]), reason
    config["policies"]["backfill"]["reservation"] = False  # every backfill shard
    (workdir / SMALL).write_text(yaml.safe_dump(config))
    rerun = planned_rules(workdir, SMALL)
    assert rerun["simulate_shard"] == 4  # small: torus, flat; shapes: bgl, torus-links
    snakemake(workdir, "--configfile", SMALL, "--until", "simulate_shard")
    for log in (workdir / LOGS).rglob("*.log"):
        text = log.read_text()
        if "/backfill.log" in str(log):
            assert re.search(r"runs: 0 cached, \d+ simulated", text), log
    untouched = workdir / LOGS / "small/lublin16/torus/bm.log"
    assert untouched.read_text() == (swept / LOGS / "small/lublin16/torus/bm.log").read_text()


def test_grid_extension_simulates_only_new_runs(swept, tmp_path):
    workdir = tmp_path / "wf"
    shutil.copytree(swept, workdir, symlinks=True)
    config = yaml.safe_load((workdir / SMALL).read_text())
    config["experiments"]["small"]["grid"]["offered_load"].append(0.75)
    (workdir / SMALL).write_text(yaml.safe_dump(config))
    snakemake(workdir, "--configfile", SMALL, "--until", "simulate_shard")
    log = (workdir / LOGS / "small/lublin16/torus/bm.log").read_text()
    assert "6 runs: 4 cached, 2 simulated" in log


def test_archive_round_trip_and_corruption(swept, tmp_path):
    snakemake(swept, "archive", "--configfile", SMALL)
    archive = swept / DATASET / "archive/torus-sweep-test.tar.xz"
    result = snakemake_cli("archive", "verify", str(archive), cwd=swept)
    assert "checksums OK" in result.stdout
    with tarfile.open(archive) as packed:
        assert packed.extractfile("config/small.yaml").read() == (swept / SMALL).read_bytes()
    assert "tables/utilization.parquet: 16 rows" in result.stdout
    corrupt = tmp_path / "corrupt.tar"
    with tarfile.open(archive) as source, tarfile.open(corrupt, "w") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read()
            if member.name == "tables/capacity.csv":
                data = data.replace(b"small", b"SMALL", 1)
            target.addfile(member, io.BytesIO(data))
    failed = snakemake_cli("archive", "verify", str(corrupt), cwd=swept, check=False)
    assert failed.returncode == 2
    assert "tables/capacity.csv: sha256 expected" in failed.stderr


def snakemake_cli(*args: str, cwd, check: bool = True):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "simcore", *args], cwd=cwd,
                          capture_output=True, text=True, check=check)


def test_deleted_results_are_rebuilt_exactly(swept, tmp_path):
    """Removing a shard file, a workload file, or the whole store and run cache makes the
    next run rebuild what is missing, with the same tables."""
    workdir = tmp_path / "wf"
    shutil.copytree(swept, workdir, symlinks=True)
    store = workdir / DATASET / "store"
    (store / "experiment=small/workload=lublin16/machine=flat/policy=fcfs/summary.parquet"
     ).unlink()
    assert planned_rules(workdir, SMALL)["simulate_shard"] == 1
    next((workdir / "results/workloads/lublin16").glob("*/seeds=*.parquet")).unlink()
    rerun = planned_rules(workdir, SMALL)
    assert (rerun["synthesize_workload"], rerun["simulate_shard"]) == (1, 6)
    shutil.rmtree(store)
    shutil.rmtree(workdir / "results/cache")
    snakemake(workdir, "--configfile", SMALL, "--until", "tables")
    log = (workdir / LOGS / "small/lublin16/torus/bm.log").read_text()
    assert "4 runs: 0 cached, 4 simulated" in log
    for name in (f"{t}.csv" for t in TABLES):
        assert (workdir / DATASET / "tables" / name).read_bytes() == \
            (swept / DATASET / "tables" / name).read_bytes(), name


def test_the_docs_commands_on_a_full_study(swept):
    """Every command README and docs/ show on a paper's study (report, archive, plan,
    tables, exports), run on the small configuration's results
    (tests/test_docs_commands.py); then what the report and the archive hold."""
    check_study_commands(swept, ["snakemake", "--cores", "2", "--configfile", SMALL])
    html = (swept / "report.html").read_text()
    assert "utilization-vs-load" in html and "capacity" in html
    assert "Capacity utilized (Krevat" in html, "each figure has its own caption"
    with tarfile.open(swept / DATASET / "archive/torus-sweep-test.tar.xz") as tar:
        names = set(tar.getnames())
        cff = yaml.safe_load(tar.extractfile("CITATION.cff").read())
    assert "reproduction.md" in names and "reproduction.md/reproduction.md" not in names
    assert "Parallel Workloads Archive" not in cff["message"] + cff["abstract"]


@pytest.mark.parametrize("damage", ["flip", "foreign"])
def test_default_target_rebuilds_a_damaged_shard_from_the_cache(swept, tmp_path, damage):
    """A shard file with a byte flipped, or another shard's copied over it, its
    modification time kept: the next run removes it, rebuilds the shard from the run
    cache alone, and the tables come out as before."""
    import os

    workdir = tmp_path / "wf"
    shutil.copytree(swept, workdir, symlinks=True)
    snakemake(workdir, "--configfile", SMALL)  # the copy's files are checked once
    shards = workdir / DATASET / "store/experiment=small/workload=lublin16/machine=flat"
    target = shards / "policy=fcfs/summary.parquet"
    info = target.stat()
    if damage == "flip":
        data = bytearray(target.read_bytes())
        data[len(data) // 3] ^= 0x10
        target.write_bytes(bytes(data))
    else:
        shutil.copyfile(shards / "policy=backfill/summary.parquet", target)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    done = snakemake(workdir, "--configfile", SMALL)
    assert f"{target.relative_to(workdir)}: " in done.stderr
    assert "removed: this run rebuilds the shard from the run cache" in done.stderr
    log = (workdir / LOGS / "small/lublin16/flat/fcfs.log").read_text()
    assert "4 runs: 4 cached, 0 simulated" in log
    for name in (f"{t}.csv" for t in TABLES):
        assert (workdir / DATASET / "tables" / name).read_bytes() == \
            (swept / DATASET / "tables" / name).read_bytes(), name
    again = snakemake(workdir, "--configfile", SMALL)
    assert "Nothing to be done" in again.stdout + again.stderr
