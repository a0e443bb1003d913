"""Simulation commands: `run` (one workload on one machine under one policy),
`fidelity` (a trace simulated, each job's start against the one it recorded) and
`synthesize` (a model's sample, the workload of runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.texttable import text_table
from simcore.cli.common import (
    check_memory,
    check_not_input,
    check_output,
    flag,
    flag_value,
    json_argument,
    key_values,
    memory_flag,
)
from simcore.fidelity.compare import FIGURES, REPORT_FILE, REPORT_MD, RESIDUALS_FILE
from simcore.machines.curves.orderings import ORDERINGS
from simcore.machines.curves.orderings import describe_choices as describe_orderings
from simcore.machines.registry import ALLOCATORS, FAILURE_OPTIONS, KINDS
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, PolicySpec
from simcore.workload.sources import describe_choices, model_machine
from simcore.workload.spec import RENAMED, transforms
from simcore.workload.synthetic import JOBS, MODELS, SyntheticSpec


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the simulation commands to `commands`."""
    _add_run(commands)
    _add_fidelity(commands)
    synth = commands.add_parser("synthesize", help="sample a workload model into a .parquet")
    synth.add_argument("model", nargs="?", help="MODEL:ARGUMENT, e.g. lublin:128")
    synth.add_argument("--jobs", help="jobs to sample (with MODEL)")
    synth.add_argument("--spec", metavar="JSON",
                       help="instead of MODEL and its flags: the model and every parameter, "
                            "e.g. '{\"model\": \"lublin\", \"machine_size\": 128, "
                            "\"jobs\": 1000}'")
    synth.add_argument("--param", action="append", default=[], metavar="K=V",
                       help="other model parameters, e.g. job_type=mixed (repeatable)")
    synth.add_argument("--seed", action="append", default=[],
                       help="seed of the sample (an integer >= 0); repeat it for several "
                            "samples, with '{seed}' in --out")
    synth.add_argument("--out",
                       help="destination .parquet; with several seeds a pattern holding "
                            "'{seed}', whose directories are made")
    synth.add_argument("--seeds", metavar="SPANS",
                       help="instead of --seed and --out: seeds as ranges, e.g. 1-1000,2001, "
                            "sampled into --samples")
    synth.add_argument("--samples", metavar="DIR",
                       help="with --seeds: the directory of sample files, many seeds to a "
                            "file (the workflow's workloads/<name>/<variant>)")
    memory_flag(synth)
    synth.set_defaults(handler=_synthesize)


def _add_run(commands: argparse._SubParsersAction) -> None:
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
    _policy_flags(run)
    for name, field in transforms().items():  # the workload transforms, one flag each
        parameter = field.metadata["parameter"]
        former = [flag(RENAMED[name])] if name in RENAMED else []  # still read
        run.add_argument(flag(name), *former, dest=name, metavar=name.upper(),
                         help=f"{parameter.meaning} (default {parameter.default})")
    run.add_argument("--seed", help="seed of the run's random draws (default 0)")
    run.add_argument("--cleaning", metavar="JSON",
                     help="cleaning options of an SWF trace, e.g. '{\"oversize\": \"drop\"}'")
    run.add_argument("--jobs-out", help="write the per-job schedule to this .parquet")
    run.add_argument("--export", metavar="DIR",
                     help="write the schedule (jobs.csv, placements.csv, machine_states.csv, "
                          "schedule.swf, resources.csv, run.json) to this directory: new, "
                          "empty or a previous export (replaced whole); `simcore show DIR` "
                          "draws it")
    memory_flag(run)
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(handler=_run)


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


