"""Placing one job on a machine of racks (`blocks:AxB`) by any of its allocators' kernels,
with chosen nodes busy, for the hand-checked cases of the rack rules; a trace's run on
64 racks for their invariants."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.core.state import NOW, QLEN, new_state
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference import check_timing


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


def trace_run(path, allocator: str, options, scheduler: str = "backfill"):
    """(spec, jobs, result) of the first 2,000 jobs of the trace at `path` fit to 64 racks
    of 18 nodes at offered load 1, checked for timing and for capacity shares summing
    to 1."""
    spec = MachineSpec.parse("blocks:64x18", allocator=allocator, options=options)
    jobs = prepare(clean(read_swf(path)), WorkloadSpec(first_jobs=2000, fit_to_machine=True,
                                                       offered_load=1.0), spec, seed=1)
    result = simulate(jobs, spec, scheduler, seed=1)
    check_timing(result)
    s = result.summary
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)
    return spec, jobs, result
