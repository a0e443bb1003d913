"""Kueue's topology-aware scheduling on racks (`kueue-tas`): the cases of docs/modern.md
worked by hand from the rules, properties of every placement, admission in order, and
the invariants on real traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.jobs.jobs import Jobs
from simcore.machines.blocks.kueue import place_kueue
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from tests.racks import busy_above, per_rack, place_one, trace_run
from tests.reference import check_capacity, check_exclusive

# 4 racks of 4 hosts in 2 blocks of 2 racks; hosts 0, 1 (rack 0), 9 (rack 2) and 12-14
# (rack 3) busy: free hosts per rack 2, 4, 3, 1; per block 6, 4
SMALL = "blocks:4x4"
BUSY = (0, 1, 9, 12, 13, 14)


def tas(n, **options):
    """The hosts Kueue's rule gives n pods on SMALL (None: it does not admit them)."""
    nodes = place_one(place_kueue, SMALL, "kueue-tas", n, BUSY,
                      **{"rack_groups": "2", **options})
    return None if nodes is None else sorted(nodes)


def test_required_rack_takes_the_rack_of_fewest_free_hosts_that_holds_it():
    assert tas(3, tas_request="required") == [8, 10, 11]


def test_required_rack_does_not_admit_a_pod_set_no_rack_holds():
    assert tas(5, tas_request="required") is None


def test_required_block_takes_the_smaller_block_that_holds_it():
    # block 1 (4 free) over block 0 (6); its largest rack whole, the rest by best fit
    assert tas(4, tas_request="required", tas_level="2") == [8, 10, 11, 15]


def test_preferred_rack_falls_back_to_a_block_then_to_several():
    assert tas(6) == [2, 3, 4, 5, 6, 7]  # block 0 holds exactly 6
    # no block holds 7: block 0 whole, then the rest in block 1; the racks are pooled again
    # for all 7: rack 1 (4) whole, rack 2 (3) by best fit
    assert tas(7) == [4, 5, 6, 7, 8, 10, 11]
    assert tas(11) is None  # more pods than free hosts


def test_least_free_capacity_takes_the_smallest_domains_first():
    # blocks ascending (block 1, then block 0), racks ascending, then the first free hosts
    assert tas(7, tas_profile="least-free") == [2, 3, 4, 5, 6, 7, 8]


def test_unconstrained_takes_the_first_free_hosts():
    assert tas(3, tas_request="unconstrained") == [2, 3, 4]
    assert tas(5, tas_request="unconstrained") == [2, 3, 4, 5, 6]


def test_slices_stay_inside_one_domain_of_their_level():
    # slices of 2 per rack: racks hold 1, 2, 1, 0 slices, blocks 3 and 1, so block 1
    # cannot take 2 slices though it has 4 free hosts
    assert tas(4, tas_request="required", tas_level="2", slice_size=2) == [4, 5, 6, 7]
    assert tas(8, tas_request="required", tas_level="2", slice_size=2) is None
    assert tas(6, slice_size=2) == [2, 3, 4, 5, 6, 7]
    # slices alone: unconstrained from the top, LeastFreeCapacity under the mixed profile
    assert tas(4, tas_request="unconstrained", slice_size=2) == [2, 3, 4, 5]
    assert tas(4, tas_request="unconstrained", slice_size=2,
               tas_profile="best-fit") == [4, 5, 6, 7]


def test_the_fit_level_requires_each_job_at_the_lowest_level_that_can_hold_it():
    assert tas(3, tas_request="required", tas_level="fit") == [8, 10, 11]  # a rack
    assert tas(5, tas_request="required", tas_level="fit") == [2, 3, 4, 5, 6]  # a block
    # larger than a block: preferred at the top, two blocks
    assert tas(9, tas_request="required", tas_level="fit") is not None


def test_a_required_level_the_idle_machine_cannot_hold_is_refused_and_counted():
    spec = MachineSpec.parse("blocks:4x4", allocator="kueue-tas",
                             options={"tas_request": "required"})
    jobs = Jobs.create([1, 2, 3], [0.0, 0.0, 0.0], [10.0] * 3, [10.0] * 3, [4, 5, 2])
    result = simulate(jobs, spec, "scan-all")
    assert result.summary["refused_jobs"] == 1
    assert result.jobs.column("job_id").to_pylist() == [1, 3]


