# Shared by the rules: the experiment plan, path patterns and the file lists derived from them.

import functools
import hashlib
import json
import os
import shutil
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config

from simcore.base import patterns
from simcore.base.caches import closure_digests
from simcore.sweep.config import check_same_reading, read_config, validate
from simcore.base.errors import SimcoreError
from simcore.sweep.identity import definitions_of
from simcore.sweep.planning import count_cached, describe_counts, staged_plan
from simcore.sweep.runner import engines_digest, engines_status, useful_workers
from simcore.sweep.samples import seed_spans, workload_digests
from simcore.sweep.store import damaged_shards
from simcore.sweep.timing import shard_request
from simcore.workload.traces import load_catalogue
from simcore.workload.synthetic import MODELS


wildcard_constraints:
    trace=patterns.NAME_REGEX,
    dataset=patterns.NAME_REGEX,
    workload=patterns.NAME_REGEX,
    experiment=patterns.NAME_REGEX,
    machine=patterns.NAME_REGEX,
    policy=patterns.NAME_REGEX,
    variant=r"[0-9a-f]{12}",
    run=r"[0-9]+",


R = patterns.results
try:  # bad input is a one-line message naming the key, not a traceback
    # The configuration as simcore reads each file (refusing a repeated key, a bomb of
    # aliases, a YAML 1.1 surprise), merged as Snakemake merges them; Snakemake read the
    # files with its own loader first, and must have read the same.
    OURS = {}
    for path in workflow.configfiles:
        update_config(OURS, read_config(path))
    update_config(OURS, workflow.config_settings.config)  # --config KEY=VALUE
    check_same_reading(OURS, config)
    validate(OURS, workflow.source_path("../schemas/config.schema.yaml"))
    CATALOGUE = load_catalogue(config["traces"]["catalogue"])
    NOTES = []
    # a two-stage plan of seeds holds its pilot until the run cache has every pilot run,
    # then the seeds the pilot fixed: the run after the pilot's runs the second stage
    PLANNED, STAGES = staged_plan(config, CATALOGUE, patterns.RESULTS, NOTES)
    SHARDS = {shard.label(): shard for shard in PLANNED}
except SimcoreError as exc:
    raise WorkflowError(f"configuration: {exc}") from None
for note in NOTES:
    print(f"torus-sweep: warning: {note}", file=sys.stderr)
DATASET = next(iter(SHARDS.values())).dataset
# Each (allocator, scheduler) pair is its own compiled engine: warm those the config uses.
ENGINE_PAIRS = sorted({(s.machine_spec.allocator, s.policy_spec.scheduler) for s in SHARDS.values()})
# Named by the engines' kernel cache directories: a registry row changes none of them.
KERNELS_READY = R(patterns.KERNELS_READY).format(digest=engines_digest(ENGINE_PAIRS))


def dataset_file(pattern):
    """A per-dataset pattern for this configuration's dataset."""
    return R(pattern).format(dataset=DATASET)


def shard(wildcards):
    return SHARDS[
        "/".join(
            (wildcards.experiment, wildcards.workload, wildcards.machine, wildcards.policy)
        )
    ]


def shard_summaries():
    return [R(patterns.SHARD_SUMMARY).format(dataset=DATASET, **s.names) for s in SHARDS.values()]


def shard_outputs():
    """Both files of every shard."""
    return list(planned_shard_files())


def planned_shard_files():
    """Both files of every shard, each with the specification the configuration plans for
    its shard (`Shard.to_json`, as the shard job writes it)."""
    return {
        R(pattern).format(dataset=DATASET, **s.names): s.to_json()
        for s in SHARDS.values()
        for pattern in (patterns.SHARD_SUMMARY, patterns.SHARD_JOBS)
    }


def schedule_outputs():
    """The exported schedule of every run an experiment asks for (`schedules: N`)."""
    return [
        R(patterns.SCHEDULE).format(dataset=DATASET, run=i, **s.names)
        for s in SHARDS.values()
        for i in s.scheduled_runs()
    ]