def _run(args: argparse.Namespace) -> int:
    from simcore.base.params import SEED
    from simcore.base.progress import Progress
    from simcore.jobs.cleaning import CleaningOptions
    from simcore.report.runs import run_report, write_schedule
    from simcore.simulate import simulate
    from simcore.workload.sources import load_workload
    from simcore.workload.transforms import WorkloadSpec, inserted_count, prepare

    machine, policy = _machine_and_policy(args)
    seed = flag_value("--seed", SEED, args.seed)
    jobs = flag_value("--jobs", JOBS, args.jobs)
    cleaning = None if args.cleaning is None else \
        CleaningOptions.from_mapping(json_argument("--cleaning", args.cleaning))
    spec = WorkloadSpec(**{name: flag_value(flag(name), field.metadata["parameter"], value)
                           for name, field in transforms().items()
                           if (value := getattr(args, name)) is not None})
    check_memory(args, jobs, spec.replication)
    table = load_workload(args.workload, jobs, seed, cleaning=cleaning)
    inserted = inserted_count(table, spec.insert_per_h)
    check_memory(args, spec.span_jobs(table.num_rows + inserted), spec.replication,
                 "--jobs with --insert-per-h" if inserted else "--jobs")
    if args.jobs_out:
        check_output(args.jobs_out, "--jobs-out")
        check_not_input(args.jobs_out, "--jobs-out", [args.workload])
    export = _export_directory(args.export, policy)
    work = prepare(table, spec, machine, seed)
    meter = (Progress("simulating", len(work), "jobs started", sys.stderr, delay_s=2.0)
             if sys.stderr.isatty() and not args.json else None)

    def progress(started: int, jobs: int, simulated_s: float) -> None:
        meter.show(started, f", {simulated_s / 86400:.1f} days simulated")

    result = simulate(work, machine, policy, seed, progress=progress if meter else None)
    if meter is not None:
        meter.close()
    if args.jobs_out:
        write_schedule(result, args.jobs_out)
    if export is not None:
        from simcore.schedules.export import Schedule, write_exports

        write_exports(Schedule.of(result, work, machine,
                                  {"source": args.workload, **json.loads(spec.key())}), export)
    if args.json:
        print(json_text(run_report(result, args.workload, spec)))
        return 0
    _print_run(result.summary, result.timing, policy.describe(machine.capabilities),
               machine.implementation.metrics_text(result.summary))
    if export is not None:
        print(f"  schedule exported to {export} (simcore show {export} draws it)")
    return 0


def _export_directory(path: str | None, policy: PolicySpec) -> Path | None:
    """The --export directory (new, empty or a previous export), checked before the run:
    schedules of schedulers that time-share the machine are refused (`time_shared`)."""
    if path is None:
        return None
    from simcore.schedules.export import check_directory, time_shared

    time_shared(policy, "--export")
    return check_directory(path, "--export")


def _machine_and_policy(args: argparse.Namespace) -> tuple[MachineSpec, PolicySpec]:
    """The machine and the policy (on that machine's capabilities) the flags name."""
    machine = MachineSpec.parse(
        args.machine or model_machine(args.workload), args.allocator, ordering=args.ordering,
        options=key_values(args.machine_param, "--machine-param"))
    return machine, _policy(args, machine.capabilities)


def _policy(args: argparse.Namespace, capabilities: frozenset[str]) -> PolicySpec:
    """The policy --scheduler, --param, --start-delay and --estimates name, on a machine
    of `capabilities`."""
    params = key_values(args.param)
    for option, name in (("start_delay", "start_delay_s"), ("estimates", "estimates")):
        if getattr(args, option) is not None:
            params[name] = getattr(args, option)
    return PolicySpec.from_params(args.scheduler, params).on(capabilities)


def _policy_flags(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """Add --scheduler, --param, --start-delay and --estimates, which `_policy` reads."""
    parser.add_argument("--scheduler", required=required, choices=SCHEDULERS)
    parser.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="scheduler parameter, e.g. fn_tor=0.1 (repeatable)")
    parser.add_argument("--start-delay", help="scheduler parameter start_delay_s")
    parser.add_argument("--estimates", help="scheduler parameter estimates")


