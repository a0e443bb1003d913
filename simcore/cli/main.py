"""The `simcore` command line."""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.patterns import CATALOGUE, PUBLISHED, RESULTS
from simcore.cli.common import (
    check_memory,
    check_name,
    check_output,
    check_store,
    flag,
    flag_value,
    json_argument,
    json_text,
    key_value,
    memory_flag,
    run_handler,
)
from simcore.machines.curves.orderings import ORDERINGS
from simcore.machines.curves.orderings import describe_choices as describe_orderings
from simcore.machines.registry import ALLOCATORS, FAILURE_OPTIONS, KINDS
from simcore.policy import SCHEDULERS
from simcore.report.listing import REGISTRIES
from simcore.sweep.limits import Limits
from simcore.workload.sources import describe_choices
from simcore.workload.traces import MIRROR_ENV
from simcore.workload.transforms import transforms


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand. Bad input (a SimcoreError, a file that cannot be read or written)
    exits with status 2 and one line on stderr; anything else is a bug and shows its
    traceback. SIGTERM unwinds like an error, so no temporary file is left behind."""
    parser = _parser()
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    return run_handler(args)

def entry() -> int:
    """The `simcore` command: `main`, then the heap frozen, so that the interpreter's exit
    does not walk every object that importing numba and the registries made (0.1 s of a
    short run)."""
    code = main()
    gc.freeze()
    return code


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simcore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("swf-info", help="header summary and job statistics of an SWF file")
    info.add_argument("path", help="SWF file, plain or .gz")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(handler=_swf_info)

    fetch = commands.add_parser("fetch-trace", help="copy or download a catalogued trace, verified")
    fetch.add_argument("name", help="trace name in the catalogue")
    fetch.add_argument("--catalogue", default=str(CATALOGUE))
    fetch.add_argument("--out", required=True, help="destination .swf.gz")
    fetch.add_argument("--mirror", action="append", default=[],
                       help=f"directory searched before downloading (also ${MIRROR_ENV})")
    fetch.set_defaults(handler=_fetch_trace)

    convert = commands.add_parser("convert-trace", help="SWF -> cleaned, typed Parquet")
    convert.add_argument("swf", help="SWF file, plain or .gz")
    convert.add_argument("out", help="destination .parquet")
    convert.add_argument("--expect-jobs", type=int, help="job lines the file must hold")
    convert.add_argument("--expect-max-procs", type=int, help="the MaxProcs it must declare")
    convert.add_argument("--expect-sha256", help="the sha256 the file must have")
    convert.add_argument("--cleaning", default="{}", metavar="JSON",
                         help="cleaning options, e.g. '{\"oversize\": \"drop\"}'")
    convert.set_defaults(handler=_convert_trace)

    run = commands.add_parser(
        "run", help="simulate one workload on one machine under one policy",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_registry_help())
    run.add_argument("--workload", required=True, help=describe_choices())
    run.add_argument("--jobs", help="jobs to sample from a model")
    run.add_argument("--machine",
                     help="kind:size, e.g. " + ", ".join(k.example for k in KINDS.values())
                     + " (default for a model of one machine, e.g. fcs:scenario1: its own)")
    run.add_argument("--allocator", choices=ALLOCATORS,
                     help="how units are chosen (default: the machine kind's)")
    run.add_argument("--ordering", help="processor ordering of the curve allocators: "
                     f"{describe_orderings()} (default row-major)")
    run.add_argument("--machine-param", action="append", default=[], metavar="K=V",
                     help="allocator or failure option, e.g. fallback_span=ring, "
                          "dilation=0.5, unit_mtbf_s=8.64e6, on_failure=kill (repeatable)")
    run.add_argument("--scheduler", required=True, choices=SCHEDULERS)
    run.add_argument("--param", action="append", default=[], metavar="K=V",
                     help="scheduler parameter, e.g. fn_tor=0.1 (repeatable)")
    run.add_argument("--start-delay", help="scheduler parameter start_delay_s")
    run.add_argument("--estimates", help="scheduler parameter estimates")
    for name, field in transforms().items():  # the workload transforms, one flag each
        parameter = field.metadata["parameter"]
        run.add_argument(flag(name), dest=name, metavar=name.upper(),
                         help=f"{parameter.meaning} (default {parameter.default})")
    run.add_argument("--seed", help="seed of the run's random draws (default 0)")
    run.add_argument("--cleaning", default="{}", metavar="JSON",
                     help="cleaning options of an SWF trace, e.g. '{\"oversize\": \"drop\"}'")
    run.add_argument("--jobs-out", help="write the per-job schedule to this .parquet")
    memory_flag(run)
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(handler=_run)

    synth = commands.add_parser("synthesize", help="sample a workload model into a .parquet")
    synth.add_argument("model", nargs="?", help="MODEL:ARGUMENT, e.g. lublin:128")
    synth.add_argument("--jobs", help="jobs to sample (with MODEL)")
    synth.add_argument("--spec", metavar="JSON",
                       help="instead of MODEL and its flags: the model and every parameter, "
                            "e.g. '{\"model\": \"lublin\", \"machine_size\": 128, "
                            "\"jobs\": 1000}'")
    synth.add_argument("--param", action="append", default=[], metavar="K=V",
                       help="other model parameters, e.g. job_type=mixed (repeatable)")
    synth.add_argument("--seed", required=True, help="seed of the sample (an integer >= 0)")
    synth.add_argument("--out", required=True, help="destination .parquet")
    memory_flag(synth)
    synth.set_defaults(handler=_synthesize)

    warm = commands.add_parser("warm", help="compile the simulation kernels into the cache")
    warm.add_argument("--pair", nargs=2, action="append", metavar=("ALLOCATOR", "SCHEDULER"),
                      help="only this allocator and scheduler (repeatable; default: all)")
    warm.add_argument("--jobs", type=int, default=1,
                      help="engines compiled at once, each in its own process (default 1)")
    warm.add_argument("--flag", help="touch this file when done")
    warm.set_defaults(handler=_warm)

    shard = commands.add_parser("sweep-shard", help="run one shard of a sweep")
    spec = shard.add_mutually_exclusive_group(required=True)
    spec.add_argument("--spec", metavar="JSON", help="shard specification")
    spec.add_argument("--spec-packed", metavar="WORD",
                      help="shard specification as the workflow passes it (compressed)")
    shard.add_argument("--results", default="results", help="results root (store and cache)")
    shard.add_argument("--workers", type=int, default=1, help="local Dask worker processes")
    shard.add_argument("--dask", default='{"backend": "local"}', metavar="JSON",
                       help="Dask backend: local, address or slurm, with options")
    shard.add_argument("--timing", metavar="FILE",
                       help="write the shard's wall and simulation seconds here (JSON)")
    shard.set_defaults(handler=_sweep_shard)

    tables = commands.add_parser("tables", help="aggregate a dataset's store into tables")
    tables.add_argument("--store", help="a dataset's store directory, e.g. "
                                        "results/torus-sweep-default/store")
    tables.add_argument("--out", required=True, help="directory of the tables")
    tables.add_argument("--summaries", nargs="+", metavar="FILE",
                        help="only these shard summary files (default: the whole store)")
    tables.set_defaults(handler=_tables)

    reproduction = commands.add_parser(
        "reproduction", help="the seeds' published numbers beside a dataset's results")
    reproduction.add_argument("--published", default=str(PUBLISHED),
                              help="the published numbers (config/published.yaml)")
    reproduction.add_argument("--store", help="a dataset's store directory")
    reproduction.add_argument("--summaries", nargs="+", metavar="FILE",
                              help="only these shard summary files (default: the whole store)")
    reproduction.add_argument("--figures", default="figures",
                              help="where the report links figures, relative to it")
    reproduction.add_argument("--copy-figures", metavar="DIR",
                              help="copy the linked figures from this dataset figure directory "
                                   "to --figures beside the report (for a report kept "
                                   "outside the dataset, e.g. docs/reproduction.md)")
    reproduction.add_argument("--out", required=True, help="the report (.md)")
    reproduction.set_defaults(handler=_reproduction)

    figures = commands.add_parser("figures", help="plot the tables")
    figures.add_argument("--tables", required=True, help="directory of the tables")
    figures.add_argument("--out", required=True, help="directory of the figures")
    figures.set_defaults(handler=_figures)

    archive = commands.add_parser("archive", help="pack or verify a result dataset archive")
    archive_commands = archive.add_subparsers(dest="archive_command", required=True)
    pack = archive_commands.add_parser("pack", help="store, tables, figures, config -> one file")
    pack.add_argument("--out", required=True, help="archive path (.tar.xz, .tar.gz or .tar)")
    pack.add_argument("--results", required=True,
                      help="the dataset's directory, e.g. results/torus-sweep-default")
    pack.add_argument("--config-json", default="{}", metavar="JSON", help="resolved config")
    pack.add_argument("--name", help="dataset name (default: config 'dataset')")
    pack.add_argument("--summaries", nargs="+", metavar="FILE",
                      help="only these shards (default: the whole store)")
    pack.set_defaults(handler=_archive_pack)
    check = archive_commands.add_parser("verify", help="check every checksum, reload tables")
    check.add_argument("path")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_archive_verify)

    lister = commands.add_parser(
        "list", help="machine kinds, allocators, schedulers, models, transforms, traces, "
                     "output columns")
    lister.add_argument("registry", nargs="?", choices=REGISTRIES, help="only this one")
    lister.add_argument("--json", action="store_true", help="print one JSON object")
    lister.add_argument("--markdown", action="store_true",
                        help="with columns: the page docs/outputs.md")
    lister.set_defaults(handler=_list)

    planner = commands.add_parser(
        "plan", help="the shards and runs a configuration holds, and how many are cached")
    planner.add_argument("--configfile", required=True, help="a complete configuration")
    planner.add_argument("--results", default=RESULTS, help="results root (run cache)")
    planner.add_argument("--timing", action="store_true",
                         help="what the last run of each shard cost, from its benchmark files")
    planner.add_argument("--benchmarks-root", default=".", metavar="DIR",
                         help="with --timing: the directory holding benchmarks/ (default .)")
    planner.add_argument("--json", action="store_true", help="print one JSON object")
    planner.set_defaults(handler=_plan)

    bgl = commands.add_parser("bgl", help="inspect a wired machine (BG/L) description")
    bgl_commands = bgl.add_subparsers(dest="bgl_command", required=True)
    links = bgl_commands.add_parser("links", help="link sets connecting midplanes of one line")
    links.add_argument("--machine", default="bgl", help="machine description name or .yaml")
    links.add_argument("--dim", required=True, help="dimension: x, y, z (or 0, 1, 2)")
    links.add_argument("--midplanes", required=True, help="positions along the line, e.g. 1,2,3")
    links.add_argument("--topology", required=True, choices=("mesh", "torus"))
    links.add_argument("--json", action="store_true", help="print one JSON object")
    links.set_defaults(handler=_bgl_links)

    menus = commands.add_parser("menus", help="Slurm torus3d placement menus: candidates "
                                "for a workload, and the Pareto set a sweep measured")
    menu_commands = menus.add_subparsers(dest="menus_command", required=True)
    candidates = menu_commands.add_parser(
        "candidates", help="write the candidate menus of a workload (simcore.tools.menu_search)")
    candidates.add_argument("--workload", required=True, help=describe_choices())
    candidates.add_argument("--jobs", help="jobs to sample from a model")
    candidates.add_argument("--seed", default="0", help="seed of a model's sample")
    candidates.add_argument("--first-jobs", help="workload transform first_jobs")
    candidates.add_argument("--processors-per-unit", default="1",
                            help="workload transform processors_per_unit")
    candidates.add_argument("--torus", required=True, help="the torus, XxYxZ nodes")
    candidates.add_argument("--prefix", required=True, help="name prefix of the menus")
    candidates.add_argument("--out", required=True, help="directory of the menu files")
    memory_flag(candidates)
    candidates.set_defaults(handler=_menus_candidates)
    front = menu_commands.add_parser(
        "pareto", help="utilization vs mean wait of the menus of one experiment, the Pareto "
                       "set and the recommended menu as a topology.yaml fragment")
    front.add_argument("--store", required=True, help="a dataset's store directory")
    front.add_argument("--experiment", required=True)
    front.add_argument("--out", required=True, help="directory of pareto.md and the fragment")
    front.set_defaults(handler=_menus_pareto)

    leung = commands.add_parser("leung2002", help="Leung et al. (2002) analogues: Table 1 "
                                "(a job stream on a Cplant) and Figure 1 (from a store)")
    leung_commands = leung.add_subparsers(dest="leung_command", required=True)
    table1 = leung_commands.add_parser(
        "table1", help="makespan of the paper's test stream under its six strategies, per "
                       "run-time dilation (docs/leung2002.md)")
    table1.add_argument("--dilation", type=float, nargs="+", default=[0, 0.25, 0.5, 1, 2],
                        help="dilation coefficients to sweep (0: run times as given)")
    table1.add_argument("--seeds", type=int, default=10,
                        help="runs per strategy and dilation (seeds 1..N of the run times)")
    table1.add_argument("--out", help="also write table1.md, .csv, the figure and the "
                                      "Hilbert ordering file here")
    table1.add_argument("--json", action="store_true", help="print the rows as JSON")
    table1.add_argument("--max-runs", type=int, default=Limits.max_runs,
                        help="refuse more runs (seeds x dilations x strategies) than this "
                             "(default %(default)s)")
    table1.set_defaults(handler=_leung_table1)
    figure1 = leung_commands.add_parser(
        "figure1", help="locality vs work multiple per ordering x allocator, from the store")
    figure1.add_argument("--store", required=True,
                         help="a dataset's store, e.g. results/torus-sweep-papers/store")
    figure1.add_argument("--experiment", default="leung2002")
    figure1.add_argument("--out", required=True, help="directory of figure1.md, .csv, "
                                                      ".png and .svg")
    figure1.set_defaults(handler=_leung_figure1)

    bench = commands.add_parser("bench", help="measure simulation and partition-search speed")
    bench.add_argument("--trace", help="SDSC-SP2-1998-4.2-cln.swf.gz (default: acquired "
                                       "through the catalogue into resources/traces/)")
    bench.add_argument("--ross", help="Sandia-Ross-2001-1.1-cln.swf.gz for the curve "
                                      "allocators (default: acquired through the catalogue)")
    bench.add_argument("--catalogue", default=str(CATALOGUE))
    bench.add_argument("--repeat", type=int, default=3,
                       help="runs per case (at least 1); the best counts")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--mesh", action="store_true",
                       help="time Chu's 2D-mesh allocators instead: a 50,000-job BL + MQ "
                            "replication and each allocator's time per allocation")
    bench.set_defaults(handler=_bench)
    return parser




def _swf_info(args: argparse.Namespace) -> int:
    from simcore.jobs.describe import describe
    from simcore.jobs.swf import read_swf

    stats = describe(read_swf(args.path))
    if args.json:
        print(json_text(stats))
        return 0
    header = stats["header"]
    print(f"{args.path}")
    for key in ("Computer", "Installation", "StartTime", "EndTime", "MaxNodes", "MaxProcs"):
        if key in header:
            print(f"  {key + ':':<14}{header[key]}")
    print(f"  {'jobs:':<14}{stats['jobs']} ({stats['jobs_clean']} after cleaning)")
    for rule, removed in stats["cleaning_removed"].items():
        print(f"    {rule:<22}{removed:>8} removed")
    days = stats["span_s"] / 86400
    print(f"  {'arrivals:':<14}{stats['first_submit']:.0f} .. {stats['last_submit']:.0f} s"
          f" ({days:.1f} days)")
    load = stats["offered_load"]
    print(f"  {'offered load:':<14}{'n/a' if load is None else f'{load:.3f}'}")
    print("  sizes:        " + "  ".join(f"{k}:{v}" for k, v in stats["size_histogram"].items()))
    print("  run time (s): " + "  ".join(
        f"{k}:{'n/a' if v is None else f'{v:.0f}'}"
        for k, v in stats["runtime_percentiles_s"].items()))
    return 0


def _fetch_trace(args: argparse.Namespace) -> int:
    from simcore.workload.traces import acquire, catalogued, mirror_dirs

    path = acquire(catalogued(args.catalogue, args.name), args.out, mirror_dirs(args.mirror))
    print(f"{path}: sha256 verified")
    return 0


def _convert_trace(args: argparse.Namespace) -> int:
    from simcore.workload.io import convert_trace

    table = convert_trace(args.swf, args.out, json_argument("--cleaning", args.cleaning),
                          args.expect_jobs, args.expect_max_procs, args.expect_sha256)
    print(f"{args.out}: {table.num_rows} jobs")
    return 0


def _run(args: argparse.Namespace) -> int:
    from simcore.base.params import SEED
    from simcore.jobs.cleaning import CleaningOptions
    from simcore.machines.spec import MachineSpec
    from simcore.policy import PolicySpec
    from simcore.report.runs import run_report, write_schedule
    from simcore.simulate import simulate
    from simcore.workload.sources import load_workload, model_machine
    from simcore.workload.synthetic import JOBS
    from simcore.workload.transforms import WorkloadSpec, prepare

    params = dict(key_value(p) for p in args.param)
    for option, name in (("start_delay", "start_delay_s"), ("estimates", "estimates")):
        if getattr(args, option) is not None:
            params[name] = getattr(args, option)
    machine = MachineSpec.parse(
        args.machine or model_machine(args.workload), args.allocator, ordering=args.ordering,
        options=dict(key_value(p, "--machine-param") for p in args.machine_param))
    capabilities = ALLOCATORS[machine.allocator].capabilities
    policy = PolicySpec.from_params(args.scheduler, params).on(capabilities)
    seed = flag_value("--seed", SEED, args.seed)
    jobs = flag_value("--jobs", JOBS, args.jobs)
    cleaning = CleaningOptions.from_mapping(json_argument("--cleaning", args.cleaning))
    spec = WorkloadSpec(**{name: flag_value(flag(name), field.metadata["parameter"], value)
                           for name, field in transforms().items()
                           if (value := getattr(args, name)) is not None})
    check_memory(args, jobs, spec.replication)
    table = load_workload(args.workload, jobs, seed, cleaning=cleaning)
    check_memory(args, spec.span_jobs(table.num_rows), spec.replication)
    if args.jobs_out:
        check_output(args.jobs_out, "--jobs-out")
    bar = _ProgressBar() if sys.stderr.isatty() and not args.json else None
    result = simulate(prepare(table, spec, machine, seed), machine, policy, seed, progress=bar)
    if bar is not None:
        bar.close()
    if args.jobs_out:
        write_schedule(result, args.jobs_out)
    if args.json:
        print(json_text(run_report(result, args.workload, spec)))
        return 0
    s = result.summary
    print(f"{s['jobs']} jobs on {s['machine']} under {policy.describe(capabilities)}")
    print(f"  utilization {s['utilization']:.4f}  unused {s['unused']:.4f}  lost {s['lost']:.4f}")
    print(f"  wait mean {s['mean_wait_s']:.0f} s, median {s['median_wait_s']:.0f} s; "
          f"bounded slowdown mean {s['mean_bsld']:.2f}")
    print(f"  response mean {s['mean_response_s']:.2f} s, sd {s['sd_response_s']:.2f} s over "
          f"{s['measured_jobs']} jobs; busy fraction {s['busy_fraction']:.4f}")
    print(f"  makespan {s['makespan_s']:.0f} s; grown jobs {s['grown_jobs']}; migrations "
          f"{s['migrations_successful']}/{s['migrations_attempted']} successful")
    if "span_ring_mean" in s:
        print(f"  locality: mean span {s['span_ring_mean']:.1f} (linear "
              f"{s['span_linear_mean']:.1f}), bounding cube / smallest "
              f"{s['bcube_ratio_mean']:.2f}, components {s['components_mean']:.2f}, "
              f"hops {s['mean_hops_mean']:.2f}")
    print(f"  kernel compiled or loaded from numba's cache in {result.timing['compile_s']:.3f} s"
          " (not counted below)")
    print(f"  simulated in {result.timing['simulate_s']:.3f} s "
          f"({result.timing['s_per_decision'] * 1e6:.1f} us per decision)"
          + (f", locality measured in {result.timing['metrics_s']:.3f} s"
             if "span_ring_mean" in s else ""))
    return 0


class _ProgressBar:
    """Jobs started and simulated time on a terminal, once a run has taken a few seconds."""

    DELAY_S = 2.0

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.shown = False

    def __call__(self, started: int, jobs: int, simulated_s: float) -> None:
        elapsed = time.perf_counter() - self.began
        if elapsed < self.DELAY_S:
            return
        eta = elapsed * (jobs - started) / started if started else float("nan")
        width = 30
        filled = width * started // max(jobs, 1)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {started}/{jobs} jobs started, "
              f"{simulated_s / 86400:.1f} days simulated, {elapsed:.0f} s, ETA {eta:.0f} s ",
              end="", file=sys.stderr, flush=True)
        self.shown = True

    def close(self) -> None:
        if self.shown:
            print(file=sys.stderr)


def _registry_help() -> str:
    """The machine kinds, allocators and schedulers, for `simcore run --help`: one
    "  name  summary" line each, names padded to the longest so that none runs into its
    summary."""
    width = 2 + max(len(name) for name in (*KINDS, *ALLOCATORS, *ORDERINGS, *SCHEDULERS))
    lines = ["machine kinds:"]
    lines += [f"  {k.name:<{width}}{k.summary} (e.g. {k.example})" for k in KINDS.values()]
    lines.append("allocators (options):")
    lines += [f"  {a.name:<{width}}{', '.join(a.kinds)}: {a.summary}"
              + (f" ({', '.join(p.name for p in a.parameters)})" if a.parameters else "")
              for a in ALLOCATORS.values()]
    lines.append("failure options (any machine; simcore.core.failures): "
                 + ", ".join(p.name for p in FAILURE_OPTIONS))
    lines.append("orderings (curve allocators; or a file of 'index rank' lines):")
    lines += [f"  {o.name:<{width}}{o.summary}" for o in ORDERINGS.values()]
    lines.append("schedulers (parameters):")
    lines += [f"  {r.name:<{width}}{r.summary} ({', '.join(r.parameter_names)})"
              for r in SCHEDULERS.values()]
    return "\n".join(lines)


def _synthesize(args: argparse.Namespace) -> int:
    from simcore.base.params import SEED
    from simcore.workload.io import write_workload
    from simcore.workload.synthetic import JOBS, SyntheticSpec, synthesize

    seed = flag_value("--seed", SEED, args.seed)
    if (args.model is None) == (args.spec is None):
        raise SpecError("synthesize: expected exactly one of MODEL (with --jobs) or --spec")
    if args.spec is not None:
        values = json_argument("--spec", args.spec)
        if not isinstance(values, dict):
            raise SpecError("--spec: expected a JSON object with a 'model' key")
        spec = SyntheticSpec.create(values.pop("model", None), values)
    else:
        spec = SyntheticSpec.parse(args.model, flag_value("--jobs", JOBS, args.jobs))
        if spec is None:
            raise SpecError(f"{args.model!r}: not a model; expected {describe_choices()}")
        spec = SyntheticSpec.create(spec.model, {**dict(spec.params),
                                                 **dict(key_value(p) for p in args.param)})
    check_memory(args, dict(spec.params).get(JOBS.name))
    check_output(args.out, "--out")
    table = synthesize(spec, seed)
    write_workload(table, args.out)
    print(f"{args.out}: {table.num_rows} jobs ({spec}, seed {seed})")
    return 0


def _warm(args: argparse.Namespace) -> int:
    from simcore import NUMBA_CACHE
    from simcore.machines.registry import get_allocator
    from simcore.policy import get_scheduler
    from simcore.sweep.runner import warm_kernels

    began = time.perf_counter()
    pairs = [tuple(p) for p in args.pair] if args.pair else None
    for allocator, scheduler in pairs or []:
        get_allocator(allocator)
        get_scheduler(scheduler)
    if args.jobs < 1:
        raise SpecError(f"--jobs {args.jobs}: expected at least 1")
    warmed = warm_kernels(pairs, args.jobs)
    print(f"kernels: {len(warmed)} engine(s) compiled in {time.perf_counter() - began:.1f} s "
          f"with {args.jobs} process(es) (cache {NUMBA_CACHE})", file=sys.stderr)
    if args.flag:
        Path(args.flag).parent.mkdir(parents=True, exist_ok=True)
        Path(args.flag).touch()
    return 0


def _sweep_shard(args: argparse.Namespace) -> int:
    from simcore.base.atomic import atomic_write_bytes
    from simcore.sweep.experiments import Shard
    from simcore.sweep.runner import run_shard

    dask = json_argument("--dask", args.dask)
    shard = (Shard.fromjson_text(args.spec) if args.spec is not None
             else Shard.unpack(args.spec_packed))
    report = run_shard(shard, args.results, args.workers, dask)
    if args.timing:
        atomic_write_bytes(args.timing, json_text(report.timing(args.workers)).encode())
    return 0


def _tables(args: argparse.Namespace) -> int:
    from simcore.report.tables import write_tables

    if args.store is None and not args.summaries:
        raise SpecError("tables: give --store or --summaries")
    check_store(args.store)
    for path in write_tables(args.store, args.out, args.summaries):
        print(path)
    return 0


def _reproduction(args: argparse.Namespace) -> int:
    from simcore.report.reproduction import write_report

    if args.store is None and not args.summaries:
        raise SpecError("reproduction: give --store or --summaries")
    check_store(args.store)
    write_report(args.published, args.store, args.summaries, args.out, args.figures,
                 args.copy_figures)
    print(args.out)
    return 0


def _figures(args: argparse.Namespace) -> int:
    from simcore.report.plots import write_figures

    for path in write_figures(args.tables, args.out):
        print(path)
    return 0


def _archive_pack(args: argparse.Namespace) -> int:
    from simcore.report.archive import pack_dataset

    print(pack_dataset(args.out, args.results, json_argument("--config-json", args.config_json),
                       name=args.name, summaries=args.summaries))
    return 0


def _archive_verify(args: argparse.Namespace) -> int:
    from simcore.report.archive import verify

    report = verify(args.path)
    if args.json:
        print(json_text(report))
        return 0
    print(f"{args.path}: {report['members']} members, {report['bytes']} bytes, checksums OK")
    for table, rows in report["tables"].items():
        print(f"  {table}: {rows} rows")
    return 0


def _list(args: argparse.Namespace) -> int:
    from simcore.report.listing import listing, outputs_markdown, text

    if args.markdown:
        if args.registry != "columns":
            raise SpecError("--markdown: only for `simcore list columns`")
        print(outputs_markdown(), end="")
        return 0
    registries = listing()
    if args.registry:
        registries = {args.registry: registries[args.registry]}
    if args.json:
        print(json_text(registries))
        return 0
    print("\n\n".join(text(name, rows) for name, rows in registries.items()))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from simcore.sweep.planning import load_plan, summarize_plan

    if args.timing:
        from simcore.sweep.timing import format_report, timing_report

        timing = timing_report(load_plan(args.configfile), args.benchmarks_root)
        print(json_text(timing) if args.json else format_report(timing))
        return 0
    report = summarize_plan(args.configfile, args.results)
    if args.json:
        print(json_text(report))
        return 0
    print(f"{args.configfile}: dataset {report['dataset']}, {report['shards']} shards, "
          f"{report['runs']} runs: {report['cached']} cached, {report['to_simulate']} to "
          f"simulate" + (f", {report['unknown']} whose workload file is not made yet"
                         if report["unknown"] else ""))
    for row in report["experiments"]:
        print(f"  {row['experiment']:<20} {row['shards']:>4} shards {row['runs']:>6} runs "
              f"{row['cached']:>6} cached")
    return 0


def _menus_candidates(args: argparse.Namespace) -> int:
    from simcore.machines.spec import MachineSpec
    from simcore.sweep.experiments import SEED
    from simcore.tools.menu_search import write_workload_candidates
    from simcore.workload.synthetic import JOBS
    from simcore.workload.transforms import WorkloadSpec

    check_name("--prefix", args.prefix)
    machine = MachineSpec.parse(f"torus:{args.torus}")
    if len(machine.dims) != 3:
        raise SpecError(f"--torus {args.torus!r}: expected XxYxZ")
    fields = transforms()
    spec = WorkloadSpec(**{name: flag_value(flag(name), fields[name].metadata["parameter"],
                                             value)
                           for name, value in (("first_jobs", args.first_jobs),
                                               ("processors_per_unit",
                                                args.processors_per_unit))
                           if value is not None}, oversize="drop")
    seed = flag_value("--seed", SEED, args.seed)
    jobs = flag_value("--jobs", JOBS, args.jobs)
    check_memory(args, jobs)
    command = " ".join(["simcore menus candidates", *(
        f"--{option.replace('_', '-')} {value}" for option, value in vars(args).items()
        if option in ("workload", "jobs", "seed", "first_jobs", "processors_per_unit", "torus",
                    "prefix") and value is not None)])
    for path in write_workload_candidates(args.workload, jobs, seed, spec, machine,
                                          args.prefix, args.out, command):
        print(path)
    return 0


def _menus_pareto(args: argparse.Namespace) -> int:
    from simcore.tools.menu_search import write_pareto

    check_store(args.store)
    for path in write_pareto(args.store, args.experiment, args.out):
        print(path)
    return 0


def _bgl_links(args: argparse.Namespace) -> int:
    from simcore.machines.bgl.wiring import link_sets, load_wiring
    from simcore.machines.spec import find_wiring

    path = args.machine if args.machine.endswith(".yaml") else find_wiring(args.machine)
    wiring = load_wiring(path)
    dim = wiring.axes.index(args.dim) if args.dim in wiring.axes else None
    if dim is None and args.dim.isdigit() and int(args.dim) < len(wiring.lines):
        dim = int(args.dim)
    if dim is None:
        raise SpecError(f"--dim {args.dim!r}; expected one of {', '.join(wiring.axes)}")
    try:
        members = frozenset(int(p) for p in args.midplanes.split(","))
    except ValueError:
        raise SpecError(f"--midplanes {args.midplanes!r}; expected positions like 1,2,3") from None
    line = wiring.lines[dim]

    def name(cable: int) -> object:
        label = line.cables[cable].label
        return cable if label is None else label

    sets = [sorted(map(name, s)) for s in link_sets(line, members, args.topology)]
    if args.json:
        print(json_text({"machine": wiring.name, "dim": wiring.axes[dim],
                     "midplanes": sorted(members), "topology": args.topology,
                     "link_sets": sets, "cables": {
                         str(name(i)): f"{c.src}.{c.out_port} -> {c.dst}.{c.in_port}"
                         for i, c in enumerate(line.cables)}}))
        return 0
    print(f"{wiring.name} {wiring.axes[dim]}-line, midplanes {sorted(members)} as a "
          f"{args.topology}: {len(sets)} link set(s), fewest cables first")
    for cables in sets:
        route = ", ".join(f"{name(i)}: {line.cables[i].src}->{line.cables[i].dst}"
                          for i in sorted(range(len(line.cables)), key=name)
                          if name(i) in cables)
        print(f"  {{{', '.join(map(str, cables))}}}  ({route or 'no cable'})")
    return 0


def _leung_table1(args: argparse.Namespace) -> int:
    from simcore.tools.leung2002 import STRATEGIES, markdown_table1, table1_summary

    if args.seeds < 1:
        raise SpecError(f"--seeds {args.seeds}; expected at least 1")
    runs = args.seeds * len(args.dilation) * len(STRATEGIES)
    if runs > args.max_runs:
        raise SpecError(f"--seeds {args.seeds} x --dilation ({len(args.dilation)} values) x "
                        f"{len(STRATEGIES)} strategies: {runs:,} runs, above the limit of "
                        f"{args.max_runs:,}; expected fewer, or a larger --max-runs")
    summary = table1_summary(args.dilation, range(1, args.seeds + 1), args.out)
    print(json_text(summary.to_dicts()) if args.json else markdown_table1(summary))
    return 0


def _leung_figure1(args: argparse.Namespace) -> int:
    from simcore.tools.leung2002 import write_figure1

    check_store(args.store)
    paths, text = write_figure1(args.store, args.experiment, args.out)
    for path in paths:
        print(path)
    print(text)
    return 0


def _bench(args: argparse.Namespace) -> int:
    from simcore.base.atomic import atomic_write_bytes
    from simcore.tools.bench import catalogued_trace, run_bench

    if args.repeat < 1:
        raise SpecError(f"--repeat {args.repeat}; expected at least 1")
    if args.mesh:
        return _bench_mesh(args)
    trace = Path(args.trace) if args.trace is not None else \
        catalogued_trace(args.catalogue, "SDSC-SP2-1998-4.2-cln")
    ross = Path(args.ross) if args.ross is not None else \
        catalogued_trace(args.catalogue, "Sandia-Ross-2001-1.1-cln")
    report = run_bench(trace, repeat=args.repeat, ross=ross)
    print(f"parse {report['parse_s']:.3f} s, start-up (imports + compilation) "
          f"{report['warmup_s']:.1f} s")
    for row in report["simulations"]:
        measured = f" + locality {row['metrics_s']:.4f} s" if "metrics_s" in row else ""
        print(f"  {row['case']:<40} {row['jobs']:>6} jobs {row['simulate_s']:8.4f} s"
              f"{measured} {row['jobs_per_s']:>12,.0f} jobs/s")
        if "decision_ms_median" in row:
            print(f"  {'':<40} decisions: median {row['decision_ms_median']:.3f} ms, p99 "
                  f"{row['decision_ms_p99']:.2f} ms, max {row['decision_ms_max']:.1f} ms")
    print("largest free partition, mean time per call on random 50% occupancies:")
    for row in report["largest_free_partition"]:
        cost = ("n/a: " + row["note"]) if row["s_per_call"] is None else \
            f"{row['s_per_call'] * 1e6:12.1f} us"
        print(f"  {row['dims']:<9} {row['method']:<11} {cost}")
    if args.json:
        atomic_write_bytes(args.json, (json_text(report) + "\n").encode())
    return 0


def _bench_mesh(args: argparse.Namespace) -> int:
    from simcore.base.atomic import atomic_write_bytes
    from simcore.tools.bench import bench_mesh

    report = bench_mesh(repeat=args.repeat)
    print(f"BL + MQ, {report['bl_mq_50k_jobs']} jobs on mesh:32x32 at load 0.7: "
          f"{report['bl_mq_50k_s']:.3f} s")
    rows = report["allocators"]
    sides = sorted({row["side"] for row in rows})
    print("time per allocation (us), replayed on a recorded run (decreasing sizes, load 0.6,"
          " scan-all), mean running jobs N_A in brackets; then by N_A on 32x32 (sides 1..8):")
    print(f"  {'allocator':<10}" + "".join(f"{f'{s}x{s}':>18}" for s in sides))
    for name in dict.fromkeys(row["allocator"] for row in rows):
        cells = {row["side"]: row for row in rows if row["allocator"] == name}
        by = cells.get(32, {}).get("us_by_running", {})
        print(f"  {name:<10}" + "".join(
            f"{cells[s]['us_per_allocation']:10.1f} [{cells[s]['mean_running']:4.1f}]"
            for s in sides) + "   " + "  ".join(f"{k}: {v:.1f}" for k, v in by.items()))
    if args.json:
        atomic_write_bytes(args.json, (json_text(report) + "\n").encode())
    return 0







