"""Running a shard: cached runs are read back, the others simulated, in the shard's own
process or on Dask workers.

Runs are simulated in batches, and a batch writes its runs to the run cache
(`simcore.sweep.cache`) in parts, atomically, from the process that simulated them: a part
at least every FLUSH_S seconds and at the batch's end. So an interrupted shard, a killed
worker or a re-run after a policy change only simulates runs whose keys have no entry
yet (losing at most a part's seconds of work), and the shard's result file is assembled
from cache entries in the shard's fixed run order, which makes it identical whatever the
number of workers.

Dask backends (config `sweep.dask`): `local` (default: a LocalCluster of single-threaded
processes, at most `workers`), `address` (an existing scheduler) and `slurm`
(dask-jobqueue's SLURMCluster, scaled between bounds). Locally a shard first simulates in
its own process for `probe_s` seconds (PROBE_S): workers are started for the rest only
where the runs measured so far say the rest would take longer than starting them costs
(WORKER_START_S each), so a shard of short runs never pays for a cluster. Kernels are
compiled once before workers start, not by each of them. Batches of runs are submitted,
never one task per millisecond-scale simulation; a batch lost with its worker is
recomputed (`retries`) and finds the parts it already wrote.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from simcore.base.caches import numba_base
from simcore.base.errors import ConfigError, IntegrityError, SimcoreError
from simcore.base.progress import Progress
from simcore.fidelity.runs import replay_metrics
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.sweep.cache import batch_name, find, read_entries, write_part, written_parts
from simcore.sweep.experiments import Run, Shard, Source
from simcore.sweep.identity import definitions as shard_definitions
from simcore.sweep.samples import run_table, workload_digests
from simcore.sweep.store import (
    jobs_table,
    run_row,
    shard_dir,
    write_table,
)
from simcore.sweep.timing import PHASES
from simcore.workload.transforms import prepare

BACKENDS = ("local", "address", "slurm")
#: Seconds a worker's start costs (an interpreter, numba, the shard's kernels), and the
#: seconds a shard simulates in its own process before deciding whether to start workers.
WORKER_START_S = 2.0
PROBE_S = 3.0
#: Runs the shard's own process simulates at least before deciding (the first one pays
#: for reading its workload and loading the engine, so the rate is of the others).
PROBE_RUNS = 3
#: A batch writes its runs to the cache at least this often (seconds).
FLUSH_S = 10.0


@dataclass(frozen=True)
class Task:
    """One run as a worker needs it (small, so batches pickle cheaply)."""

    key: str
    source: Source
    run: Run
    machine: MachineSpec
    policy: PolicySpec


@dataclass(frozen=True)
class Batch:
    """Runs simulated together by one process, which writes them to the run cache under
    `root` (`definitions`: the digest of the rows and code they use; `per_job`: with their
    per-job rows)."""

    root: str
    definitions: str
    per_job: bool
    tasks: tuple[Task, ...]
    name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", batch_name([t.key for t in self.tasks], self.per_job))


@dataclass(frozen=True)
class ShardReport:
    """What a shard did: runs found cached and simulated, the processes that simulated
    them, the shard's wall time, and the seconds its batches took (`batches_s`) and each
    of PHASES, summed over runs and workers."""

    runs: int
    cached: int
    simulated: int
    seconds: float
    phases: Mapping[str, float]
    processes: int = 1

    def timing(self, workers: int) -> dict[str, Any]:
        """The report as the workflow's timing file holds it (never part of a result):
        `workers` the shard was given, `processes` that simulated."""
        return {"runs": self.runs, "cached": self.cached, "simulated": self.simulated,
                "wall_s": round(self.seconds, 3), "workers": workers,
                "processes": self.processes,
                **{name: round(self.phases[name], 3)
                   for name in ("batches_s", *PHASES)}}


def run_shard(shard: Shard, root: str | Path, workers: int = 1,
              dask: Mapping[str, Any] | None = None, log: TextIO = sys.stderr) -> ShardReport:
    """Make the shard's result files under `root`, simulating only runs without a valid
    cache entry. An entry that is unreadable, altered or written for another run is
    reported in `log` by path and simulated again, never trusted."""
    began = time.perf_counter()
    root = Path(root).resolve()  # workers may run elsewhere
    definitions = shard_definitions(shard)
    tasks = shard_tasks(shard, root, definitions)
    keys = [task.key for task in tasks]
    runs = read_entries(find(root, definitions, keys, shard.per_job, log), shard.per_job, log)
    todo = [task for task in tasks if task.key not in runs]
    cached = len(tasks) - len(todo)
    print(f"{shard.label()}: {len(tasks)} runs, {cached} cached, {len(todo)} to simulate",
          file=log, flush=True)
    progress = Progress(shard.label(), len(tasks), "runs", log, done=cached)
    phases = dict.fromkeys(("batches_s", *PHASES), 0.0)
    processes = 1
    if todo:
        batch = functools.partial(Batch, str(root), definitions, shard.per_job)
        processes = _simulate(todo, batch, workers, dict(dask or {"backend": "local"}),
                              (shard.machine_spec.allocator, shard.policy_spec.scheduler),
                              phases, lambda done: progress.show(
                                  cached + done, f" ({done} simulated)"), log)
        runs = runs.merged(read_entries(find(root, definitions, [t.key for t in todo],
                                             shard.per_job, log), shard.per_job, log))
        lost = [key for key in keys if key not in runs]
        if lost:
            raise IntegrityError(f"{shard.label()}: {len(lost)} runs simulated are not in "
                                 f"the run cache ({lost[0][:12]}...); run the shard again")
    out = shard_dir(root, shard.dataset, shard.names)
    meta = {"shard": shard.to_json(), "runs": len(tasks)}
    summary, jobs = runs.ordered(keys)
    write_table(jobs, out / "jobs.parquet", meta)
    write_table(summary, out / "summary.parquet", meta)
    report = ShardReport(len(tasks), cached, len(todo), time.perf_counter() - began, phases,
                         processes)
    progress.close()
    print(f"{shard.label()}: {report.runs} runs: {report.cached} cached, {report.simulated} "
          f"simulated in {report.seconds:.1f} s "
          f"({report.simulated / max(report.seconds, 1e-9):.1f} runs/s)", file=log, flush=True)
    return report


def shard_tasks(shard: Shard, root: Path, definitions: str | None = None) -> list[Task]:
    """The shard's runs as tasks, in run order, each with its run key."""
    digests = []
    for found in workload_digests(root, shard.source, [run.seed for run in shard.runs], {}):
        if isinstance(found, FileNotFoundError):
            raise SimcoreError(f"shard {shard.label()}: workload file {found.filename} is "
                               "missing")
        if isinstance(found, Exception):
            raise found
        digests.append(found)
    keys = shard.run_keys(digests, definitions or shard_definitions(shard))
    return [Task(key, shard.source, run, shard.machine_of(run), shard.policy_of(run))
            for key, run in zip(keys, shard.runs, strict=True)]


