"""Trace commands: `swf-info`, `fetch-trace`, `convert-trace`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.patterns import CATALOGUE
from simcore.cli.common import check_not_input, json_argument
from simcore.workload.traces import MIRROR_ENV


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the trace commands to `commands`."""
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


def _swf_info(args: argparse.Namespace) -> int:
    from simcore.jobs.describe import describe
    from simcore.jobs.swf import read_swf

    stats: dict[str, Any] = describe(read_swf(args.path))  # JSON values by name
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

    for mirror in args.mirror:
        if not Path(mirror).is_dir():
            raise SpecError(f"--mirror {mirror}: no such directory; expected a directory of "
                            "traces")
    path = acquire(catalogued(args.catalogue, args.name), args.out, mirror_dirs(args.mirror))
    print(f"{path}: sha256 verified")
    return 0


def _convert_trace(args: argparse.Namespace) -> int:
    from simcore.workload.io import convert_trace

    check_not_input(args.out, "out", [args.swf])
    table = convert_trace(args.swf, args.out, json_argument("--cleaning", args.cleaning),
                          args.expect_jobs, args.expect_max_procs, args.expect_sha256)
    print(f"{args.out}: {table.num_rows} jobs")
    return 0