def test_best_effort_fifo_lets_later_pod_sets_past_one_that_does_not_fit():
    # 2 racks of 4: a 4-pod job holds rack 0 to 100 s, a 1-pod job 1 host of rack 1 to
    # 10 s; a required-rack 4-pod job must wait for a whole rack. Under scan-all the 3-pod
    # job behind it takes rack 1's 3 hosts at once and the 4-pod job waits to 12 s; under
    # fcfs the 4-pod job takes rack 1 at 10 s and the 3-pod job waits for its end (60 s)
    spec = MachineSpec.parse("blocks:2x4", allocator="kueue-tas",
                             options={"tas_request": "required"})
    jobs = Jobs.create([1, 2, 3, 4], [0.0, 0.0, 1.0, 2.0], [100.0, 10.0, 50.0, 10.0],
                       [100.0, 10.0, 50.0, 10.0], [4, 1, 4, 3])
    best_effort = simulate(jobs, spec, "scan-all").jobs.column("start_s").to_pylist()
    strict = simulate(jobs, spec, "fcfs").jobs.column("start_s").to_pylist()
    assert best_effort == [0.0, 0.0, 12.0, 2.0]
    assert strict == [0.0, 0.0, 10.0, 60.0]


@pytest.mark.parametrize(("options", "message"), [
    ({"tas_level": "block"}, r"tas_level 'block'; expected one of the topology's levels "
                             r"\['4', 'rack', 'host'\]"),
    ({"slice_size": 2, "slice_level": "host"}, "slice_level 'host'; expected a level of "
                                               "racks or above"),
    ({"slice_size": 2, "slice_level": "4"}, "expected a level at or below tas_level 'rack'"),
    ({"slice_size": 2, "tas_level": "fit"}, "with tas_level 'fit'; expected a fixed "
                                            "tas_level"),
])
def test_bad_kueue_machines_are_named(options, message):
    spec = MachineSpec.parse("blocks:8x4", allocator="kueue-tas",
                             options={"rack_groups": "4", **options})
    with pytest.raises(SpecError, match=message):
        spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))


@st.composite
def tas_cases(draw):
    """Racks, groups, free hosts per rack, a request and a pod set."""
    racks = draw(st.integers(1, 10))
    block = draw(st.integers(1, 5))
    groups = draw(st.sampled_from(["", "2", "2,4"]))
    free = draw(st.lists(st.integers(0, block), min_size=racks, max_size=racks))
    request = draw(st.sampled_from(["required", "preferred", "unconstrained"]))
    level = draw(st.sampled_from(["rack", "fit", "host"]))
    profile = draw(st.sampled_from(["mixed", "best-fit", "least-free"]))
    n = draw(st.integers(1, racks * block))
    return racks, block, groups, free, request, level, profile, n


@settings(max_examples=300, deadline=None)
@given(tas_cases())
def test_every_placement_meets_its_request(case):
    racks, block, groups, free, request, level, profile, n = case
    busy = busy_above(free, block)
    nodes = place_one(place_kueue, f"blocks:{racks}x{block}", "kueue-tas", n, busy,
                      rack_groups=groups, tas_request=request, tas_level=level,
                      tas_profile=profile)
    free_nodes = sorted(set(range(racks * block)) - set(busy))
    if n > len(free_nodes):
        assert nodes is None
        return
    if request == "required" and level != "fit":
        room = max(free) if level == "rack" else 1
        assert (nodes is None) == (room < n)
        if level == "rack" and nodes is not None:  # the fewest free hosts that hold it
            assert per_rack(nodes, block) == {free.index(min(f for f in free if f >= n)): n}
    elif request != "required":
        assert nodes is not None  # preferred ends spread over the top level's domains
    if nodes is not None:
        assert len(nodes) == n and not nodes & set(busy)
    if request == "unconstrained" or (level == "host" and n == 1):
        assert sorted(nodes) == free_nodes[:n]


@pytest.mark.parametrize(("trace", "options", "scheduler"), [
    ("SDSC-BLUE-2000-4.2-cln", {"tas_request": "required", "tas_level": "fit"}, "scan-all"),
    ("CTC-SP2-1996-3.1-cln", {"tas_request": "preferred", "slice_size": 4,
                              "down_fraction": 0.05}, "fcfs")])
def test_invariants_on_real_traces(trace_excerpt, trace, options, scheduler):
    spec, jobs, result = trace_run(trace_excerpt(trace), "kueue-tas", options, scheduler)
    s = result.summary
    assert check_exclusive(result) == len(jobs) - s["refused_jobs"]
    if "down_fraction" not in options:
        check_capacity(result, spec.units)
    room = {"rack": 18, "4": 72, "16": 288}
    for row, size in zip(result.placements.bits(), result.placements.job_id, strict=True):
        counts = per_rack(np.flatnonzero(row[:spec.units]), 18)
        nodes = sum(counts.values())
        if "slice_size" in options:  # every slice inside one rack
            assert all(c % options["slice_size"] == 0 for c in counts.values()), size
        elif nodes <= room["rack"]:  # required at the rack: never split
            assert len(counts) == 1
        elif nodes <= room["4"]:  # required in one group of 4 racks
            assert max(counts) // 4 == min(counts) // 4
