"""The `simcore` command line."""

from __future__ import annotations

import argparse
import gc
import importlib
import signal
import sys
from collections.abc import Sequence

from simcore.cli.common import run_handler

#: The command groups (modules of simcore.cli, each adding its commands) and their
#: commands, in the order `simcore --help` lists them. A command imports its own group
#: alone, so it pays for no other command's imports.
GROUPS = {
    "traces": ("swf-info", "fetch-trace", "convert-trace"),
    "simulation": ("run", "fidelity", "synthesize"),
    "schedules": ("export", "show"),
    "sweep": ("warm", "sweep-shard", "resimulate", "store", "tables", "reproduction",
              "figures", "archive"),
    "inspection": ("list", "plan"),
    "machines": ("bgl", "menus", "blocks"),
    "studies": ("leung2002", "bench"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand. Bad input (a SimcoreError, a file that cannot be read or written)
    exits with status 2 and one line on stderr; anything else is a bug and shows its
    traceback. SIGTERM unwinds like an error while the command runs, so no temporary file
    is left behind."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser(argv).parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return run_handler(args)
    finally:  # a SIGTERM after the command (at exit) ends the process, not a traceback
        signal.signal(signal.SIGTERM, previous)


def entry() -> int:
    """The `simcore` command: `main`, then the heap frozen, so that the interpreter's exit
    does not walk every object that importing numba and the registries made (0.1 s of a
    short run)."""
    code = main()
    gc.freeze()
    return code


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line's parser: with the commands of the group of the command `argv`
    names first, or of every group (`--help`, or no known command)."""
    parser = argparse.ArgumentParser(prog="simcore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    named = next(iter(argv), None)
    chosen = [g for g, names in GROUPS.items() if named in names] or list(GROUPS)
    for group in chosen:
        importlib.import_module(f"simcore.cli.{group}").add_commands(commands)
    return parser
