"""The spec argument of cube machines, `cubes:AxBxC:S` (A x B x C cubes of S x S x S chips):
the kind's grammar hook, apart from the allocators (`simcore.machines.cubes.allocator`) so that
reading a configuration compiles and loads no kernel."""

from __future__ import annotations

import re

import numpy as np

from simcore.base.errors import SpecError
from simcore.machines.contract import UnitLayout

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


def unit_layout(argument: str) -> UnitLayout:
    """Cube c (row-major over the grid of cubes) holds bits c*S^3 on, chip (x, y, z) of a
    cube being its bit (x*S + y)*S + z; partitions wrap (the kind's hook)."""
    grid, side = geometry(argument)
    bits = np.arange(int(np.prod(grid)) * side ** 3, dtype=np.int64)
    cube = np.stack(np.unravel_index(bits // side ** 3, grid), axis=1)
    chip = np.stack(np.unravel_index(bits % side ** 3, (side,) * 3), axis=1)
    return UnitLayout(parse_argument(argument), (cube * side + chip).astype(np.int64), True)
