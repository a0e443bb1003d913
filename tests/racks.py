"""Placing one job on a machine of racks (`blocks:AxB`) by any of its allocators' kernels,
with chosen nodes busy, for the hand-checked cases of the rack rules."""

from __future__ import annotations

import numpy as np

from simcore.core.state import NOW, QLEN, new_state
from simcore.jobs.jobs import Jobs
from simcore.machines.spec import MachineSpec


def bits_of(nodes, words: int) -> np.ndarray:
    """A bitset holding `nodes`."""
    bits = np.zeros(words, dtype=np.uint64)
    for u in nodes:
        bits[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    return bits


def busy_above(free, block: int) -> list[int]:
    """Busy nodes leaving free[r] free nodes, the lowest ones, in rack r."""
    return [block * r + i for r, f in enumerate(free) for i in range(f, block)]


def place_one(kernel, machine: str, allocator: str, n: int, busy=(), now: float = 0.0,
              **options):
    """The nodes `kernel` (a module's place kernel) gives a queued job of n nodes,
    at time `now`, with `busy` nodes taken (None: it cannot be placed)."""
    spec = MachineSpec.parse(machine, allocator=allocator, options=options)
    m, size, _ = spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [n]))
    st = new_state(1, spec.units, m.words, 1)
    st.ctr[QLEN] = 1
    st.acc[NOW] = now
    bits = bits_of(busy, m.words)
    out = np.zeros(m.words, dtype=np.uint64)
    if kernel(m, st, 0, int(size[0]), bits, 0, bits[:0], out) < 0:
        return None
    return {u for u in range(spec.units) if (int(out[u >> 6]) >> (u & 63)) & 1}


def per_rack(nodes, block: int) -> dict[int, int]:
    """Nodes of a placement per rack, as {rack: count}."""
    out: dict[int, int] = {}
    for u in sorted(nodes):
        out[u // block] = out.get(u // block, 0) + 1
    return out
