"""Running a shard: cached runs are read back, the others simulated on Dask workers.

Each simulation writes its own cache entry (`simcore.sweep.store.cache_path`) as soon as it is
done, atomically, from the worker that ran it. So an interrupted shard, a killed worker or
a re-run after a policy change only simulates runs whose keys have no entry yet, and the
shard's result file is assembled from cache entries in the shard's fixed run order, which
makes it identical whatever the number of workers.

Dask backends (config `sweep.dask`): `local` (default: a LocalCluster of single-threaded
processes, at most `workers` and at most one per RUNS_PER_WORKER runs to simulate, or no
cluster at all where that is one: starting a worker costs more than a few runs),
`address` (an existing scheduler) and `slurm` (dask-jobqueue's SLURMCluster, scaled
between bounds). Kernels are compiled once before workers start, not by each of them.
Batches of runs are submitted, never one task per millisecond-scale simulation; a batch
lost with its worker is recomputed (`retries`) and finds the entries already written.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import math
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from simcore.base.atomic import remove_stale_temporaries
from simcore.base.caches import numba_base
from simcore.base.checksums import recorded_digest
from simcore.base.errors import ConfigError, IntegrityError, SimcoreError
from simcore.base.progress import Progress
from simcore.fidelity.runs import replay_metrics
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.sweep.experiments import Run, Shard
from simcore.sweep.identity import definitions as shard_definitions
from simcore.sweep.store import (
    JOBS_SCHEMA,
    SUMMARY_SCHEMA,
    cache_path,
    jobs_table,
    read_verified,
    run_row,
    shard_dir,
    summary_table,
    write_table,
)
from simcore.sweep.timing import PHASES
from simcore.workload.io import read_workload
from simcore.workload.transforms import prepare

BACKENDS = ("local", "address", "slurm")
#: Runs to simulate per local Dask worker, at least: a worker's start (an interpreter,
#: numba, the shard's kernels) costs about 2 s of a core, as much as a few runs.
RUNS_PER_WORKER = 8


@dataclass(frozen=True)
class Task:
    """One run as a worker needs it (small, so batches pickle cheaply)."""

    key: str
    workload_path: str
    run: Run
    machine: MachineSpec
    policy: PolicySpec
    per_job: bool
    root: str


@dataclass(frozen=True)
class ShardReport:
    """What a shard did: runs found cached and simulated, the shard's wall time, and the
    seconds its batches took (`batches_s`) and each of PHASES, summed over runs and
    workers (what batches spend outside PHASES: checking cache entries)."""

    runs: int
    cached: int
    simulated: int
    seconds: float
    phases: Mapping[str, float]

    def timing(self, workers: int) -> dict[str, Any]:
        """The report as the workflow's timing file holds it (never part of a result)."""
        return {"runs": self.runs, "cached": self.cached, "simulated": self.simulated,
                "wall_s": round(self.seconds, 3), "workers": workers,
                **{name: round(self.phases[name], 3)
                   for name in ("batches_s", *PHASES)}}


def run_shard(shard: Shard, root: str | Path, workers: int = 1,
              dask: Mapping[str, Any] | None = None, log: TextIO = sys.stderr) -> ShardReport:
    """Make the shard's result files under `root`, simulating only runs without a valid
    cache entry. An entry that is unreadable, altered or written for another run is
    reported in `log` by path and simulated again, never trusted."""
    began = time.perf_counter()
    root = Path(root).resolve()  # workers may run elsewhere
    tasks = shard_tasks(shard, root)
    todo = []
    for task in tasks:
        for path in entry_paths(task):
            remove_stale_temporaries(path)
        problem = _entry_problem(task)
        if problem is not None:
            todo.append(task)
            if problem != MISSING:
                print(f"{shard.label()}: {problem}; simulating the run again", file=log)
    cached = len(tasks) - len(todo)
    backend = (dask or {}).get("backend", "local")
    where = (f"{useful_workers(len(todo), workers)} process(es)" if backend == "local"
             else f"Dask workers ({backend})")
    print(f"{shard.label()}: {len(tasks)} runs, {cached} cached, {len(todo)} to simulate"
          + (f" on {where}" if todo else ""), file=log, flush=True)
    progress = Progress(shard.label(), len(tasks), "runs", log, done=cached)
    simulated, phases = 0, dict.fromkeys(("batches_s", *PHASES), 0.0)
    if todo:
        pair = (shard.machine_spec.allocator, shard.policy_spec.scheduler)
        with _executor(workers, len(todo), dict(dask or {"backend": "local"}), pair) as execute:
            for done, seconds in execute(todo):
                simulated += done
                for name, value in seconds.items():
                    phases[name] += value
                progress.show(cached + simulated, f" ({simulated} simulated)")
    rows = [_entry(root, t.key, SUMMARY_SCHEMA).to_pylist()[0] for t in tasks]
    out = shard_dir(root, shard.dataset, shard.names)
    meta = {"shard": shard.to_json(), "runs": len(tasks)}
    jobs = (pa.concat_tables([_entry(root, t.key, JOBS_SCHEMA, per_job=True) for t in tasks])
            if shard.per_job else JOBS_SCHEMA.empty_table())
    write_table(jobs, out / "jobs.parquet", meta)
    write_table(summary_table(rows), out / "summary.parquet", meta)
    report = ShardReport(len(tasks), cached, len(todo), time.perf_counter() - began, phases)
    progress.close()
    print(f"{shard.label()}: {report.runs} runs: {report.cached} cached, {report.simulated} "
          f"simulated in {report.seconds:.1f} s "
          f"({report.simulated / max(report.seconds, 1e-9):.1f} runs/s)", file=log, flush=True)
    return report


