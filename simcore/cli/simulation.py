"""Simulation commands: `run` (one workload on one machine under one policy) and
`synthesize` (a model's sample, the workload of runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
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
    synth = commands.add_parser("synthesize", help="sample a workload model into a .parquet")
    synth.add_argument("model", nargs="?", help="MODEL:ARGUMENT, e.g. lublin:128")
    synth.add_argument("--jobs", help="jobs to sample (with MODEL)")
    synth.add_argument("--spec", metavar="JSON",
                       help="instead of MODEL and its flags: the model and every parameter, "
                            "e.g. '{\"model\": \"lublin\", \"machine_size\": 128, "
                            "\"jobs\": 1000}'")
    synth.add_argument("--param", action="append", default=[], metavar="K=V",
                       help="other model parameters, e.g. job_type=mixed (repeatable)")
    synth.add_argument("--seed", required=True, action="append",
                       help="seed of the sample (an integer >= 0); repeat it for several "
                            "samples, with '{seed}' in --out")
    synth.add_argument("--out", required=True,
                       help="destination .parquet; with several seeds a pattern holding "
                            "'{seed}', whose directories are made")
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
    run.add_argument("--scheduler", required=True, choices=SCHEDULERS)
    run.add_argument("--param", action="append", default=[], metavar="K=V",
                     help="scheduler parameter, e.g. fn_tor=0.1 (repeatable)")
    run.add_argument("--start-delay", help="scheduler parameter start_delay_s")
    run.add_argument("--estimates", help="scheduler parameter estimates")
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
    params = key_values(args.param)
    for option, name in (("start_delay", "start_delay_s"), ("estimates", "estimates")):
        if getattr(args, option) is not None:
            params[name] = getattr(args, option)
    machine = MachineSpec.parse(
        args.machine or model_machine(args.workload), args.allocator, ordering=args.ordering,
        options=key_values(args.machine_param, "--machine-param"))
    capabilities = machine.capabilities
    return machine, PolicySpec.from_params(args.scheduler, params).on(capabilities)


def _print_run(s: dict, timing: dict, policy: str,
               measured: tuple[str, str] | None = None) -> None:
    """A run's summary (`s`) and costs as lines of text; `measured`: what the allocator
    measured from the placements and their values (its `metrics_text`)."""
    print(f"{s['jobs']} jobs on {s['machine']} under {policy}")
    print(f"  utilization {s['utilization']:.4f}  unused {s['unused']:.4f}  lost {s['lost']:.4f}")
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
    from simcore.workload.io import write_workload
    from simcore.workload.synthetic import synthesize

    seeds = [flag_value("--seed", SEED, seed) for seed in args.seed]
    if (args.model is None) == (args.spec is None):
        raise SpecError("synthesize: expected exactly one of MODEL (with --jobs) or --spec")
    spec = _synthetic_spec(args)
    check_memory(args, dict(spec.params).get(JOBS.name))
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

