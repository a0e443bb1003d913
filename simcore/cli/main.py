"""The `simcore` command line."""

from __future__ import annotations

import argparse
import gc
import signal
from collections.abc import Sequence

from simcore.cli import inspection, machines, schedules, simulation, studies, sweep, traces
from simcore.cli.common import run_handler

#: The command groups, each adding its commands, in the order `simcore --help` lists them.
GROUPS = (traces, simulation, schedules, sweep, inspection, machines, studies)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand. Bad input (a SimcoreError, a file that cannot be read or written)
    exits with status 2 and one line on stderr; anything else is a bug and shows its
    traceback. SIGTERM unwinds like an error while the command runs, so no temporary file
    is left behind."""
    args = _parser().parse_args(argv)
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simcore", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(commands)
    return parser
