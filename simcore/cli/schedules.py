"""Schedule commands: `export` (a stored run's schedule as files, from its shard's per-job
rows or simulated again) and `show` (pictures of exported schedules)."""

from __future__ import annotations

import argparse
import math
import re

from simcore.base.errors import SpecError
from simcore.cli.common import check_store, key_values
from simcore.sweep.store import PARTITIONS


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the schedule commands to `commands`."""
    export = commands.add_parser(
        "export", help="a stored run's schedule as files (jobs.csv, placements.csv, ...), "
                       "from its shard's per-job rows or simulated again")
    export.add_argument("--store", required=True, help="a dataset's store directory, e.g. "
                                                       "results/torus-sweep-default/store")
    export.add_argument("--run-key", help="the run's key (or a prefix of it)")
    for name in PARTITIONS:
        export.add_argument(f"--{name}", help=f"instead of --run-key: the run's {name} name")
    export.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="with the names: a summary column the run has, e.g. seed=3 "
                             "(repeatable)")
    export.add_argument("--run", type=int, metavar="I",
                        help="with the names: the shard's I-th run (0 first, in the order "
                             "its experiment lists them)")
    export.add_argument("--out", required=True,
                        help="directory of the files: new, empty or a previous export "
                             "(replaced whole, pictures included)")
    export.set_defaults(handler=_export)

    show = commands.add_parser(
        "show", help="pictures of an exported schedule (Gantt chart, snapshots, series, "
                     "by size), or of two side by side")
    show.add_argument("directories", nargs="+", metavar="DIR",
                      help="an export directory (simcore run --export, simcore export); "
                           "a second one is drawn beside it")
    show.add_argument("--out", help="directory of the pictures (default: the first DIR)")
    show.add_argument("--at", action="append", default=[], metavar="T",
                      help="a snapshot at time T after the first arrival, with its unit as "
                           "on the time axes: 90s, 30min, 26h (repeatable; default: moments "
                           "found in the run)")
    show.add_argument("--from", dest="start", metavar="T",
                      help="draw from time T after the first arrival on (as --at)")
    show.add_argument("--until", dest="end", metavar="T",
                      help="draw until time T after the first arrival (as --at)")
    show.set_defaults(handler=_show)


def _export(args: argparse.Namespace) -> int:
    from simcore.schedules.export import check_directory, write_exports
    from simcore.schedules.stored import find_run, stored_schedule

    check_store(args.store)
    given = {name: getattr(args, name) for name in PARTITIONS if getattr(args, name)}
    if args.run_key is not None and (given or args.param or args.run is not None):
        raise SpecError("export: give --run-key, or the run's names with --param or --run, "
                        "not both")
    if args.run_key is None and len(given) < len(PARTITIONS):
        missing = [f"--{name}" for name in PARTITIONS if name not in given]
        raise SpecError(f"export: expected --run-key, or also {', '.join(missing)}")
    out = check_directory(args.out, "--out")
    stored = find_run(args.store, args.run_key, given or None,
                      key_values(args.param), args.run)
    schedule = stored_schedule(stored, args.store)
    paths = write_exports(schedule, out)
    print(f"run {stored.key[:12]}: {len(paths)} files in {out}")
    return 0


def _seconds(option: str, text: str) -> float:
    """A time given as a number and a unit of TIME_UNITS (`26h`), in seconds; a bare
    number is refused, as its unit would be a guess."""
    from simcore.schedules.pictures import TIME_UNITS

    match = re.fullmatch(f"(.+?)({'|'.join(TIME_UNITS)})", text.strip())
    try:
        value = float(match[1]) if match else math.nan
    except ValueError:
        value = math.nan
    if match is None or not math.isfinite(value):
        raise SpecError(f"{option} {text}: expected a finite time with its unit ("
                        f"{', '.join(TIME_UNITS)}), as the time axes show it: e.g. 26h")
    return value * TIME_UNITS[match[2]]


def _show(args: argparse.Namespace) -> int:
    from simcore.schedules.pictures import Window, write_pictures

    if len(args.directories) > 2:
        raise SpecError(f"show: {len(args.directories)} directories; expected one, or two "
                        "side by side")
    at = [_seconds("--at", text) for text in args.at]
    for k, t in enumerate(at):
        if t in at[:k]:
            raise SpecError(f"--at {args.at[k]}: given twice; expected each moment once")
    window = Window(*(None if text is None else _seconds(option, text)
                      for option, text in (("--from", args.start), ("--until", args.end))))
    if window.start is not None and window.end is not None and window.end <= window.start:
        raise SpecError(f"--until {args.end}: not after --from {args.start}; expected a "
                        "window that ends after it starts")
    for path in write_pictures(args.directories, args.out or args.directories[0], at, window):
        print(path)
    return 0
