"""The analytic capacity model of a block machine under node unavailability.

A base block of B nodes, each unavailable independently with probability u, has X ~
Binomial(B, 1 - u) nodes in service. Jobs split into segments of s nodes, each segment
inside one base block, can use at most s x floor(X / s) of them, so the usable share of
the machine is E[s floor(X / s)] / B (`usable_capacity`). The realised counterpart for one
down set is the sum over base blocks of s x floor(X_b / s), over all the nodes
(`realised_capacity`): what a saturated stream of such jobs keeps busy at most.
"""

from __future__ import annotations

from math import comb

import numpy as np


def usable_capacity(block: int, segment: int, unavailability: float) -> float:
    """E[s floor(X / s)] / B for X ~ Binomial(B, 1 - u): the share of a base block of
    `block` nodes that jobs of `segment`-node segments can use (exact)."""
    if not (1 <= segment <= block and 0.0 <= unavailability <= 1.0):
        raise ValueError(f"segment {segment} of a block of {block}, unavailability "
                         f"{unavailability}; expected 1 <= segment <= block, 0 <= u <= 1")
    up = 1.0 - unavailability
    expected = sum(comb(block, x) * up ** x * unavailability ** (block - x)
                   * segment * (x // segment) for x in range(block + 1))
    return expected / block


def realised_capacity(in_service: np.ndarray, segment: int, nodes: int) -> float:
    """sum_b s floor(X_b / s) / nodes: the share of a machine of `nodes` nodes that jobs of
    `segment`-node segments can use when base block b has in_service[b] nodes in service."""
    return float((segment * (np.asarray(in_service) // segment)).sum()) / nodes


def capacity_table(block: int, segments: tuple[int, ...],
                   unavailability: tuple[float, ...]) -> str:
    """`usable_capacity` as a Markdown table: one row per unavailability, one column per
    segment size, in percent of the nodes."""
    head = "| unavailable | " + " | ".join(f"s = {s}" for s in segments) + " |"
    rule = "|---:|" + "---:|" * len(segments)
    rows = [f"| {100 * u:g}% | " + " | ".join(
        f"{100 * usable_capacity(block, s, u):.1f}%" for s in segments) + " |"
        for u in unavailability]
    return "\n".join([head, rule, *rows])
