"""Slurm host lists (`node[01-32]`, `rack[1-2]-n[1,3-4]`, `a,b`) expanded to node names.

Items are separated by commas outside brackets; each bracket holds comma-separated
numbers and ranges `lo-hi`, zero-padded to the width of `lo` as written; several brackets
in one item expand as their product, the last varying fastest (as Slurm does).
"""

from __future__ import annotations

import itertools
import re

from simcore.base.errors import SpecError

_RANGE = re.compile(r"\A(\d+)(?:-(\d+))?\Z")


def expand(text: str) -> list[str]:
    """Every node name of a host list, in order; a SpecError says what is malformed."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"host list {text!r}: expected names such as node[01-32]")
    names = []
    for item in _items(text.strip()):
        parts: list[list[str]] = []
        rest = item
        while rest:
            if rest[0] == "[":
                close = rest.find("]")
                if close < 0:
                    raise SpecError(f"host list {text!r}: unclosed '['")
                parts.append(_numbers(rest[1:close], text))
                rest = rest[close + 1:]
            else:
                cut = rest.find("[")
                literal = rest if cut < 0 else rest[:cut]
                if "]" in literal:
                    raise SpecError(f"host list {text!r}: unmatched ']'")
                parts.append([literal])
                rest = "" if cut < 0 else rest[cut:]
        names.extend("".join(p) for p in itertools.product(*parts))
    return names


def _items(text: str) -> list[str]:
    """The comma-separated items of a host list, commas inside brackets kept."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    if any(not item for item in items):
        raise SpecError(f"host list {text!r}: an empty name")
    return items


def _numbers(inside: str, text: str) -> list[str]:
    """The numbers of one bracket, each padded to the width of its range's start."""
    out = []
    for piece in inside.split(","):
        match = _RANGE.match(piece.strip())
        if not match:
            raise SpecError(f"host list {text!r}: [{inside}]; expected numbers and ranges "
                            "such as 01-32,40")
        lo, hi = match.group(1), match.group(2) or match.group(1)
        if int(hi) < int(lo):
            raise SpecError(f"host list {text!r}: range {piece} runs backwards")
        out.extend(str(v).zfill(len(lo)) for v in range(int(lo), int(hi) + 1))
    return out