def _simulate(todo: Sequence[Task], batch: Callable[[tuple[Task, ...]], Batch],
              workers: int, dask: dict[str, Any], pair: tuple[str, str],
              phases: dict[str, float], show: Callable[[int], None], log: TextIO) -> int:
    """Simulate `todo` into the run cache, adding their seconds to `phases` and showing
    how many are done; returns the processes that simulated. Locally, with more than one
    worker, the shard's own process first simulates for PROBE_S (`probe_s`; 0: workers at
    once) and goes on alone unless the runs left would take longer than starting workers
    costs."""
    check_backend(dask)
    backend = dask.pop("backend", "local")
    probe_s = float(dask.pop("probe_s", PROBE_S))
    done, rate = 0, None
    if backend == "local" and (workers <= 1 or probe_s > 0):
        began = time.perf_counter()
        first = began  # when the first run ended: it alone pays for reading and loading

        def counted(count: int) -> None:
            nonlocal done, first
            done = count
            first = time.perf_counter() if count == 1 else first
            show(done)

        def probed() -> bool:
            return workers > 1 and done >= PROBE_RUNS and time.perf_counter() - began >= probe_s

        _add(phases, simulate_batch(batch(tuple(todo)), counted, probed))
        left = len(todo) - done
        rate = (time.perf_counter() - first) / max(done - 1, 1)
        workers = min(workers, left)
        if workers <= 1 or rate * left < WORKER_START_S * workers * workers / (workers - 1):
            if left:
                _add(phases, simulate_batch(batch(tuple(todo[done:])), lambda n: show(done + n)))
            return 1
        print(f"simulating the {left} runs left on {workers} processes", file=log, flush=True)
    with _executor(workers, backend, dask, pair) as (execute, workers):
        size = _batch_size(len(todo) - done, workers, rate)
        for count, seconds in execute([batch(tuple(todo[i:i + size]))
                                       for i in range(done, len(todo), size)]):
            done += count
            _add(phases, (count, seconds))
            show(done)
    return workers


def _add(phases: dict[str, float], outcome: tuple[int, Mapping[str, float]]) -> None:
    """Add a batch's seconds (`simulate_batch`'s outcome) to `phases`."""
    for name, value in outcome[1].items():
        phases[name] += value


