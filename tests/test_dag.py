"""The workflow's plan, read through Snakemake's Python API: the jobs a configuration
makes, that none of them starts a Snakemake of its own, and what a change marks to run."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
import yaml

from tests.workflow import dry_run, scratch_workflow, snakemake

SMALL = "config/test/small.yaml"
PAPERS = "config/papers.yaml"
#: Rules whose jobs are many (one per shard, per synthetic sample, per trace): each must be
#: a shell command, because Snakemake runs a `run:` block in a new Snakemake process that
#: parses the whole workflow again (seconds per job).
PER_ITEM_RULES = {"simulate_shard", "synthesize_workload", "acquire_trace", "convert_trace"}


def shard_params(dag) -> dict[str, tuple[str, ...]]:
    """Each shard's summary path -> the parameters Snakemake's params trigger compares."""
    return {str(job.output.summary): tuple(job.non_derived_params)
            for job in dag.jobs if job.rule.name == "simulate_shard"}


@pytest.fixture(scope="module")
def papers(tmp_path_factory):
    workdir = scratch_workflow(tmp_path_factory.mktemp("papers"))
    return workdir, dry_run(workdir, PAPERS)


def test_the_small_configs_jobs(tmp_path):
    workdir = scratch_workflow(tmp_path)
    dag = dry_run(workdir, SMALL)
    assert Counter(job.rule.name for job in dag.needrun_jobs(exclude_finished=False)) == Counter({
        "simulate_shard": 8, "synthesize_workload": 2, "warm_kernels": 1, "tables": 1,
        "figures": 1, "reproduction": 1, "all": 1})
    assert not (workdir / "results").exists(), "a dry run makes nothing"
    shards = {(j.wildcards.experiment, j.wildcards.machine, j.wildcards.policy)
              for j in dag.jobs if j.rule.name == "simulate_shard"}
    assert len(shards) == 8
    assert ("small", "flat", "fcfs") in shards and ("shapes", "bgl", "backfill") in shards
    assert ("small", "flat", "bm") not in shards, "migration needs a partitioned machine"
    seeds = {j.wildcards.workload: j.params.seeds for j in dag.jobs
             if j.rule.name == "synthesize_workload"}
    assert seeds == {"lublin16": "1-2", "lublin128": "1"}, \
        "one job makes every seed of a workload"


def test_no_job_on_a_shard_or_workload_path_starts_a_snakemake(papers):
    _, dag = papers
    rules = Counter(job.rule.name for job in dag.jobs)
    assert rules["simulate_shard"] == 585 and rules["synthesize_workload"] == 21
    assert set(rules) >= PER_ITEM_RULES
    for job in dag.jobs:
        if job.rule.name != "all":  # the target lists inputs and runs nothing
            assert job.rule.shellcmd is not None, f"rule {job.rule.name} is not a shell command"
    inputs = {len(job.input) for job in dag.jobs if job.rule.name == "simulate_shard"}
    assert max(inputs) <= 51, "a shard's inputs are its workload files and the kernels"


def test_a_policy_parameter_marks_exactly_its_shards(papers, tmp_path):
    workdir, dag = papers
    config = yaml.safe_load((workdir / PAPERS).read_text())
    config["policies"]["bm"]["fn_tor"] = 0.15
    (workdir / "changed.yaml").write_text(yaml.safe_dump(config))
    before, after = shard_params(dag), shard_params(dry_run(workdir, "changed.yaml"))
    assert set(before) == set(after)
    changed = {path for path in before if before[path] != after[path]}
    bm = {path for path in before if "/policy=bm/" in path}
    assert bm and changed == bm


def test_the_core_count_changes_no_job(tmp_path):
    """Where shards are small, each simulates in its own process whatever --cores says, so
    one and two cores plan the same shard and workload jobs, with the same parameters and
    threads (only the kernel warm-up compiles with as many processes as there are cores)."""
    workdir = scratch_workflow(tmp_path)

    def jobs(cores: int) -> dict[str, tuple]:
        return {str(job.output[0]): (job.rule.name, tuple(job.params.items()), job.threads)
                for job in dry_run(workdir, SMALL, cores=cores).jobs
                if job.rule.name in PER_ITEM_RULES}

    assert jobs(1) == jobs(2)


def test_papers_on_slurm_is_at_most_50_jobs(papers):
    """The Slurm profile groups shards: papers.yaml's 585 shards are 49 Slurm jobs (the
    only rule that leaves the login node), counted in a dry run of that executor."""
    workdir, _ = papers
    result = snakemake(workdir, "-n", "--workflow-profile", "profiles/slurm",
                       "--configfile", PAPERS, "--slurm-no-account")
    groups = re.findall(r"Group job sweep", result.stdout + result.stderr)
    assert len(groups) == math.ceil(585 / 12) <= 50