def _add_fidelity(commands: argparse._SubParsersAction) -> None:
    fidelity = commands.add_parser(
        "fidelity", help="simulate an SWF trace and compare each job's start with the one "
                         "the log recorded (submit + wait)")
    fidelity.add_argument("trace", metavar="TRACE", nargs="?",
                          help="an SWF file (.swf, .swf.gz) whose field 3 holds the waits")
    fidelity.add_argument("--config", metavar="YAML",
                          help="instead of TRACE: replay every trace of this report "
                               "configuration (config/fidelity.yaml) and write --out "
                               f"DIR/{REPORT_MD}")
    fidelity.add_argument("--machine",
                          help="kind:size, e.g. flat:128 (the machine the log came from)")
    _policy_flags(fidelity, required=False)
    fidelity.add_argument("--cleaning", metavar="JSON",
                          help="cleaning options, e.g. '{\"oversize\": \"drop\"}'")
    fidelity.add_argument("--seed", help="seed of the noise floor's shaken arrivals "
                                          "(default 0)")
    fidelity.add_argument("--out", metavar="DIR",
                          help=f"write {RESIDUALS_FILE} (one row per job), {REPORT_FILE} "
                               "and the figures (PNG and SVG) to this directory (made if "
                               "missing)")
    memory_flag(fidelity)
    fidelity.add_argument("--json", action="store_true", help="print one JSON object")
    fidelity.set_defaults(handler=_fidelity)


def _fidelity(args: argparse.Namespace) -> int:
    if (args.trace is None) == (args.config is None):
        raise SpecError("fidelity: expected exactly one of TRACE (with --machine and "
                        "--scheduler) or --config (with --out)")
    if args.config is not None:
        return _fidelity_report(args)
    for option, value in (("--machine", args.machine), ("--scheduler", args.scheduler)):
        if value is None:
            raise SpecError(f"fidelity TRACE: {option} is required")
    from simcore.base.params import SEED
    from simcore.fidelity.replay import check_fits, replay
    from simcore.jobs.cleaning import CleaningOptions, clean
    from simcore.jobs.swf import read_swf

    machine = MachineSpec.parse(args.machine)
    policy = _policy(args, machine.capabilities)
    if policy.implementation.engine:
        raise SpecError(f"--scheduler {policy.scheduler}: time-shares the machine, and its "
                        "jobs need a BSP model that no log records; expected a space-sharing "
                        "scheduler")
    cleaning = None if args.cleaning is None else \
        CleaningOptions.from_mapping(json_argument("--cleaning", args.cleaning))
    seed = flag_value("--seed", SEED, args.seed)
    out = None if args.out is None else _out_directory(args.out)
    log = clean(read_swf(args.trace), cleaning)
    check_memory(args, log.num_rows, option=f"TRACE {args.trace}")
    check_fits(log, machine, f"--machine {machine}", f", or --cleaning '{{\"oversize\": "
               f"\"drop\", \"max_procs\": {machine.units}}}'")
    found = replay(log, machine, policy, seed)
    report = {"trace": args.trace, "machine": str(machine),
              "policy": policy.describe(machine.capabilities), **found.fidelity.report,
              "noise_floor": found.noise_floor}
    if out is not None:
        import pyarrow.parquet as pq

        from simcore.base.atomic import atomic_path, atomic_write_bytes
        from simcore.report.fidelity_figures import write_fidelity_figures

        residuals = found.fidelity.residuals
        with atomic_path(out / RESIDUALS_FILE) as tmp:
            pq.write_table(residuals, tmp, compression="zstd")
        atomic_write_bytes(out / REPORT_FILE, (json_text(report) + "\n").encode())
        write_fidelity_figures(residuals, out, Path(args.trace).name, str(machine),
                               report["policy"])
    if args.json:
        print(json_text(report))
        return 0
    _print_fidelity(report)
    if out is not None:
        print(f"  {RESIDUALS_FILE}, {REPORT_FILE} and the figures {', '.join(FIGURES)} "
              f"(.png, .svg) written to {out}")
    return 0


