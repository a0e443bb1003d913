"""Machine commands: `bgl links` (a wired machine's link sets), `menus` (Slurm torus3d
placement menus: candidates for a workload, the Pareto set a sweep measured) and `blocks`
(the analytic capacity model of a block machine, the GPU-rack study's tables and figures)."""

from __future__ import annotations

import argparse
from typing import Any

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.cli.common import (
    check_memory,
    check_name,
    check_store,
    flag,
    flag_value,
    memory_flag,
)
from simcore.workload.sources import describe_choices
from simcore.workload.spec import transforms


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add `bgl`, `menus` and `blocks` to `commands`."""
    bgl = commands.add_parser("bgl", help="inspect a wired machine (BG/L) description")
    bgl_commands = bgl.add_subparsers(dest="bgl_command", required=True)
    links = bgl_commands.add_parser("links", help="link sets connecting midplanes of one line")
    links.add_argument("--machine", default="bgl", help="machine description name or .yaml")
    links.add_argument("--dim", required=True, help="dimension: x, y, z (or 0, 1, 2)")
    links.add_argument("--midplanes", required=True, help="positions along the line, e.g. 1,2,3")
    links.add_argument("--topology", required=True, choices=("mesh", "torus"))
    links.add_argument("--json", action="store_true", help="print one JSON object")
    links.set_defaults(handler=_bgl_links)
    _add_menus(commands)
    blocks = commands.add_parser("blocks", help="block machines (Slurm topology/block)")
    blocks_commands = blocks.add_subparsers(dest="blocks_command", required=True)
    capacity = blocks_commands.add_parser(
        "capacity", help="the analytic model: the share of a base block jobs of s-node "
                         "segments can use, E[s floor(X / s)] / B, X ~ Binomial(B, 1 - u), "
                         "as a Markdown table")
    capacity.add_argument("--block", type=int, default=18, help="nodes per base block B")
    capacity.add_argument("--segments", default="1,4,9,16,18", help="segment sizes s")
    capacity.add_argument("--unavailability", default="0,1,2,3,4,5,6,7,8,9,10",
                          help="node unavailability u, in percent")
    capacity.set_defaults(handler=_blocks_capacity)
    study = blocks_commands.add_parser(
        "study", help="the GPU-rack study's tables and figures (experiments modern-gpu, "
                      "modern-gpu-dilation and modern-gpu-placement of a store)")
    study.add_argument("--store", required=True, help="a dataset's store directory")
    study.add_argument("--out", required=True, help="directory of study.md, placement.md, "
                                                    "their .csv and the figures")
    study.set_defaults(handler=_blocks_study)


def _add_menus(commands: argparse._SubParsersAction) -> None:
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


def _bgl_links(args: argparse.Namespace) -> int:
    from simcore.machines.bgl.wiring import link_sets, load_wiring
    from simcore.machines.spec import find_wiring

    wiring = load_wiring(args.machine if args.machine.endswith(".yaml")
                         else find_wiring(args.machine))
    dim = wiring.axes.index(args.dim) if args.dim in wiring.axes else None
    if dim is None and args.dim.isdigit() and int(args.dim) < len(wiring.lines):
        dim = int(args.dim)
    if dim is None:
        raise SpecError(f"--dim {args.dim!r}; expected one of {', '.join(wiring.axes)}")
    try:
        positions = [int(p) for p in args.midplanes.split(",")]
    except ValueError:
        raise SpecError(f"--midplanes {args.midplanes!r}; expected positions like 1,2,3") from None
    members = frozenset(positions)
    if len(members) < len(positions):
        raise SpecError(f"--midplanes {args.midplanes[:80]!r} names a position twice; expected "
                        "each position once")
    line = wiring.lines[dim]

    def name(cable: int) -> int | str:
        label = line.cables[cable].label
        return cable if label is None else label

    def order(cable: int) -> tuple[bool, int, str]:
        """Cables by name, the numbers before the strings."""
        value = name(cable)
        return (False, value, "") if isinstance(value, int) else (True, 0, value)

    sets = [[name(c) for c in sorted(s, key=order)]
            for s in link_sets(line, members, args.topology)]
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
                          for i in sorted(range(len(line.cables)), key=order)
                          if name(i) in cables)
        print(f"  {{{', '.join(map(str, cables))}}}  ({route or 'no cable'})")
    return 0


def _menus_candidates(args: argparse.Namespace) -> int:
    from simcore.machines.spec import MachineSpec
    from simcore.sweep.experiments import SEED
    from simcore.tools.menu_search import write_workload_candidates
    from simcore.workload.spec import WorkloadSpec
    from simcore.workload.synthetic import JOBS

    check_name("--prefix", args.prefix)
    machine = MachineSpec.parse(f"torus:{args.torus}")
    if len(machine.dims) != 3:
        raise SpecError(f"--torus {args.torus!r}: expected XxYxZ")
    fields = transforms()
    given: dict[str, Any] = {  # values their parameters converted and checked
        name: flag_value(flag(name), fields[name].metadata["parameter"], value)
        for name, value in (("first_jobs", args.first_jobs),
                            ("processors_per_unit", args.processors_per_unit))
        if value is not None}
    spec = WorkloadSpec(**given, machine_fit="drop")
    seed = flag_value("--seed", SEED, args.seed)
    jobs = flag_value("--jobs", JOBS, args.jobs)
    assert isinstance(seed, int) and isinstance(jobs, int | None)  # integer parameters
    check_memory(args, jobs)
    command = " ".join(["simcore menus candidates", *(
        f"--{option.replace('_', '-')} {value}" for option, value in vars(args).items()
        if option in ("workload", "jobs", "seed", "first_jobs", "processors_per_unit",
                      "torus", "prefix") and value is not None)])
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


def _blocks_capacity(args: argparse.Namespace) -> int:
    from simcore.tools.block_capacity import capacity_table

    def numbers(option: str, text: str, kind: type) -> tuple:
        try:
            return tuple(kind(v) for v in text.split(","))
        except ValueError:
            raise SpecError(f"{option} {text!r}; expected numbers separated by commas") from None

    segments = numbers("--segments", args.segments, int)
    percent = numbers("--unavailability", args.unavailability, float)
    if args.block < 1 or not all(1 <= s <= args.block for s in segments):
        raise SpecError(f"--block {args.block} --segments {args.segments}; expected "
                        "1 <= s <= B for every segment")
    if not all(0 <= u <= 100 for u in percent):
        raise SpecError(f"--unavailability {args.unavailability}; expected percents 0..100")
    print(capacity_table(args.block, segments, tuple(u / 100 for u in percent)))
    return 0


def _blocks_study(args: argparse.Namespace) -> int:
    from simcore.sweep.store import read_summaries
    from simcore.tools.gpu_placement import EXPERIMENT, write_placement
    from simcore.tools.gpu_racks import EXPERIMENTS, write_study

    check_store(args.store)
    summaries = read_summaries(args.store)
    files = write_study(summaries, args.out) + write_placement(summaries, args.out)
    if not files:
        raise SpecError(f"{args.store}: no runs of {', '.join((*EXPERIMENTS, EXPERIMENT))}")
    for path in files:
        print(path)
    return 0