def workload_outputs(s):
    """The outputs holding a shard's job tables: converted traces, and the directory of a
    synthetic workload's samples (one job makes every seed's)."""
    if s.source.synthetic is None:
        return {R(path) for path in s.input_paths()}
    return {R(patterns.SYNTHETIC_SAMPLES).format(workload=s.workload, variant=s.source.variant)}


def workload_files():
    """Every workload output the shards read."""
    return sorted(set().union(*(workload_outputs(s) for s in SHARDS.values())))


def shard_workloads(wildcards):
    return sorted(workload_outputs(shard(wildcards)))


def all_cores(wildcards):
    """Every core of the run, asked when a job is made: a rule reading `workflow.cores`
    as it is defined stops `snakemake --unlock`, which gives no --cores, before it runs."""
    return workflow.cores


def shard_threads(wildcards):
    """A shard's Dask workers. Where the configuration has at least as many shards as
    cores, one: Snakemake runs shards side by side, each simulating in its own process (a
    worker process costs about 1.5 core-seconds to start, more than most shards gain from
    a second one). With fewer shards, one worker per RUNS_PER_WORKER runs, up to the cores
    each shard would get (the shard starts them only where its runs measured say they
    pay: `simcore.sweep.runner.PROBE_S`)."""
    return shard_workers(shard(wildcards), workflow.cores or 1)


