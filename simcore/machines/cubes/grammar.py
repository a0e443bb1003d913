"""The spec argument of cube machines, `cubes:AxBxC:S` (A x B x C cubes of S x S x S chips):
the kind's grammar hook, apart from the allocators (`simcore.machines.cubes.allocator`) so that
reading a configuration compiles and loads no kernel."""

from __future__ import annotations

import re

from simcore.base.errors import SpecError

_ARGUMENT = re.compile(r"\A(\d+)x(\d+)x(\d+):(\d+)\Z")


def geometry(argument: str) -> tuple[tuple[int, int, int], int]:
    """((A, B, C) cubes, S) of a `cubes:AxBxC:S` argument."""
    match = _ARGUMENT.match(argument)
    if not match or min(int(g) for g in match.groups()) < 1:
        raise SpecError(f"{argument!r}: expected AxBxC:S, A x B x C cubes of S x S x S chips, "
                        "e.g. 4x4x4:4")
    a, b, c, side = (int(g) for g in match.groups())
    return (a, b, c), side


def parse_argument(argument: str) -> tuple[int, int, int]:
    """The machine's dimensions in chips (the grammar hook of the kind)."""
    grid, side = geometry(argument)
    return grid[0] * side, grid[1] * side, grid[2] * side


def argument_key(argument: str) -> str:
    """The argument names no file."""
    return ""
