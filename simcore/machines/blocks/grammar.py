"""The spec argument of block machines, `blocks:AxB` (A base blocks of B nodes): the kind's
grammar hook, apart from the allocator (`simcore.machines.blocks.allocator`) so that
reading a configuration compiles and loads no kernel."""

from __future__ import annotations

import re

import numpy as np

from simcore.base.errors import SpecError
from simcore.machines.contract import UnitLayout

_ARGUMENT = re.compile(r"\A(\d+)x(\d+)\Z")


def parse_argument(argument: str) -> tuple[int, int]:
    """(base blocks, nodes per base block) of a `blocks:AxB` argument."""
    match = _ARGUMENT.match(argument)
    if not match or min(int(g) for g in match.groups()) < 1:
        raise SpecError(f"{argument!r}: expected AxB, A base blocks of B nodes, e.g. 64x18")
    return int(match.group(1)), int(match.group(2))


def argument_key(argument: str) -> str:
    """The argument names no file."""
    return ""


def unit_layout(argument: str) -> UnitLayout:
    """Node i of base block b (bit b B + i) at (i, b): a base block is a row of nodes, so a
    schedule's pictures show racks as rows; nothing wraps."""
    blocks, block = parse_argument(argument)
    bits = np.arange(blocks * block, dtype=np.int64)
    return UnitLayout((block, blocks), np.stack([bits % block, bits // block], axis=1), False)