def _fidelity_report(args: argparse.Namespace) -> int:
    """`fidelity --config`: the report of a configuration, written to --out."""
    from simcore.report.fidelity import FidelityConfig, write_report

    given = [option for option, value in (
        ("--machine", args.machine), ("--scheduler", args.scheduler), ("--param", args.param),
        ("--start-delay", args.start_delay), ("--estimates", args.estimates),
        ("--cleaning", args.cleaning), ("--seed", args.seed), ("--json", args.json)) if value]
    if given:
        raise SpecError(f"fidelity --config: {', '.join(given)} not taken: the configuration "
                        "sets the machines, policies and seed; expected --config and --out "
                        "alone")
    if args.out is None:
        raise SpecError("fidelity --config: --out DIR is required (the report's directory)")
    out = _out_directory(args.out)
    config = FidelityConfig.read(args.config)
    out.mkdir(exist_ok=True)
    command = f"simcore fidelity --config {args.config} --out {args.out}"
    print(f"{write_report(config, out, command)} written")
    return 0


def _out_directory(path: str) -> Path:
    """The --out directory, checked before the run: a directory, or a new name in one."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise SpecError(f"--out {path}: is a file; expected a directory")
    if not target.parent.is_dir():
        raise SpecError(f"--out {path}: directory {target.parent} does not exist; expected "
                        "a directory, or a new one in an existing directory")
    return target


def _print_fidelity(report: dict) -> None:
    """The report of `fidelity` as a few lines and one table: all jobs, the halves, and
    the jobs of each size class, month and queue (users are in --json), and the noise
    floor."""
    from simcore.fidelity.noise import SHAKE_S
    from simcore.report.fidelity import METRIC_HEADER, metric_cells

    counts = report["counts"]
    removed = ", ".join(f"{rule} {n}" for rule, n in counts["cleaning_removed"].items() if n)
    print(f"{report['trace']}: {counts['log_jobs']} jobs in the log; cleaning removed "
          f"{sum(counts['cleaning_removed'].values())}" + (f" ({removed})" if removed else "")
          + f"; unknown wait {counts['unknown_wait']}; not simulated "
          f"{counts['not_simulated']}; compared {counts['compared']}")
    print(f"  simulated on {report['machine']} under {report['policy']}; months: "
          f"{report['month_origin']}")
    rows = [("all", report["all"]), ("first half", report["first_half"]),
            ("second half", report["second_half"])]
    for group, name in (("by_size", "size"), ("by_month", "month"), ("by_queue", "queue")):
        rows += [(f"{name} {key}", values) for key, values in report[group].items()]
    header = ("group", *METRIC_HEADER)
    for line in text_table(header, [(label, *metric_cells(v)) for label, v in rows], "  "):
        print(line)
    print(f"  users: {len(report['by_user'])}, each in --json and {REPORT_FILE}")
    print(f"  noise floor: the same replay with arrivals shaken by up to {SHAKE_S:g} s, and "
          "with ties of submit time queued the other way, against the replay itself:")
    rows = [(f"{name.replace('_', ' ')}, {part.replace('_', ' ')}", values)
            for name, parts in report["noise_floor"].items() for part, values in parts.items()]
    for line in text_table(header, [(label, *metric_cells(v)) for label, v in rows], "  "):
        print(line)


def _print_run(s: dict, timing: dict, policy: str,
               measured: tuple[str, str] | None = None) -> None:
    """A run's summary (`s`) and costs as lines of text; `measured`: what the allocator
    measured from the placements and their values (its `metrics_text`)."""
    print(f"{s['jobs']} jobs on {s['machine']} under {policy}")
    print(f"  utilization {s['utilization']:.4f}  unused {s['unused']:.4f}  lost {s['lost']:.4f}"
          + (f"  failed {s['failed']:.4f}" if s.get("failed") else "")
          + (f"; {s['refused_jobs']} jobs refused" if s.get("refused_jobs") else ""))
    print(f"  wait mean {s['mean_wait_s']:.0f} s, median {s['median_wait_s']:.0f} s; "
          f"bounded slowdown mean {s['mean_bsld']:.2f}")
    chu = "" if s.get("sd_response_s") is None else (  # the time-sharing engine has none
        f", sd {s['sd_response_s']:.2f} s over {s['measured_jobs']} jobs; busy fraction "
        f"{s['busy_fraction']:.4f}")
    print(f"  response mean {s['mean_response_s']:.2f} s{chu}")
    print(f"  makespan {s['makespan_s']:.0f} s; grown jobs {s['grown_jobs']}; migrations "
          f"{s['migrations_successful']}/{s['migrations_attempted']} successful")
    if measured is not None:
        print(f"  {measured[0]}: {measured[1]}")
    print(f"  kernel compiled or loaded from numba's cache in {timing['compile_s']:.3f} s"
          " (not counted below)")
    print(f"  simulated in {timing['simulate_s']:.3f} s "
          f"({timing['s_per_decision'] * 1e6:.1f} us per decision)"
          + (f", {measured[0]} measured in {timing['metrics_s']:.3f} s"
             if measured is not None else ""))


def _synthesize(args: argparse.Namespace) -> int:
    from simcore.base.params import SEED
    from simcore.sweep.samples import parse_spans, seed_spans, write_samples
    from simcore.workload.io import write_workload
    from simcore.workload.synthetic import synthesize

    if (args.model is None) == (args.spec is None):
        raise SpecError("synthesize: expected exactly one of MODEL (with --jobs) or --spec")
    if (args.seeds is None) == (not args.seed) or (args.seeds is None) != (args.samples is None) \
            or (args.seeds is None) == (args.out is None):
        raise SpecError("synthesize: expected --seed with --out, or --seeds with --samples")
    spec = _synthetic_spec(args)
    check_memory(args, dict(spec.params).get(JOBS.name))
    if args.seeds is not None:
        try:
            seeds = [SEED.convert(seed) for seed in parse_spans(args.seeds)]
        except (ValueError, SpecError) as exc:
            raise SpecError(f"--seeds {args.seeds!r}: {exc}") from None
        if Path(args.samples).exists() and not Path(args.samples).is_dir():
            raise SpecError(f"--samples {args.samples}: is a file; expected a directory")
        for path, group in write_samples(spec, seeds, args.samples).items():
            print(f"{path}: seeds {seed_spans(group)} ({spec})")
        return 0
    seeds = [flag_value("--seed", SEED, seed) for seed in args.seed]
    outputs = _sample_paths(args.out, seeds)
    for seed, out in outputs.items():
        table = synthesize(spec, seed)
        write_workload(table, out)
        print(f"{out}: {table.num_rows} jobs ({spec}, seed {seed})")
    return 0


def _sample_paths(out: str, seeds: list[int]) -> dict[int, str]:
    """Each seed's destination: --out itself for one seed, else --out's '{seed}' filled in
    (its directories made)."""
    if "{seed}" not in out:
        if len(seeds) > 1:
            raise SpecError(f"--out {out}: several seeds need '{{seed}}' in the path")
        check_output(out, "--out")
        return {seeds[0]: out}
    if len(set(seeds)) < len(seeds):
        raise SpecError(f"--seed: {seeds} repeats a seed")
    paths = {seed: out.replace("{seed}", str(seed)) for seed in seeds}
    for path in paths.values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        check_output(path, "--out")
    return paths


def _synthetic_spec(args: argparse.Namespace) -> SyntheticSpec:
    """The model and parameters of `synthesize`: --spec, or MODEL with --jobs and
    --param."""
    if args.spec is not None:
        values = json_argument("--spec", args.spec)
        return SyntheticSpec.create(values.pop("model", None), values)
    spec = SyntheticSpec.parse(args.model, flag_value("--jobs", JOBS, args.jobs))
    if spec is None:
        raise SpecError(f"{args.model!r}: not a model; expected {describe_choices()}")
    given = dict(spec.params)
    params = key_values(args.param)
    for name in sorted(params.keys() & {MODELS[spec.model].parameters[0].name, JOBS.name}):
        raise SpecError(f"--param {name}={params[name]}: {name} is set by {args.model!r} or "
                        f"--jobs already ({given.get(name)}); expected it once")
    return SyntheticSpec.create(spec.model, {**given, **params})

