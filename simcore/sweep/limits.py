"""Size limits, checked on an estimate before any work starts.

A configuration or a command line can ask for more than a machine can hold: `jobs:
1000000000000` passes every type check and then tries to allocate terabytes; a hundred
million seeds make planning alone take minutes. Such requests are refused at once, with the
estimate in the message and the key or flag that raises the limit:

- a run's memory: `BYTES_PER_JOB` (1 KiB) per job of its workload, after `first_jobs`
  and `replication` (a run on a flat machine measured 0.39 KiB per job at 3,000,000 jobs;
  partitioned machines keep more per job). Limit `max_run_memory_gib`, default 16 GiB
  (`simcore run`, `synthesize`, `menus candidates`: `--max-memory-gib`);
- a configuration's runs: per experiment, workloads x machines x policies x grid points x
  seeds (a two-stage plan's `max`; an upper bound: runs that cannot differ are merged
  later). Limit `max_runs`, default 1,000,000: planning that many takes about 5 s and
  330 MB, and their run cache a few hundred files (config/papers.yaml: 9,596 by this
  estimate);
- its job simulations: runs x jobs per run, what the sweep's time grows with. Limit
  `max_job_runs`, default 10^10 (config/papers.yaml: about 3.6 x 10^8).

The configuration's limits are the mapping `limits` (`max_runs`, `max_job_runs`,
`max_run_memory_gib`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from simcore.base.errors import ConfigError, SpecError

BYTES_PER_JOB = 1024
GIB = 2**30


@dataclass(frozen=True)
class Limits:
    """The largest requests accepted without an explicit override."""

    max_runs: int = 1_000_000
    max_job_runs: int = 10**10
    max_run_memory_gib: float = 16.0

    @classmethod
    def from_config(cls, values: object, where: str = "limits") -> Limits:
        """Limits from the config mapping `limits` (missing keys keep their default)."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where}: {type(values).__name__}; expected a mapping of "
                              f"{', '.join(f.name for f in fields(cls))}")
        known = {f.name: f for f in fields(cls)}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{where}.{key}: unknown limit; expected one of "
                                  f"{', '.join(known)}")
            kind = int if known[key].type == "int" else (int, float)
            if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
                raise ConfigError(f"{where}.{key}: {value!r}; expected a number > 0")
        return cls(**values)


def run_memory_gib(jobs: int) -> float:
    """Estimated memory of one run of `jobs` jobs, in GiB."""
    return jobs * BYTES_PER_JOB / GIB


def check_run_memory(jobs: int, limit_gib: float, what: str, override: str) -> None:
    """Refuse a run of `jobs` jobs whose estimated memory is above `limit_gib`; the message
    names `what` asked for it and how to `override` the limit."""
    need = run_memory_gib(jobs)
    if need > limit_gib:
        raise SpecError(f"{what}: a run of {jobs:,} jobs needs about {need:,.1f} GiB "
                        f"({BYTES_PER_JOB} bytes per job), above the limit of {limit_gib:g} "
                        f"GiB; expected fewer jobs, or {override}")


def experiment_runs(values: Mapping[str, object]) -> int:
    """An experiment's runs before merging: workloads x machines x policies x seeds x the
    grid's points, from the lengths of its lists alone (nothing is converted)."""
    lists = [values.get(key) for key in ("workloads", "machines", "policies")]
    grid = values.get("grid")
    if isinstance(grid, Mapping):
        lists += list(grid.values())
    runs = 1
    for value in lists:
        runs *= len(value) if isinstance(value, list) and value else 1
    seeds = values.get("seeds")
    if isinstance(seeds, Mapping):  # {first: F, count: N}, or a two-stage plan's max
        count = seeds.get("count", seeds.get("max"))
        return runs * (count if isinstance(count, int) and count > 0 else 1)
    return runs * (len(seeds) if isinstance(seeds, list) and seeds else 1)


def check_runs(config: Mapping[str, object]) -> None:
    """Refuse a configuration with more runs than its `limits.max_runs` from the lengths of
    its lists: a quick check before anything reads every value of a long list."""
    experiments = config.get("experiments")
    if not isinstance(experiments, Mapping):
        return
    runs = sum(experiment_runs(v) for v in experiments.values() if isinstance(v, Mapping))
    limit = Limits.from_config(config.get("limits")).max_runs
    if runs > limit:
        raise ConfigError(f"limits.max_runs: the experiments hold up to {runs:,} runs, above "
                          f"the limit of {limit:,}; expected fewer, or a larger "
                          "limits.max_runs in the config")


def check_plan(runs: int, job_runs: int, largest_run_jobs: int, limits: Limits) -> None:
    """Refuse a configuration whose estimated runs, job simulations or largest run are
    above `limits`, before it is expanded into runs."""
    estimate = (f"the experiments hold up to {runs:,} runs and {job_runs:,} job "
                f"simulations, the largest run {largest_run_jobs:,} jobs (about "
                f"{run_memory_gib(largest_run_jobs):,.1f} GiB)")
    for value, limit, key in ((runs, limits.max_runs, "max_runs"),
                              (job_runs, limits.max_job_runs, "max_job_runs")):
        if value > limit:
            raise ConfigError(f"limits.{key}: {estimate}, above the limit of {limit:,}; "
                              f"expected fewer, or a larger limits.{key} in the config")
    if run_memory_gib(largest_run_jobs) > limits.max_run_memory_gib:
        raise ConfigError(f"limits.max_run_memory_gib: {estimate}, above the limit of "
                          f"{limits.max_run_memory_gib:g} GiB; expected fewer jobs, or a "
                          "larger limits.max_run_memory_gib in the config")