def simulate_batch(batch: Batch, show: Callable[[int], None] | None = None,
                   stop: Callable[[], bool] | None = None) -> tuple[int, dict[str, float]]:
    """Simulate a batch's runs, unless a part of it already holds them (a batch simulated
    again finds its own work), writing them to the run cache in parts; returns how many
    were simulated and their seconds: the batch's own (`batches_s`) and each of PHASES
    summed over its runs (they travel back from a worker with the batch's result). `show`
    is told the count after each run; `stop`, asked after each run, ends the batch early."""
    began = time.perf_counter()
    seconds = dict.fromkeys(PHASES, 0.0)
    done, part = written_parts(batch.root, batch.definitions, batch.name)
    rows: list[dict[str, object]] = []
    jobs: list[pa.Table] = []
    flushed, count = time.perf_counter(), 0

    def flush() -> None:
        nonlocal part, flushed
        start = time.perf_counter()
        write_part(batch.root, batch.definitions, batch.name, part, rows,
                   jobs if batch.per_job else None)
        rows.clear()
        jobs.clear()
        part += 1
        flushed = time.perf_counter()
        seconds["store_s"] += flushed - start

    for task in batch.tasks:
        if task.key in done:
            continue
        row, schedule, spent = simulate_task(task, batch.root)
        rows.append(row)
        if batch.per_job:
            jobs.append(jobs_table(schedule, task.key))
        for name, value in spent.items():
            seconds[name] += value
        count += 1
        if time.perf_counter() - flushed >= FLUSH_S:
            flush()
        if show is not None:
            show(count)
        if stop is not None and stop():
            break
    if rows:
        flush()
    return count, {"batches_s": time.perf_counter() - began, **seconds}


def simulate_task(task: Task, root: str | Path) -> tuple[dict[str, object], pa.Table,
                                                        dict[str, float]]:
    """One run, its workload read under the results `root`: its summary row, its per-job
    schedule and the seconds of each of PHASES but `store_s` it went through."""
    from simcore.simulate import simulate

    machine = task.machine
    stamps = [time.perf_counter()]
    table = run_table(root, task.source, task.run.seed)
    stamps.append(time.perf_counter())
    try:
        jobs = prepare(table, task.run.transforms, machine, task.run.seed)
        stamps.append(time.perf_counter())
        result = simulate(jobs, machine, task.policy, task.run.seed)
        stamps.append(time.perf_counter())
        fidelity = replay_metrics(table, task.run.transforms, result.jobs)
        stamps.append(time.perf_counter())
    except SimcoreError as exc:
        raise SimcoreError(f"run {task.key[:12]} ({task.source.path(task.run.seed)}, "
                           f"{task.run.transforms.key()}, seed {task.run.seed}, "
                           f"{task.machine}, {task.policy}): {exc}") from exc
    row = run_row(task.key, machine, task.policy, task.run.transforms, task.run.seed, jobs,
                  {**result.summary, **fidelity})
    seconds = {name: end - start for name, (start, end) in zip(
        ("read_s", "prepare_s", "in_simulate_s", "fidelity_s"),
        itertools.pairwise(stamps), strict=True)}
    engine_s = min(result.timing.get("compile_s", 0.0), seconds["in_simulate_s"])
    return row, result.jobs, {**seconds, "engine_s": engine_s,
                              "in_simulate_s": seconds["in_simulate_s"] - engine_s}


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
    """How many of `workers` Dask workers a shard of `runs` runs is given: at most one per
    RUNS_PER_WORKER runs (a worker's start costs as much as a few runs); the shard decides
    on measured runs whether to start them (`PROBE_S`)."""
    return max(1, min(workers, runs // RUNS_PER_WORKER))


#: Runs per worker a shard is given, at least.
RUNS_PER_WORKER = 8


def _batch_size(runs: int, workers: int, run_s: float | None = None) -> int:
    """Eight batches per worker at least (load balance), each of about FLUSH_S seconds of
    runs where their seconds were measured (`run_s`), else of 50 runs at most: a batch
    writes a part at its end, so short runs make few files, and a lost worker loses
    little."""
    most = max(1, math.ceil(runs / (workers * 8)))
    return min(most, max(1, math.ceil(FLUSH_S / run_s)) if run_s else 50)


def check_backend(dask: dict[str, Any]) -> None:
    """The Dask backend must be one of BACKENDS (checked before any run, also when every
    run is cached and none needs it)."""
    backend = dask.get("backend", "local")
    if backend not in BACKENDS:
        raise ConfigError(f"sweep.dask.backend: {backend!r}; expected one of {BACKENDS}")


@contextlib.contextmanager
def _executor(workers: int, backend: str, dask: dict[str, Any],
              pair: tuple[str, str]) -> Iterator[tuple[Any, int]]:
    """A function batches -> iterator of (runs simulated, their seconds by phase: see
    `simulate_batch`) on Dask workers, and the batch size for them."""
    from dask.distributed import Client, as_completed

    if not kernels_ready(*pair):
        warm_kernels([pair])  # compile once, here, not in every worker at the same time
    if backend == "slurm":  # batches for the workers the cluster may grow to, not our threads
        workers = dask.get("maximum_jobs", 4) * dask.get("processes", 1)
    with _cluster(backend, workers, dask) as cluster, Client(cluster) as client:
        if backend == "address":
            workers = max(workers, len(client.scheduler_info()["workers"]))

        def execute(batches: Sequence[Batch]) -> Iterator[tuple[int, dict[str, float]]]:
            futures = client.map(simulate_batch, batches, retries=3, pure=False)
            for _, outcome in as_completed(futures, with_results=True):
                yield outcome

        yield execute, workers


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
