"""Study commands: the Leung et al. (2002) analogues (`leung2002 table1`, `leung2002
figure1`) and `bench`, the simulator's measured speed."""

from __future__ import annotations

import argparse
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.patterns import CATALOGUE
from simcore.cli.common import check_store
from simcore.sweep.limits import Limits


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add `leung2002` and `bench` to `commands`."""
    _add_leung2002(commands)
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
    bench.add_argument("--blocks", action="store_true",
                       help="time the rack rules (Slurm's block, tree and ring, Kueue's TAS) on 64 "
                            "racks of 18 nodes instead: "
                            "10,000 SDSC-BLUE jobs, each placement replayed, percentiles")
    bench.add_argument("--blue", help="SDSC-BLUE-2000-4.2-cln.swf.gz for --blocks (default: "
                                      "acquired through the catalogue)")
    bench.set_defaults(handler=_bench)


def _add_leung2002(commands: argparse._SubParsersAction) -> None:
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


def _leung_table1(args: argparse.Namespace) -> int:
    from simcore.tools.leung2002 import STRATEGIES, markdown_table1, table1_summary

    if args.seeds < 1:
        raise SpecError(f"--seeds {args.seeds}; expected at least 1")
    if len(set(args.dilation)) < len(args.dilation):
        raise SpecError(f"--dilation {' '.join(map(str, args.dilation))} names a value twice; "
                        "expected each value once")
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
    from simcore.tools.bench import bench_blocks, bench_mesh, catalogued_trace, run_bench

    if args.repeat < 1:
        raise SpecError(f"--repeat {args.repeat}; expected at least 1")
    if args.mesh and args.blocks:
        raise SpecError("--mesh and --blocks; expected one of them")
    if args.blocks:
        blue = Path(args.blue) if args.blue is not None else \
            catalogued_trace(args.catalogue, "SDSC-BLUE-2000-4.2-cln")
        report: dict[str, object] = {"trace": str(blue), "blocks": bench_blocks(blue)}
        _print_bench_blocks(report)
    elif args.mesh:
        report = bench_mesh(repeat=args.repeat)
        _print_bench_mesh(report)
    else:
        trace = Path(args.trace) if args.trace is not None else \
            catalogued_trace(args.catalogue, "SDSC-SP2-1998-4.2-cln")
        ross = Path(args.ross) if args.ross is not None else \
            catalogued_trace(args.catalogue, "Sandia-Ross-2001-1.1-cln")
        report = run_bench(trace, repeat=args.repeat, ross=ross)
        _print_bench(report)
    if args.json:
        atomic_write_bytes(args.json, (json_text(report) + "\n").encode())
    return 0


def _print_bench(report: dict) -> None:
    """`run_bench`'s report as lines of text."""
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


def _print_bench_blocks(report: dict) -> None:
    """`bench_blocks`' report as lines of text."""
    print("Rack rules, SDSC-BLUE (fit to 1,152 nodes, load 0.9, FCFS): simulation, "
          "then each placement replayed on the run's occupancies")
    for row in report["blocks"]:
        print(f"  {row['case']:<86} {row['jobs']:>6} jobs {row['simulate_s']:7.3f} s; "
              f"placement p50 {row['placement_ms_p50']:.3f} ms, p90 "
              f"{row['placement_ms_p90']:.3f} ms, p99 {row['placement_ms_p99']:.3f} ms, max "
              f"{row['placement_ms_max']:.3f} ms")


def _print_bench_mesh(report: dict) -> None:
    """`bench_mesh`'s report as lines of text."""
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