def shard_tasks(shard: Shard, root: Path) -> list[Task]:
    """The shard's runs as tasks, in run order, each with its run key."""
    definitions = shard_definitions(shard)
    hashes: dict[str, str] = {}
    tasks = []
    for run in shard.runs:
        path = root / shard.source.path(run.seed)
        if not path.is_file():
            raise SimcoreError(f"shard {shard.label()}: workload file {path} is missing")
        if str(path) not in hashes:
            made = shard.source.provenance(run.seed)  # a file of this source and seed
            hashes[str(path)] = recorded_digest(read_workload(path, made))
        key = shard.run_key(run, hashes[str(path)], definitions)
        tasks.append(Task(key, str(path), run, shard.machine_of(run), shard.policy_of(run),
                          shard.per_job, str(root)))
    return tasks


def simulate_batch(tasks: Sequence[Task]) -> tuple[int, dict[str, float]]:
    """Simulate tasks and store each result in the run cache; returns how many ran and
    their seconds: the batch's own (`batches_s`) and each of PHASES summed over its runs
    (they travel back from the worker with the batch's result)."""
    began = time.perf_counter()
    seconds = dict.fromkeys(PHASES, 0.0)
    for task in tasks:
        for name, value in simulate_task(task).items():
            seconds[name] += value
    return len(tasks), {"batches_s": time.perf_counter() - began, **seconds}


def simulate_task(task: Task) -> dict[str, float]:
    """One run, unless it has a valid cache entry (a retried batch finds its own work);
    the seconds of each of PHASES it went through."""
    from simcore.simulate import simulate

    if _entry_problem(task) is None:
        return {}
    machine = task.machine
    stamps = [time.perf_counter()]
    table = _workload(task.workload_path)
    stamps.append(time.perf_counter())
    try:
        jobs = prepare(table, task.run.transforms, machine, task.run.seed)
        stamps.append(time.perf_counter())
        result = simulate(jobs, machine, task.policy, task.run.seed)
        stamps.append(time.perf_counter())
        fidelity = replay_metrics(table, task.run.transforms, result.jobs)
        stamps.append(time.perf_counter())
    except SimcoreError as exc:
        raise SimcoreError(f"run {task.key[:12]} ({task.workload_path}, "
                           f"{task.run.transforms.key()}, seed {task.run.seed}, "
                           f"{task.machine}, {task.policy}): {exc}") from exc
    meta = {"run_key": task.key}
    if task.per_job:
        write_table(jobs_table(result.jobs, task.key),
                    cache_path(task.root, task.key, per_job=True), meta)
    row = run_row(task.key, machine, task.policy, task.run.transforms, task.run.seed, jobs,
                  {**result.summary, **fidelity})
    write_table(summary_table([row]), cache_path(task.root, task.key), meta)
    stamps.append(time.perf_counter())
    seconds = {name: end - start for name, (start, end) in zip(
        ("read_s", "prepare_s", "in_simulate_s", "fidelity_s", "store_s"),
        itertools.pairwise(stamps), strict=True)}
    engine_s = min(result.timing.get("compile_s", 0.0), seconds["in_simulate_s"])
    return {**seconds, "engine_s": engine_s, "in_simulate_s": seconds["in_simulate_s"] - engine_s}


MISSING = "missing"


def entry_paths(task: Task) -> list[Path]:
    """The cache files of a run: its summary row, and its per-job rows if the shard keeps
    them (an entry may come from a shard that did not)."""
    return [cache_path(task.root, task.key)] + (
        [cache_path(task.root, task.key, per_job=True)] if task.per_job else [])


