"""Commands that say what there is: `list` (the registries and output columns) and `plan`
(the shards and runs of a configuration)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.patterns import RESULTS
from simcore.report.listing import REGISTRIES

#: `simcore list config --markdown`: the configuration's keys (docs/configuration.md).
CONFIG = "config"


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add `list` and `plan` to `commands`."""
    lister = commands.add_parser(
        "list", help="machine kinds, allocators, schedulers, models, transforms, traces, "
                     "output columns, configuration keys")
    lister.add_argument("registry", nargs="?", choices=(*REGISTRIES, CONFIG),
                        help="only this one; config: every key a configuration may hold")
    lister.add_argument("--json", action="store_true", help="print one JSON object")
    lister.add_argument("--markdown", action="store_true",
                        help="with columns: the page docs/outputs.md; with config: the page "
                             "docs/configuration.md")
    lister.set_defaults(handler=_list)

    planner = commands.add_parser(
        "plan", help="the shards and runs a configuration holds, how many are cached, and "
        "where each two-stage plan of seeds stands")
    planner.add_argument("--configfile", required=True, help="a complete configuration")
    planner.add_argument("--results", default=RESULTS, help="results root (run cache)")
    planner.add_argument("--timing", action="store_true",
                         help="what the last run of each shard cost and where its seconds went, "
                              "from its benchmark files")
    planner.add_argument("--benchmarks-root", default=".", metavar="DIR",
                         help="with --timing: the directory holding benchmarks/ (default .)")
    planner.add_argument("--json", action="store_true", help="print one JSON object")
    planner.set_defaults(handler=_plan)


def _list(args: argparse.Namespace) -> int:
    from simcore.report.listing import listing, outputs_markdown, text

    if args.registry == CONFIG:
        if not args.markdown:
            raise SpecError("simcore list config: expected --markdown (the page "
                            "docs/configuration.md)")
        from simcore.report.configuration import config_markdown

        print(config_markdown(), end="")
        return 0
    if args.markdown:
        if args.registry != "columns":
            raise SpecError("--markdown: only for `simcore list columns` and `simcore list "
                            "config`")
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
    from simcore.base.texttable import text_table
    from simcore.sweep.planning import describe_counts, load_plan, summarize_plan

    if args.timing:
        from simcore.sweep.timing import format_report, timing_report

        if not Path(args.benchmarks_root).is_dir():
            raise SpecError(f"--benchmarks-root {args.benchmarks_root}: no such directory; "
                            "expected the directory holding benchmarks/")
        timing = timing_report(load_plan(args.configfile, results=args.results),
                               args.benchmarks_root)
        print(json_text(timing) if args.json else format_report(timing))
        return 0
    report = summarize_plan(args.configfile, args.results)
    for note in report["notes"]:
        print(f"warning: {note}", file=sys.stderr)
    if args.json:
        print(json_text(report))
        return 0
    print(f"{args.configfile}: dataset {report['dataset']}, {describe_counts(report)}")
    print("\n".join(text_table(
        ("experiment", "shards", "runs", "cached"),
        [(r["experiment"], r["shards"], r["runs"], r["cached"]) for r in report["experiments"]],
        indent="  ")))
    for stage in report["stages"]:
        print(f"{stage['experiment']}, seeds planned to decide ({stage['metric']} within "
              f"{stage['relative_half_width']:.1%} at {stage['level']:.0%}, at most "
              f"{stage['max']} seeds):")
        print("\n".join(f"  {line}" for line in stage["lines"]))
    return 0
