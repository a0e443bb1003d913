"""Slurm's topology/tree rule on racks (`slurm-tree`): the cases of docs/modern.md worked by
hand from the rules, the --switches wait in a run, properties of every placement, and the
invariants on real traces."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.core.failures import FailureProcess, draw
from simcore.jobs.jobs import Jobs
from simcore.machines.blocks.tree import place_tree
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from tests.racks import busy_above, per_rack, place_one, trace_run
from tests.reference import check_capacity, check_exclusive
from tests.reference_failures import check_outages

RACKS = "blocks:8x18"  # 8 racks of 18 nodes; switches over racks 0-3 and 4-7, one root


def tree(n, free=None, **options):
    """Nodes per rack the tree rule gives n nodes with free[r] free nodes in rack r."""
    busy = busy_above(free, 18) if free is not None else ()
    nodes = place_one(place_tree, RACKS, "slurm-tree", n, busy,
                      **{"rack_groups": "4", **options})
    return None if nodes is None else per_rack(nodes, 18)


def test_an_idle_machine_fills_the_lowest_racks():
    assert tree(30) == {0: 18, 1: 12}


def test_a_rack_that_holds_the_job_is_chosen_by_best_fit():
    assert tree(10, [18, 12, 12, 0, 0, 11, 0, 0]) == {5: 10}
    # equal fits: the lower rack
    assert tree(10, [18, 12, 12, 0, 0, 0, 0, 0]) == {1: 10}


def test_without_a_rack_that_holds_it_the_largest_rack_under_the_best_switch():
    # switch 0 has 38 free, switch 1 40: both hold 30, fewer wins; inside it the largest
    # rack (18), then the rack nearest it that holds the rest by best fit (12)
    assert tree(30, [5, 12, 18, 3, 10, 10, 10, 10]) == {2: 18, 1: 12}


@pytest.mark.parametrize(("release", "expected"), [("25.11", {4: 12, 5: 8}),
                                                   ("22.05", {0: 8, 4: 12})])
def test_a_nearer_rack_replaces_a_tighter_one_only_in_25_11(release, expected):
    # only switch 1 holds 20: its largest rack first (12 of rack 4); 8 still needed, held
    # by rack 0 (8, farther, exact fit) and rack 5 (10, nearer)
    assert tree(20, [8, 0, 0, 0, 12, 10, 0, 0], tree_release=release) == expected


def test_a_nearer_rack_that_does_not_hold_the_rest_never_replaces_a_farther_one():
    # switch 1 holds exactly 26, yet after its largest rack (14) the nearer racks 5 and 6
    # (6 each) do not hold the 12 left and rack 0 (18, farther) does
    assert tree(26, [18, 0, 0, 0, 14, 6, 6, 0]) == {0: 12, 4: 14}


def test_more_nodes_than_free_cannot_be_placed():
    assert tree(40, [18, 0, 0, 0, 10, 10, 0, 0]) is None


def test_a_switch_limit_refuses_a_wider_placement_until_its_wait_lapses():
    assert tree(30, switches=1) is None
    assert tree(30, switches=2) == {0: 18, 1: 12}
    assert tree(18, switches=1) == {0: 18}


def test_a_switch_limited_job_starts_when_its_wait_lapses_on_an_idle_machine():
    # a 30-node job limited to one rack waits its 120 s although the machine is idle; an
    # 18-node job behind it fits one rack and starts at once (backfilled around it)
    spec = MachineSpec.parse(RACKS, allocator="slurm-tree",
                             options={"switches": 1, "switch_wait_s": 120.0})
    jobs = Jobs.create([1, 2], [0.0, 10.0], [50.0, 50.0], [50.0, 50.0], [30, 18])
    table = simulate(jobs, spec, "backfill").jobs
    assert table.column("start_s").to_pylist() == [120.0, 10.0]
    assert table.column("blocks_spanned").to_pylist() == [2, 1]
    # the wait counts from the first placement tried with enough free nodes, not from the
    # submission: behind seven one-rack jobs ending at 100 s, the limited job waits to 220 s
    jobs = Jobs.create(range(8), [0.0] * 8, [100.0] * 7 + [50.0], [100.0] * 7 + [50.0],
                       [18] * 7 + [30])
    assert simulate(jobs, spec, "fcfs").jobs.column("start_s").to_pylist() == [0.0] * 7 + [220.0]


@pytest.mark.parametrize(("options", "message"), [
    ({"rack_groups": "4,6"}, r"rack_groups item '6'; expected rack counts .* after 4"),
    ({"rack_groups": "x"}, "rack_groups item 'x'"),
    ({"switches": -1}, "switches"),
])
def test_bad_tree_machines_are_named(options, message):
    with pytest.raises(SpecError, match=message):
        spec = MachineSpec.parse(RACKS, allocator="slurm-tree", options=options)
        spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))


@st.composite
def tree_cases(draw):
    """Racks, switch sizes, free nodes per rack and a job no larger than what is free."""
    racks = draw(st.integers(1, 12))
    block = draw(st.integers(1, 6))
    groups = draw(st.sampled_from(["", "2", "3", "2,4", "2,6"]))
    free = draw(st.lists(st.integers(0, block), min_size=racks, max_size=racks))
    n = draw(st.integers(1, max(1, sum(free))))
    return racks, block, groups, free, n


@settings(max_examples=300, deadline=None)
@given(tree_cases(), st.sampled_from(["25.11", "22.05"]))
def test_every_placement_takes_free_nodes_lowest_first_one_partial_rack_at_most(case, release):
    racks, block, groups, free, n = case
    busy = busy_above(free, block)
    nodes = place_one(place_tree, f"blocks:{racks}x{block}", "slurm-tree", n, busy,
                      rack_groups=groups, tree_release=release)
    if sum(free) < n:
        assert nodes is None
        return
    assert len(nodes) == n and not nodes & set(busy)
    counts = per_rack(nodes, block)
    partial = [r for r, c in counts.items() if c < free[r]]
    assert len(partial) <= 1  # every rack used is used up but the last one
    holders = [f for f in free if f >= n]
    if holders:  # a rack that holds the job: the best fit, the lowest of equal ones
        assert counts == {free.index(min(holders)): n}


@pytest.mark.parametrize(("trace", "options"), [
    ("SDSC-BLUE-2000-4.2-cln", {"switches": 2, "down_fraction": 0.05}),
    ("SDSC-BLUE-2000-4.2-cln", {"switches": 4, "rack_groups": "2,8,32"}),
    ("CTC-SP2-1996-3.1-cln", {"switches": 1, "tree_release": "22.05", "unit_mtbf_s": 4e7,
                              "repair_s": 7200})])
def test_invariants_on_real_traces(trace_excerpt, trace, options):
    spec, jobs, result = trace_run(trace_excerpt(trace), "slurm-tree", options)
    s = result.summary
    ran = len(jobs) - s["refused_jobs"]
    if "unit_mtbf_s" in options:
        struct = spec.implementation.build(spec, jobs)[0]
        masks, units = spec.implementation.failure_domains(struct)
        first = float(result.jobs.column("submit_s").to_numpy().min())
        events = draw(FailureProcess.of(spec), units, 1, first, 1e9)
        assert s["failures"] > 5
        assert check_outages(result, masks, events[:3]) == ran + s["runs_cut_short"]
    else:
        assert check_exclusive(result) == ran
        assert (s["refused_jobs"] > 0) == ("down_fraction" in options)  # the largest jobs
    if not set(options) & {"down_fraction", "unit_mtbf_s"}:
        check_capacity(result, spec.units)
    table = result.jobs
    wide = table.column("blocks_spanned").to_numpy() > options["switches"]
    waited = (table.column("start_s").to_numpy() - table.column("submit_s").to_numpy())
    assert wide.any() and (waited[wide] >= 300.0).all()  # never wider before the wait
    assert 0 < s["one_block_share"] < 1