def _entry_problem(task: Task) -> str | None:
    """None if the run's cache entry is complete and valid, else MISSING or what is wrong."""
    try:
        _entry(task.root, task.key, SUMMARY_SCHEMA)
        if task.per_job:
            _entry(task.root, task.key, JOBS_SCHEMA, per_job=True)
    except FileNotFoundError:
        return MISSING
    except IntegrityError as exc:
        return f"cache entry {exc}"
    return None


def _entry(root: str | Path, key: str, schema: pa.Schema, per_job: bool = False) -> pa.Table:
    """A verified cache entry (see simcore.sweep.store.read_verified)."""
    return read_verified(cache_path(root, key, per_job), schema, key)


def _workload(path: str) -> pa.Table:
    """The job table at `path`, read once per process while the file stays the same."""
    stat = Path(path).stat()
    return _read_once(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_once(path: str, mtime_ns: int, size: int) -> pa.Table:
    return read_workload(path)


def warm_kernels(pairs: Sequence[tuple[str, str]] | None = None, jobs: int = 1,
                 log: TextIO = sys.stderr) -> list[tuple[str, str]]:
    """Compile (or load from the on-disk cache) the engine of each (allocator, scheduler)
    pair, by default every pair that can run together, and mark each as ready in the
    kernel cache, with a line in `log` per engine. Each pair is its own specialisation of
    the engine, so a sweep warms only the pairs it uses; `jobs` processes compile at once
    (cache writes are serialised, `simcore.base.jit`). Returns the pairs compiled."""
    from simcore.machines.contract import STEADY
    from simcore.machines.registry import ALLOCATORS
    from simcore.policy import SCHEDULERS

    if pairs is None:  # machines are steady unless they have a failure process
        pairs = [(a, s) for a in ALLOCATORS for s in SCHEDULERS
                 if SCHEDULERS[s].needs - {STEADY} <= ALLOCATORS[a].capabilities]
    todo = engines_to_compile(pairs)
    if todo:
        print(f"kernels: compiling {len(todo)} engine(s) in {min(jobs, len(todo))} "
              f"process(es) ({_engine_names(todo)}): {_compile_note()}", file=log, flush=True)
    if jobs <= 1 or len(todo) <= 1:
        outcomes: Iterator[tuple[tuple[str, str], float]] = (
            (pair, _compile_engine(*pair)) for pair in todo)
        for done, (pair, seconds) in enumerate(outcomes, 1):
            _report_engine(pair, seconds, done, len(todo), log)
        return todo
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # fresh interpreters, no forked LLVM
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(todo)), context) as pool:
        futures = {pool.submit(_compile_engine, *pair): pair for pair in todo}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            _report_engine(futures[future], future.result(), done, len(todo), log)
    return todo


def _compile_engine(allocator: str, scheduler: str) -> float:
    """Compile one pair's engine by simulating three jobs, mark it ready; its seconds."""
    from simcore.jobs.bsp import RING, BSPJobs
    from simcore.jobs.jobs import Jobs
    from simcore.machines.registry import ALLOCATORS
    from simcore.simulate import simulate

    began = time.perf_counter()
    jobs = Jobs.create([1, 2, 3], [0, 1, 2], [5, 5, 5], [6, 6, 6], [2, 1, 2],
                       shape=np.array([[2, 1, 1], [1, 1, 1], [1, 2, 1]]),
                       torus=np.array([1, 0, 1], bool),
                       bsp=BSPJobs(np.full(3, RING), np.full(3, 1e-3), np.full(3, 2e-3),
                                   np.ones(3, dtype=np.int64), np.full(3, 5e-5)))
    machine = MachineSpec.parse(ALLOCATORS[allocator].machine_example, allocator)
    simulate(jobs, machine, scheduler)
    mark = _ready_mark(allocator, scheduler)
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return time.perf_counter() - began


def _report_engine(pair: tuple[str, str], seconds: float, done: int, total: int,
                   log: TextIO) -> None:
    print(f"kernels: engine {pair[0]} x {pair[1]} compiled in {seconds:.1f} s "
          f"({done}/{total})", file=log, flush=True)


