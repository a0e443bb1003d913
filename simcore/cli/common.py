"""What the command groups share: a handler run with the command line's error handling,
conversions and checks of argument values, and the memory limit."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from simcore.base.errors import SimcoreError, SpecError
from simcore.base.params import Parameter
from simcore.base.patterns import NAME_RULE, is_name
from simcore.sweep.limits import BYTES_PER_JOB, Limits, check_run_memory


def run_handler(args: argparse.Namespace) -> int:
    """Run the parsed command's handler. Bad input (a SimcoreError, a file that cannot be
    read or written) exits with status 2 and one line on stderr; anything else is a bug
    and shows its traceback."""
    try:
        return int(args.handler(args) or 0)
    except SimcoreError as exc:
        print(f"simcore: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (simcore list | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a missing or unreadable file named on the command line
        if exc.strerror is None and isinstance(exc, FileNotFoundError):  # raised by a library
            print(f"simcore: error: {exc}: no such file", file=sys.stderr)  # with the path alone
            return 2
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"simcore: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def json_argument(option: str, text: str) -> dict:
    """A JSON object given on the command line; a SpecError names the option otherwise,
    also for a key given twice in one object (plain JSON keeps the last value)."""
    def pairs(items: list[tuple[str, object]]) -> dict:
        value: dict = {}
        for key, item in items:
            if key in value:
                raise SpecError(f"{option}: key {key!r} given twice in {text[:80]!r}; "
                                "expected each key once")
            value[key] = item
        return value

    try:
        value = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{option}: not JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise SpecError(f"{option}: expected a JSON object, got {text[:80]!r}")
    return value


def flag(name: str) -> str:
    """The command-line flag of a parameter: start_delay_s -> --start-delay-s."""
    return "--" + name.replace("_", "-")


def flag_value(option: str, parameter: Parameter, text: str | None) -> object:
    """`text` given for `option`, converted and checked by `parameter` (its default if
    None)."""
    if text is None:
        return parameter.default
    try:
        return parameter.convert(text)
    except SpecError as exc:
        raise SpecError(f"{option}: {exc}") from None


def key_value(text: str, option: str = "--param") -> tuple[str, str]:
    """A KEY=VALUE argument of `option`, both sides stripped."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SpecError(f"{option} {text!r}; expected KEY=VALUE, e.g. fn_tor=0.1")
    return key.strip(), value.strip()


def key_values(texts: list[str], option: str = "--param") -> dict[str, str]:
    """The KEY=VALUE arguments of a repeatable `option`; a key given twice is refused
    rather than the last value silently kept."""
    pairs: dict[str, str] = {}
    for text in texts:
        key, value = key_value(text, option)
        if key in pairs:
            raise SpecError(f"{option} {text!r}: {key} given twice ({key}={pairs[key]} "
                            "before); expected each KEY once")
        pairs[key] = value
    return pairs


def check_name(option: str, name: object) -> None:
    """A name that becomes a file or directory name: one path component, matched whole."""
    if not is_name(name):
        raise SpecError(f"{option} {name!r}: expected a name of {NAME_RULE} (no '/' or '..')")


def check_finite(option: str, value: float, minimum: float = -math.inf) -> None:
    """A number given for `option` must be finite and above `minimum` (NaN compares false
    with every bound, so it would switch a check off silently)."""
    if not math.isfinite(value) or value <= minimum:
        bound = "" if minimum == -math.inf else f" above {minimum:g}"
        raise SpecError(f"{option} {value}; expected a finite number{bound}")


def check_store(store: str | None) -> None:
    """A --store given must be a directory: a missing one would read as an empty store."""
    if store is not None and not Path(store).is_dir():
        raise SpecError(f"--store {store}: no such directory; expected a dataset's store, "
                        "e.g. results/torus-sweep-default/store")


def check_workers(workers: int) -> None:
    """--workers must be at least 1 (checked before any work, not when a run needs one)."""
    if workers < 1:
        raise SpecError(f"--workers {workers}; expected at least 1")


def check_output(path: str, option: str) -> None:
    """An output file must be a file in an existing directory (nothing is created around
    it)."""
    target = Path(path)
    if target.is_dir():
        raise SpecError(f"{option} {path}: is a directory; expected a file name")
    if not target.parent.is_dir():
        raise SpecError(f"{option} {path}: directory {target.parent} does not exist")


def check_not_input(path: str, option: str, inputs: list[str]) -> None:
    """An output must not be a file the command reads: writing it would replace the input
    (a trace converted onto itself, a workload overwritten by its own schedule)."""
    target = Path(path)
    for each in inputs:
        if target.exists() and Path(each).exists() and target.samefile(each):
            raise SpecError(f"{option} {path}: the file {each} this command reads; expected "
                            "another file name")


def memory_flag(parser: argparse.ArgumentParser) -> None:
    """Add --max-memory-gib, the limit `check_memory` applies."""
    parser.add_argument("--max-memory-gib", type=float, default=Limits.max_run_memory_gib,
                        metavar="GIB", help="refuse a run whose estimated memory "
                        f"({BYTES_PER_JOB} bytes per job) is above this (default %(default)s)")


def check_memory(args: argparse.Namespace, jobs: int | None, copies: int = 1,
                 option: str = "--jobs") -> None:
    """Refuse, before it is made, a workload of `jobs` x `copies` jobs above --max-memory-gib
    (`simcore.sweep.limits`); `option` names what set the count."""
    check_finite("--max-memory-gib", args.max_memory_gib, minimum=0)
    if jobs is not None:
        check_run_memory(jobs * copies, args.max_memory_gib, option if copies == 1 else
                         f"{option} x --replication {copies}",
                         f"a larger --max-memory-gib (now {args.max_memory_gib:g})")