def shard_workers(s, cores):
    """`shard_threads` of shard `s` on `cores` cores."""
    return useful_workers(len(s.runs), max(1, cores // len(SHARDS)))


def shard_resources(wildcards, threads, attempt):
    """Time and memory a shard's job asks for, from what its last run measured."""
    return _shard_request(shard(wildcards).label(), threads, attempt)


@functools.cache  # memory and time are asked apart: read the measurements once
def _shard_request(label, threads, attempt):
    return shard_request(".", SHARDS[label], threads, attempt)


def shard_identity(wildcards):
    """What re-runs the shard when it changes (Snakemake's params trigger), readable in
    the re-run reason Snakemake prints: its number of runs, a digest of its specification,
    and the digest of the rows and code its runs use (`simcore.sweep.identity`), so that
    editing a module or a row re-runs exactly the shards that use it."""
    s = shard(wildcards)
    spec = hashlib.sha256(s.to_json().encode()).hexdigest()
    return (f"{len(s.runs)} runs, specification {spec[:16]}, "
            f"rows and code {DEFINITIONS[s.label()][:16]}")


def packed_shard(wildcards, input):
    """The shard's specification as its command takes it, one long compressed word.
    Taking `input` makes it a parameter Snakemake derives from the inputs, which it leaves
    out of its records and re-run reasons: `shard_identity` stands for it there."""
    return shard(wildcards).packed()


def synthetic_spec(wildcards):
    """The workload's model and parameters as canonical JSON (key order is no change)."""
    spec = SHARDS_BY_WORKLOAD[wildcards.workload].source.synthetic
    return json.dumps(spec.to_dict(), sort_keys=True)


def synthetic_seeds(wildcards):
    """Every seed any shard reads of the workload, as ranges: one job makes them all."""
    return seed_spans(SAMPLE_SEEDS[wildcards.workload])


def synthetic_modules(model):
    return ("simcore.workload.synthetic", MODELS[model].module)


def synthetic_code(wildcards):
    return CODE[synthetic_modules(SHARDS_BY_WORKLOAD[wildcards.workload].source.synthetic.model)]


def benchmark(rule, job):
    """Where a rule's job writes its Snakemake benchmark (wall, memory, I/O)."""
    return patterns.BENCHMARK.format(rule=rule, job=job)


SHARDS_BY_WORKLOAD = {s.workload: s for s in SHARDS.values()}
SAMPLE_SEEDS = {
    name: sorted({run.seed for s in SHARDS.values() if s.workload == name for run in s.runs})
    for name, s in SHARDS_BY_WORKLOAD.items()
    if s.source.synthetic
}
CONVERSION_MODULES = ("simcore.workload.io",)
DEFINITIONS = dict(zip(SHARDS, definitions_of(list(SHARDS.values())), strict=True))
CODE = closure_digests(
    {synthetic_modules(s.source.synthetic.model) for s in SHARDS.values() if s.source.synthetic}
    | {CONVERSION_MODULES}
)


# -- shard files the store no longer holds intact ------------------------------------------


def remove_damaged_shards():
    """Remove the shard files damaged or replaced by another shard's since they were
    written (a change modification times miss), or written for another specification of
    their shard than the configuration's (a backup restored after the configuration
    changed), so that Snakemake rebuilds them from the run cache, in a dry run's plan too:
    every reader would refuse them. Only files changed since they were written or last
    checked are read (simcore.sweep.store.damaged_shards)."""
    for path, problem in damaged_shards(planned_shard_files()).items():
        os.remove(path)
        print(f"{problem}; removed: this run rebuilds the shard from the run cache "
              "(simulating any run the cache lacks)", file=sys.stderr)


def remove_incomplete_samples():
    """Remove a synthetic workload's sample directory that lacks a seed's sample (a file
    deleted or damaged, or a seed added), so that Snakemake makes it again: it is one
    output, made whole. Only the files' listings are read."""
    for name, seeds in SAMPLE_SEEDS.items():
        source = SHARDS_BY_WORKLOAD[name].source
        (directory,) = workload_outputs(SHARDS_BY_WORKLOAD[name])
        if not os.path.isdir(directory):
            continue
        found = workload_digests(patterns.RESULTS, source, seeds, {})
        problem = next((f for f in found if isinstance(f, Exception)), None)
        if problem is not None:
            shutil.rmtree(directory)
            print(f"{directory}: a seed's sample is missing ({problem}); removed: this run "
                  "makes its samples again", file=sys.stderr)


# -- the first lines of a run -----------------------------------------------------------------


def announce_plan():
    """Say, before any job starts, what the run holds: its shards and runs, how many the
    run cache has, the processes that simulate, and which engines compile first (minutes,
    silent otherwise)."""
    counts = count_cached(list(SHARDS.values()), list(DEFINITIONS.values()), patterns.RESULTS)
    print(f"plan: {describe_counts(counts)}{processes_note()}", file=sys.stderr)
    for stage in STAGES:
        for line in stage.describe():
            print(f"plan: {stage.experiment}, {line}", file=sys.stderr)
    print(engines_status(ENGINE_PAIRS), file=sys.stderr, flush=True)


def processes_note():
    """How the shards share the cores (nothing where no --cores is given: --unlock)."""
    try:
        cores = workflow.cores
    except WorkflowError:
        return ""
    each = sorted({shard_workers(s, cores) for s in SHARDS.values()})
    span = f"{each[0]}" if len(each) == 1 else f"{each[0]}-{each[-1]}"
    return f"; {cores} core(s): shards run side by side, {span} process(es) each"


if workflow.is_main_process:
    remove_damaged_shards()
    remove_incomplete_samples()
    announce_plan()


def second_stages_due():
    """After a run: the two-stage plans whose pilot this run completed, each a line saying
    that the next run runs their second stage."""
    _, now = staged_plan(config, CATALOGUE, patterns.RESULTS)
    undecided = {stage.experiment for stage in STAGES if stage.decision is None}
    return [
        f"{stage.experiment}: the pilot is done and fixed n = {stage.decision.n}; run "
        "snakemake again to run the second stage"
        for stage in now
        if stage.experiment in undecided
        and stage.decision is not None
        and stage.decision.n > stage.two_stage.pilot
    ]

