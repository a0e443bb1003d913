"""The `simcore` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from simcore.errors import SimcoreError
from simcore.traces import MIRROR_ENV


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand; a SimcoreError exits with status 2 and its message on stderr."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except SimcoreError as exc:
        print(f"simcore: error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simcore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("swf-info", help="header summary and job statistics of an SWF file")
    info.add_argument("path", help="SWF file, plain or .gz")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(handler=_swf_info)

    fetch = commands.add_parser("fetch-trace", help="copy or download a catalogued trace, verified")
    fetch.add_argument("name", help="trace name in the catalogue")
    fetch.add_argument("--catalogue", default="config/traces.yaml")
    fetch.add_argument("--out", required=True, help="destination .swf.gz")
    fetch.add_argument("--mirror", action="append", default=[],
                       help=f"directory searched before downloading (also ${MIRROR_ENV})")
    fetch.set_defaults(handler=_fetch_trace)

    convert = commands.add_parser("convert-trace", help="SWF -> cleaned, typed Parquet")
    convert.add_argument("swf", help="SWF file, plain or .gz")
    convert.add_argument("out", help="destination .parquet")
    convert.add_argument("--cleaning", default="{}", metavar="JSON",
                         help="cleaning options, e.g. '{\"oversize\": \"drop\"}'")
    convert.set_defaults(handler=_convert_trace)
    return parser


def _swf_info(args: argparse.Namespace) -> int:
    from simcore.describe import describe
    from simcore.swf import read_swf

    stats = describe(read_swf(args.path))
    if args.json:
        print(json.dumps(stats, indent=2))
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
        f"{k}:{v:.0f}" for k, v in stats["runtime_percentiles_s"].items()))
    return 0


def _fetch_trace(args: argparse.Namespace) -> int:
    from simcore.errors import TraceError
    from simcore.traces import acquire, load_catalogue, mirror_dirs

    catalogue = load_catalogue(args.catalogue)
    if args.name not in catalogue:
        raise TraceError(
            f"{args.catalogue}: no trace named {args.name!r}; expected one of {sorted(catalogue)}"
        )
    path = acquire(catalogue[args.name], args.out, mirror_dirs(args.mirror))
    print(f"{path}: sha256 verified")
    return 0


def _convert_trace(args: argparse.Namespace) -> int:
    from simcore.workload.io import convert_trace

    table = convert_trace(args.swf, args.out, json.loads(args.cleaning))
    print(f"{args.out}: {table.num_rows} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