def engines_to_compile(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs, one per engine, whose engine is not in the kernel cache yet."""
    return list({mark: pair for mark, pair in zip(_ready_marks(pairs), pairs, strict=True)
                 if not mark.exists()}.values())


def engines_status(pairs: Sequence[tuple[str, str]]) -> str:
    """One line: the engines of these pairs, which are compiled and which will be."""
    todo = engines_to_compile(pairs)
    engines = len(set(_ready_marks(pairs)))
    if not todo:
        return f"kernels: {engines} engine(s), every one in the cache ({numba_base()})"
    return (f"kernels: {engines} engine(s), {len(todo)} to compile first "
            f"({_engine_names(todo)}): {_compile_note()}")


def _compile_note() -> str:
    """What compiling engines costs, said before it starts."""
    return ("a few minutes on a first run or after their code changes; later runs load "
            f"them from the cache ({numba_base()})")


def _engine_names(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{allocator} x {scheduler}" for allocator, scheduler in pairs)


def kernels_ready(allocator: str, scheduler: str) -> bool:
    """Whether the engine of this pair is in the on-disk kernel cache (workers just load it)."""
    return _ready_mark(allocator, scheduler).exists()


def engines_digest(pairs: Sequence[tuple[str, str]]) -> str:
    """A name for the compiled engines of these (allocator, scheduler) pairs: it changes
    when one of their kernel cache directories does (their code changed) or the set of
    engines does, and not when a registry gains a row."""
    marks = sorted({f"{mark.parent.name}/{mark.name}" for mark in _ready_marks(pairs)})
    return hashlib.sha256("\n".join(marks).encode()).hexdigest()[:16]


def _ready_mark(allocator: str, scheduler: str) -> Path:
    """The marker of a compiled pair, in its engine's kernel cache directory: one per
    allocator and scheduler module (the schedulers of one module share its struct, hence
    its kernels)."""
    return _ready_marks([(allocator, scheduler)])[0]


def _ready_marks(pairs: Sequence[tuple[str, str]]) -> list[Path]:
    """`_ready_mark` of each pair, their directories found at once."""
    from simcore.base.caches import engine_directories
    from simcore.machines.registry import ALLOCATORS
    from simcore.policy import SCHEDULERS
    from simcore.simulate import engine_modules

    modules = [engine_modules(ALLOCATORS[a], SCHEDULERS[s]) for a, s in pairs]
    directories = engine_directories(modules)
    return [directories[m][0] / f".ready-{a}-{SCHEDULERS[s].module}"
            for m, (a, s) in zip(modules, pairs, strict=True)]


def useful_workers(runs: int, workers: int) -> int:
    """How many of `workers` local Dask workers `runs` simulations keep busy long enough to
    pay for their start (one: simulate in the shard's own process)."""
    return max(1, min(workers, runs // RUNS_PER_WORKER))


def _batches(tasks: Sequence[Task], workers: int) -> list[list[Task]]:
    """Several batches per worker (load balance), none too large (lost work on failure)."""
    size = max(1, min(50, math.ceil(len(tasks) / (workers * 8))))
    return [list(tasks[i:i + size]) for i in range(0, len(tasks), size)]


def check_backend(dask: dict[str, Any]) -> None:
    """The Dask backend must be one of BACKENDS (checked before any run, also when every
    run is cached and none needs it)."""
    backend = dask.get("backend", "local")
    if backend not in BACKENDS:
        raise ConfigError(f"sweep.dask.backend: {backend!r}; expected one of {BACKENDS}")


@contextlib.contextmanager
def _executor(workers: int, n_tasks: int, dask: dict[str, Any],
              pair: tuple[str, str]) -> Iterator[Any]:
    """A function tasks -> iterator of (completed runs, their seconds by phase: see
    `simulate_batch`), backed by Dask or run in-process."""
    check_backend(dask)
    backend = dask.pop("backend", "local")
    if backend == "local":
        workers = useful_workers(n_tasks, workers)
    if workers <= 1 and backend == "local":
        yield lambda tasks: (simulate_batch([t]) for t in tasks)
        return
    from dask.distributed import Client, as_completed

    if not kernels_ready(*pair):
        warm_kernels([pair])  # compile once, here, not in every worker at the same time
    if backend == "slurm":  # batches for the workers the cluster may grow to, not our threads
        workers = dask.get("maximum_jobs", 4) * dask.get("processes", 1)
    with _cluster(backend, workers, dask) as cluster, Client(cluster) as client:
        if backend == "address":
            workers = max(workers, len(client.scheduler_info()["workers"]))

        def execute(tasks: Sequence[Task]) -> Iterator[tuple[int, dict[str, float]]]:
            futures = client.map(simulate_batch, _batches(tasks, workers), retries=3,
                                 pure=False)
            for _, outcome in as_completed(futures, with_results=True):
                yield outcome

        yield execute


@contextlib.contextmanager
def _cluster(backend: str, workers: int, options: dict[str, Any]) -> Iterator[Any]:
    if backend == "address":
        if "address" not in options:
            raise ConfigError("sweep.dask.address: the scheduler address, e.g. tcp://host:8786")
        yield options["address"]
        return
    if backend == "local":
        from dask.distributed import LocalCluster

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:
            yield cluster
        return
    from simcore.sweep.slurm_cluster import slurm_cluster

    with slurm_cluster(options) as cluster:
        yield cluster
