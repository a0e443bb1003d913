"""Every path the workflow and the library use, defined once.

Patterns under the results root (`results/` in the workflow) are relative to it; fill
them with `str.format` (the library) or as Snakemake wildcards (the rules, through
`results()`). Traces are retrieved resources and live outside it. Each configuration's
results form a dataset of their own, `<dataset>/` (named by the config key `dataset`), so
the results of several configurations sit side by side; the run cache and the workload
files are shared by all datasets. A workload file's `<variant>` is a digest of what makes
it (model, parameters; or trace sha256 and cleaning), so datasets that define one name
differently never overwrite each other's files.

    resources/traces/<trace>.swf.gz                 verified copies of archive traces
    benchmarks/<rule>/<job>.tsv                     each job's measured cost (never a result)
    results/workloads/<trace>/<variant>/jobs.parquet          converted, cleaned traces
    results/workloads/<name>/<variant>/seed=<s>/jobs.parquet  synthetic workload samples
    results/cache/runs/<k0k1>/<key>.parquet         one entry per simulated run
    results/.kernels/<digest>.ready                 the numba kernels are compiled
    results/<dataset>/store/experiment=E/workload=W/machine=M/policy=P/summary.parquet
    results/<dataset>/tables/  figures/  archive/<dataset>.tar.xz
    results/<dataset>/reproduction.md               the seeds' numbers beside ours
    results/<dataset>/schedules/experiment=E/.../run=<i>/   exported schedules, pictures
"""

from __future__ import annotations

import re
from pathlib import Path

from simcore.base.errors import ConfigError

#: The repository's data files the library falls back on when no other is named.
REPOSITORY = Path(__file__).resolve().parents[2]
CATALOGUE = REPOSITORY / "config" / "traces.yaml"
PUBLISHED = REPOSITORY / "config" / "published.yaml"
MACHINE_DESCRIPTIONS = REPOSITORY / "config" / "machines"

RESULTS = "results"
TRACE = "resources/traces/{trace}.swf.gz"
#: Each job's measured cost (Snakemake's benchmark), and a shard's simulation seconds:
#: timings, never part of a result.
BENCHMARK = "benchmarks/{rule}/{job}.tsv"
SHARD_JOB = "{dataset}/{experiment}/{workload}/{machine}/{policy}"
SHARD_TIMING_DIR = "benchmarks/simulate_shard"  # `simcore sweep-shard --timing-dir`
SHARD_TIMING_FILE = SHARD_JOB + ".json"  # under that directory
SHARD_TIMING = SHARD_TIMING_DIR + "/" + SHARD_TIMING_FILE

#: `variant`: a digest of what makes the file (`simcore.sweep.experiments.Source.path`)
TRACE_WORKLOAD = "workloads/{trace}/{variant}/jobs.parquet"
#: A synthetic source's samples, one job table per seed, are made by one job: a directory.
SYNTHETIC_SAMPLES = "workloads/{workload}/{variant}"
SYNTHETIC_WORKLOAD = SYNTHETIC_SAMPLES + "/seed={seed}/jobs.parquet"
CACHE_ENTRY = "cache/runs/{prefix}/{key}.parquet"
CACHE_JOBS = "cache/runs/{prefix}/{key}.jobs.parquet"
KERNELS_READY = ".kernels/{digest}.ready"
SHARD = ("{dataset}/store/experiment={experiment}/workload={workload}/machine={machine}"
         "/policy={policy}")
SHARD_SUMMARY = SHARD + "/summary.parquet"
SHARD_JOBS = SHARD + "/jobs.parquet"
#: A run's exported schedule and its pictures; `run` is its index in the shard's runs.
SCHEDULE = ("{dataset}/schedules/experiment={experiment}/workload={workload}"
            "/machine={machine}/policy={policy}/run={run}")
STORE = "{dataset}/store"
TABLES = "{dataset}/tables"
FIGURES = "{dataset}/figures"
ARCHIVE = "{dataset}/archive/{dataset}.tar.xz"
REPRODUCTION = "{dataset}/reproduction.md"

#: Names of datasets, workloads, machines, policies and experiments: directory names.
#: NAME_REGEX is unanchored for the workflow's wildcards; NAME matches a whole name.
#: NAME_MAX keeps every file name made of one (`experiment=<name>`, `<dataset>.tar.xz`)
#: well below the 255 bytes a file system allows.
NAME_MAX = 100
NAME_REGEX = rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}"
NAME = re.compile(rf"\A{NAME_REGEX}\Z")
NAME_RULE = (f"letters, digits, '_', '.', '-' starting with a letter or digit, at most "
             f"{NAME_MAX} characters")
#: Directories of the results root that are not datasets.
SHARED = ("cache", "workloads")


def results(pattern: str) -> str:
    """A pattern under the results root, as the workflow writes it."""
    return f"{RESULTS}/{pattern}"


def is_name(name: object) -> bool:
    """Whether `name` is a string that NAME matches whole."""
    return isinstance(name, str) and NAME.match(name) is not None


def check_dataset(name: object) -> None:
    """A dataset name must be a directory name that no shared directory uses."""
    if not is_name(name) or name in SHARED:
        raise ConfigError(f"dataset: {name!r}; expected a name of {NAME_RULE}, other than "
                          f"{SHARED}")
