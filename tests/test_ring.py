"""Slurm's topology/ring rule on racks (`slurm-ring`): the cases of docs/modern.md worked by
hand from the rules, properties of every placement, and the invariants on real traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.jobs.jobs import Jobs
from simcore.machines.blocks.ring import place_ring
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from tests.racks import place_one, trace_run
from tests.reference import check_capacity, check_exclusive


def ring(n, busy=(), machine="blocks:1x16", **options):
    """The nodes the ring rule gives n nodes (None: no run holds them)."""
    nodes = place_one(place_ring, machine, "slurm-ring", n, busy, **options)
    return None if nodes is None else sorted(nodes)


def test_a_job_takes_the_first_free_run_of_the_ring():
    assert ring(5) == [0, 1, 2, 3, 4]
    assert ring(5, busy=[2]) == [3, 4, 5, 6, 7]  # the scan starts again past node 2


def test_a_run_wraps_around_the_end_of_the_ring():
    assert ring(5, busy=range(3, 14)) == [0, 1, 2, 14, 15]


def test_the_ring_of_fewest_free_nodes_wins_ties_to_the_first():
    # two rings of 8: equal free counts, the first ring; fewer free in the second, it
    assert ring(4, busy=[0, 8], machine="blocks:2x8", ring_racks=1) == [1, 2, 3, 4]
    assert ring(4, busy=[0, 9, 10], machine="blocks:2x8", ring_racks=1) == [11, 12, 13, 14]


def test_no_run_long_enough_waits_though_the_nodes_are_free():
    # 8 free nodes in runs of 4: a 5-node job cannot start
    assert ring(5, busy=[4, 5, 6, 7, 12, 13, 14, 15]) is None


def test_segments_go_to_different_rings():
    assert ring(8, machine="blocks:4x4", ring_racks=1, ring_segment=4) == list(range(8))
    assert ring(12, machine="blocks:2x4", ring_racks=1, ring_segment=4) is None


def test_jobs_the_idle_rings_cannot_hold_are_refused_and_counted():
    spec = MachineSpec.parse("blocks:4x4", allocator="slurm-ring",
                             options={"ring_racks": 2, "ring_segment": 4})
    # two rings of 8: 5 nodes are rounded up to 2 segments of 4 (fits); 12 nodes are 3
    # segments, one ring short
    jobs = Jobs.create([1, 2, 3], [0.0] * 3, [10.0] * 3, [10.0] * 3, [5, 12, 3])
    result = simulate(jobs, spec, "backfill")
    assert result.summary["refused_jobs"] == 1
    assert result.jobs.column("alloc_size").to_pylist() == [8, 3]


def test_a_ring_larger_than_the_machine_is_named():
    with pytest.raises(SpecError, match="ring_racks 5; expected at most the machine's 4"):
        spec = MachineSpec.parse("blocks:4x4", allocator="slurm-ring",
                                 options={"ring_racks": 5})
        spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))


def runs_of(nodes, ring_length, units):
    """{ring: sorted positions} of a placement."""
    out: dict[int, list[int]] = {}
    for u in sorted(nodes):
        out.setdefault(u // ring_length, []).append(u % ring_length)
    return out


def contiguous(positions, length) -> bool:
    """Whether positions form one run modulo `length`."""
    gaps = sum(1 for i, p in enumerate(positions)
               if (positions[(i + 1) % len(positions)] - p) % length != 1)
    return len(positions) == length or gaps == 1 or len(positions) == 1


@st.composite
def ring_cases(draw):
    """Racks, rings, an occupancy and a job."""
    racks = draw(st.integers(1, 6))
    block = draw(st.integers(1, 5))
    per = draw(st.integers(0, racks))
    busy = draw(st.sets(st.integers(0, racks * block - 1)))
    n = draw(st.integers(1, racks * block))
    segment = draw(st.sampled_from([0, 0, 1, 2, 3]))
    return racks, block, per, busy, n, segment


@settings(max_examples=300, deadline=None)
@given(ring_cases())
def test_every_run_is_contiguous_modulo_its_ring_in_the_fullest_ring(case):
    racks, block, per, busy, n, segment = case
    units = racks * block
    length = (per or racks) * block
    if segment and n > segment:
        n = -(-n // segment) * segment
        if n > units:
            return
    nodes = ring(n, busy, f"blocks:{racks}x{block}", ring_racks=per, ring_segment=segment)
    if nodes is None:
        return
    assert len(nodes) == n and not set(nodes) & busy
    runs = runs_of(nodes, length, units)
    s = segment if segment and n > segment else n
    assert all(len(p) == s for p in runs.values())  # one run per ring
    for r, positions in runs.items():
        ring_length = min(length, units - r * length)
        assert contiguous(positions, ring_length)
    if len(runs) == 1:  # no ring with a run has fewer free nodes
        chosen = next(iter(runs))
        free = [sum(1 for u in range(r * length, min((r + 1) * length, units))
                    if u not in busy) for r in range(-(-units // length))]
        for r in range(len(free)):
            other = ring(n, busy | set(range(0, r * length)) |
                         set(range((r + 1) * length, units)),
                         f"blocks:{racks}x{block}", ring_racks=per, ring_segment=segment)
            if other is not None and r != chosen:
                assert free[r] > free[chosen] or (free[r] == free[chosen] and r > chosen)


@pytest.mark.parametrize(("trace", "options"), [
    ("SDSC-BLUE-2000-4.2-cln", {"ring_racks": 8, "ring_segment": 16}),
    ("CTC-SP2-1996-3.1-cln", {"down_fraction": 0.02})])
def test_invariants_on_real_traces(trace_excerpt, trace, options):
    spec, jobs, result = trace_run(trace_excerpt(trace), "slurm-ring", options)
    s = result.summary
    assert check_exclusive(result) == len(jobs) - s["refused_jobs"]
    if "down_fraction" not in options:
        check_capacity(result, spec.units)
    length = options.get("ring_racks", 64) * 18
    for row in result.placements.bits():
        nodes = np.flatnonzero(row[:spec.units])
        for positions in runs_of(nodes, length, spec.units).values():
            assert contiguous(positions, length)
