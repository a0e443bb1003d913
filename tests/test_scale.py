"""Node-level scale: the maximal-box search against the box table and brute force, tori of
any dimension, and invariants on large and 5D machines."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.base.jit import kernel
from simcore.core.allocate import largest_free, place
from simcore.core.state import new_state
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.boxes import allocator as boxes
from simcore.machines.boxes import maximal
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.sources import load_workload
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference import (
    check_capacity,
    check_exclusive,
    check_reservations,
    check_timing,
    krevat_place,
    largest_free_box,
)
from tests.test_invariants import make_jobs, small_workloads


@kernel
def _place(m, st, units, busy, growth, forbidden, out):
    return place(m, st, 0, units, busy, growth, forbidden, out)


@kernel
def _largest(m, st, busy):
    return largest_free(m, st, busy)


def bits(units, n):
    """A unit set as the simulator's bitset."""
    out = np.zeros(max(1, -(-n // 64)), dtype=np.uint64)
    for u in units:
        out[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    return out


def unit_set(mask, n):
    return frozenset(u for u in range(n) if int(mask[u >> 6]) >> (u & 63) & 1)


@functools.cache
def structs(text):
    """(spec, box-table struct, maximal-box struct, scratch state) of a machine."""
    spec = MachineSpec.parse(text)
    one = Jobs.create(np.array([1]), np.array([0.0]), np.array([1.0]), np.array([1.0]),
                      np.array([1]))
    table = boxes.build(MachineSpec.parse(text, options={"search": "table"}), one)[0]
    search = maximal.build(spec, one)[0]
    return spec, table, search, new_state(1, spec.units, table.words, 1)


SMALL = ["torus:7", "mesh:6", "torus:3x4", "mesh:3x5", "torus:2x3x3", "mesh:2x3x4",
         "torus:2x2x2x3", "mesh:2x2x3x2", "torus:2x1x2x2x2"]


@st.composite
def placements(draw):
    text = draw(st.sampled_from(SMALL))
    n = MachineSpec.parse(text).units
    busy = frozenset(draw(st.sets(st.integers(0, n - 1))))
    forbidden = frozenset(draw(st.sets(st.integers(0, n - 1), max_size=3)))
    return text, busy, forbidden, draw(st.integers(1, n)), draw(st.sampled_from([0, 1, n]))


@settings(max_examples=300, deadline=None)
@given(placements())
def test_search_and_table_match_brute_force(case):
    """Both structures choose Krevat's box exactly as the brute-force rule does, with and
    without growth and a reservation, in 1 to 5 dimensions."""
    text, busy, forbidden, units, growth = case
    spec, table, search, state = structs(text)
    n = spec.units
    expected_alloc, expected_box = krevat_place(busy, spec.dims, spec.wrap, units, growth,
                                                forbidden)
    free = frozenset(range(n)) - busy
    for struct in (table, search):
        out = np.zeros(table.words, dtype=np.uint64)
        guard = bits(forbidden, n) if forbidden else state.scratch.nothing
        alloc = _place(struct, state, units, bits(busy, n), growth, guard, out)
        assert alloc == expected_alloc, type(struct).__name__
        if alloc >= 0:
            assert unit_set(out, n) == expected_box, type(struct).__name__
        assert _largest(struct, state, bits(busy, n)) == largest_free_box(
            free, spec.dims, spec.wrap)


def test_thesis_growth_case_with_the_search():
    """Krevat's 4x4 example (tests/test_schedulers.py) placed by maximal free boxes: A (8)
    at 2x4 (0,0), B (2) and C (2) along x = 2, D (3) grown to the 2x2 left."""
    rows = np.array([(0, 100, 8), (0, 100, 2), (0, 100, 2), (0, 100, 3)], dtype=float)
    work = Jobs.create(np.arange(1, 5), rows[:, 0], rows[:, 1], rows[:, 1],
                       rows[:, 2].astype(int))
    machine = MachineSpec.parse("torus:4x4", options={"search": "maximal"})
    result = simulate(work, machine, "fcfs")
    assert result.jobs.column("alloc_size").to_pylist() == [8, 2, 2, 4]
    held = [sorted(unit_set(mask, 16)) for mask in result.placements.masks]
    assert held == [[0, 1, 2, 3, 4, 5, 6, 7], [8, 12], [9, 13], [10, 11, 14, 15]]


def test_five_dimensional_halves():
    """On an empty 2x2x2x2x2 torus a 16-unit job takes the first half along the first axis
    (every candidate leaves 16: the first wins), the next one the other half; an 8-unit job
    then waits for one of them."""
    rows = np.array([(0, 10, 16), (0, 20, 16), (1, 5, 8)], dtype=float)
    work = Jobs.create(np.arange(1, 4), rows[:, 0], rows[:, 1], rows[:, 1],
                       rows[:, 2].astype(int))
    for search in ("table", "maximal"):
        machine = MachineSpec.parse("torus:2x2x2x2x2", options={"search": search})
        result = simulate(work, machine, "fcfs")
        held = [sorted(unit_set(mask, 32)) for mask in result.placements.masks]
        assert held[:2] == [list(range(16)), list(range(16, 32))]
        assert result.jobs.column("start_s").to_pylist() == [0, 0, 10]


MACHINES = ["torus:2x2x3", "mesh:3x4", "torus:12", "torus:2x3x2", "mesh:2x2x3",
            "torus:2x2x1x3"]
SCHEDULERS = ["fcfs", "backfill", "migration", "bm", "cplant-backfill"]


def same_schedule(jobs, text, scheduler, params=None):
    """The schedule (times, sizes, every placement) with the box table and the search."""
    policy = PolicySpec.from_params(scheduler, params or {})
    runs = [simulate(jobs, MachineSpec.parse(text, options={"search": search}), policy)
            for search in ("table", "maximal")]
    first, second = runs
    assert first.jobs.equals(second.jobs)
    assert np.array_equal(first.placements.masks, second.placements.masks)
    assert np.array_equal(first.placements.time_s, second.placements.time_s)
    for name, value in first.summary.items():
        if name != "machine":
            other = second.summary[name]
            assert value == other or (value != value and other != other), name  # NaN
    return first


@settings(max_examples=120, deadline=None)
@given(case=small_workloads, machine=st.sampled_from(MACHINES),
       scheduler=st.sampled_from(SCHEDULERS))
def test_identical_schedules_on_generated_workloads(case, machine, scheduler):
    same_schedule(make_jobs(case), machine, scheduler,
                  {"estimates": "actual"} if scheduler != "fcfs" and scheduler != "migration"
                  else {})


@pytest.mark.parametrize(("machine", "scale"), [("torus:4x4x8", 1.2), ("mesh:8x8x5", 1.0),
                                                ("torus:4x4x2x2x2", 1.2)])
@pytest.mark.parametrize("scheduler", ["fcfs", "backfill", "bm"])
def test_identical_schedules_on_a_real_span(machine, scale, scheduler, trace_excerpt):
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    spec = MachineSpec.parse(machine)
    jobs = prepare(table, WorkloadSpec(first_jobs=1500, runtime_scale=scale,
                                       processors_per_unit=128 // spec.units or 1), spec)
    result = same_schedule(jobs, machine, scheduler)
    assert result.summary["grown_jobs"] + result.summary["rounded_jobs"] >= 0
    check_exclusive(result)


def run_checked(jobs, machine, scheduler):
    result = simulate(jobs, machine, scheduler)
    check_timing(result)
    check_capacity(result, MachineSpec.parse(machine).units)
    assert check_exclusive(result) >= len(jobs)
    assert (result.jobs.column("alloc_size").to_numpy() >= jobs.size).all()
    if scheduler in ("backfill", "bm"):
        check_reservations(result)
    return result


@pytest.mark.parametrize("scheduler", ["fcfs", "backfill", "migration", "bm"])
def test_five_dimensional_torus_invariants(scheduler):
    """Blue Gene/Q's 5D torus shape (at 8x4x4x4x2, beyond any box table: the search)."""
    machine = "torus:8x4x4x4x2"
    spec = MachineSpec.parse(machine)
    assert not boxes.uses_table(spec)
    jobs = prepare(load_workload(f"lublin:{spec.units}", jobs=400, seed=3), WorkloadSpec(),
                   spec)
    result = run_checked(jobs, machine, scheduler)
    assert result.summary["utilization"] > 0.2


@pytest.mark.parametrize("scheduler", ["fcfs", "backfill"])
def test_node_level_bgl_invariants(scheduler):
    """The 64x32x32 node torus of BG/L, placed exactly, on a Lublin workload."""
    spec = MachineSpec.parse("torus:64x32x32")
    jobs = prepare(load_workload("lublin:65536", jobs=300, seed=1), WorkloadSpec(), spec)
    result = run_checked(jobs, "torus:64x32x32", scheduler)
    assert result.summary["blocked_no_box"] > 0, "the span should block some head jobs"


def test_dimensions_and_search_in_specs():
    spec = MachineSpec.parse("torus:16x16x16x12x2")
    assert spec.units == 98304 and len(spec.dims) == 5 and not boxes.uses_table(spec)
    assert boxes.uses_table(MachineSpec.parse("torus:8x8x8"))
    forced = MachineSpec.parse("torus:4x4x8", options={"search": "maximal"})
    assert str(forced) == "torus:4x4x8 search=maximal" and not boxes.uses_table(forced)
    assert str(MachineSpec.parse("torus:4x4x8")) == "torus:4x4x8"
    with pytest.raises(SpecError, match="at most 3 dimensions"):
        MachineSpec.parse("mesh:2x2x2x2", "first-fit")
    with pytest.raises(SpecError, match="one side of at most 64"):
        simulate(make_jobs(([0], [1], [0], [1])), "torus:128x128", "fcfs")
    with pytest.raises(SpecError, match="search"):
        MachineSpec.parse("torus:4x4", options={"search": "fast"})
