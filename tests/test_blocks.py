"""Block machines (Slurm topology/block): the selection rule by hand, segments, static and
dynamic unavailability against the analytic capacity model, cross-block dilation, and the
invariants on real traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.confidence import half_width
from simcore.base.errors import SpecError
from simcore.core.failures import FailureProcess, down_set, draw
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.blocks.allocator import build, place_block, segments
from simcore.machines.blocks.grammar import unit_layout
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from simcore.tools.block_capacity import realised_capacity, usable_capacity
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.racks import per_rack
from tests.reference import check_capacity, check_exclusive, check_timing
from tests.reference_blocks import block_choice
from tests.reference_failures import check_outages

RACKS = "blocks:64x18"


def choose(machine: str, n: int, busy=(), **options):
    """The nodes the rule gives a job of n nodes with `busy` nodes taken (None: none)."""
    spec = MachineSpec.parse(machine, options=options)
    jobs = Jobs.create([1], [0.0], [1.0], [1.0], [n])
    m, size, _ = build(spec, jobs)
    bits = np.zeros(m.words, dtype=np.uint64)
    for u in busy:
        bits[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    out = np.zeros(m.words, dtype=np.uint64)
    if place_block(m, None, 0, int(size[0]), bits, 0, bits[:0], out) < 0:
        return None
    return {u for u in range(spec.units) if (int(out[u >> 6]) >> (u & 63)) & 1}


def test_the_analytic_model_by_hand():
    # s = 1: every node in service is usable; s = B: a block is usable only whole,
    # (1 - u)^B; u = 0: s floor(B / s) of B
    assert usable_capacity(18, 1, 0.07) == pytest.approx(0.93)
    assert usable_capacity(18, 18, 0.05) == pytest.approx(0.95 ** 18)
    assert usable_capacity(18, 16, 0.0) == pytest.approx(16 / 18)
    assert usable_capacity(18, 4, 0.0) == pytest.approx(16 / 18)
    # B = 2, s = 2: only both nodes up; B = 3, s = 2: 2 x P(X >= 2) / 3
    assert usable_capacity(2, 2, 0.1) == pytest.approx(0.81)
    assert usable_capacity(3, 2, 0.1) == pytest.approx(2 * (0.9 ** 3 + 3 * 0.9 ** 2 * 0.1) / 3)
    assert realised_capacity(np.array([18, 17, 16]), 16, 54) == pytest.approx(48 / 54)
    with pytest.raises(ValueError, match="segment 19 of a block of 18"):
        usable_capacity(18, 19, 0.1)


# Hand-checked cases in the words of the rules (module docstring of
# simcore.machines.blocks.allocator): four base blocks of 4 nodes, b0 = nodes 0-3, ...,
# b3 = nodes 12-15, levels of 1, 2 and 4 base blocks.
FOUR = "blocks:4x4"
LEVELS = {"block_sizes": "4,8,16"}


def test_a_job_goes_to_the_block_of_fewest_free_nodes_that_holds_it():
    # 6 nodes need 2 base blocks (level 1); busy 0, 1, 8: {b0, b1} has 6 free, {b2, b3} 7,
    # so {b0, b1}. No base block holds 6: the fullest, b1, gives 4-7; then b0 covers the
    # 2 left with 2-3.
    assert choose(FOUR, 6, {0, 1, 8}, **LEVELS) == set(range(2, 8))


def test_ties_go_to_the_highest_index():
    # 3 nodes: level 0; b0 (3 free) and b3 (3 free) tie as the fewest free that hold it:
    # b3, the higher, gives 13-15 (b2 has 4)
    assert choose(FOUR, 3, {0, 4, 5, 12}, **LEVELS) == {13, 14, 15}
    # an idle machine: the last base block
    assert choose(FOUR, 2, **LEVELS) == {12, 13}


def test_a_block_counts_only_its_fullest_low_level_blocks():
    # 8 base blocks of 4, levels of 1 and 4: 6 nodes need level 1, not configured, so
    # blocks of 4 base blocks, of which the job may touch ceil(6 / 4) = 2. Free per base
    # block 4,1,1,0 | 3,3,2,2: the first block's two fullest hold 5 < 6 although it has 6
    # free, so the second (10 free). There b4 and b5 tie at 3 (neither covers 6): b5 gives
    # 21-23, then b4 (3 covers the 3 left, b6 and b7 do not) gives 17-19.
    busy = {5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 25, 28, 29}
    assert choose("blocks:8x4", 6, busy, block_sizes="4,16") == {17, 18, 19, 21, 22, 23}


def test_a_job_larger_than_every_level_spans_the_machine():
    # levels of 1 and 2 base blocks; 12 nodes: the whole machine is one block, of 2
    # low-level blocks (pairs), so the pair rule is off: b3 (ties: the last), b2, then b1
    assert choose(FOUR, 12, block_sizes="4,8") == set(range(4, 16))


@pytest.mark.parametrize(("placement", "nodes"), [
    ("plain", {12, 13, 14, 15}), ("spread", {8, 9, 12, 13}),
    ("consolidate", {12, 13, 14, 15}), ("consolidate-spread", {8, 9, 12, 13})])
def test_segments_are_placed_one_after_another(placement, nodes):
    # 4 nodes as 2 segments of 2 on an idle machine: the first goes to b3 (every base block
    # ties); plain: b3 is then the fewest free that holds the second; spread: b3 is taken
    # away, b2 is the last of the ties; consolidate: the level of 4 nodes is one base block;
    # with spread, 2 x 4 nodes: a pair, {b2, b3} as the first segment chose b3
    assert choose(FOUR, 4, segment="2", segment_placement=placement, **LEVELS) == nodes


def test_consolidated_segments_try_the_next_block_when_one_has_no_room():
    # 2 segments of 3 nodes, levels of 1 and 2 base blocks; nodes 12, 13 busy: free 4, 4,
    # 4, 2. Plain: the first segment takes b2 (the last of the fewest free that hold 3),
    # the second b1 (b2 has 1 left, b3 2; b0 and b1 tie).
    busy = {12, 13}
    assert choose(FOUR, 6, busy, segment="3", block_sizes="4,8") == {4, 5, 6, 8, 9, 10}
    # Consolidated: both pairs have 6 free. The first segment again takes b2, which confines
    # the job to {b2, b3}; there the second finds no room (1 and 2 left), so that pair is
    # shut and the job starts over in {b0, b1}: b1, then b0.
    assert choose(FOUR, 6, busy, segment="3", segment_placement="consolidate",
                  block_sizes="4,8") == {0, 1, 2, 4, 5, 6}


def test_spare_nodes_count_as_free_but_not_in_planning():
    # base blocks of 4 nodes planned as 3 (one spare each), levels of 1 and 2: 6 nodes
    # need 2 planned base blocks (a pair); on an idle machine {b2, b3}: b3 gives 4, b2 the
    # 2 left
    assert choose(FOUR, 6, block_sizes="3,6") == {8, 9, 12, 13, 14, 15}
    # 4 nodes need 2 planned base blocks as well, yet a base block holds them: b3
    assert choose(FOUR, 4, block_sizes="3,6") == {12, 13, 14, 15}


def saturated(s: int, n_jobs: int = 64 * 150) -> Jobs:
    """A saturated stream: every job of one segment of s nodes, all arriving at once."""
    return Jobs.create(np.arange(n_jobs), np.zeros(n_jobs), np.full(n_jobs, 1000.0),
                       np.full(n_jobs, 1000.0), np.full(n_jobs, s))


@pytest.mark.parametrize("s", [16, 18])
@pytest.mark.parametrize("u", [0.02, 0.06])
def test_a_saturated_stream_keeps_busy_what_the_down_set_leaves_usable(s, u):
    spec = MachineSpec.parse(RACKS, options={"segment": str(s), "down_fraction": u})
    result = simulate(saturated(s), spec, "fcfs", seed=11)
    down = down_set(FailureProcess.of(spec), spec.units, 11)
    in_service = 18 - np.bincount(down // 18, minlength=64)
    usable = realised_capacity(in_service, s, spec.units)
    summary = result.summary
    assert summary["utilization"] == pytest.approx(usable, abs=0.01)
    assert summary["utilization"] <= usable + 1e-12
    assert summary["failed"] == pytest.approx(down.size / spec.units)
    assert summary["runs_cut_short"] == 0 and summary["refused_jobs"] == 0
    assert summary["one_block_share"] == 1.0


@pytest.mark.parametrize("s", [16, 18])
@pytest.mark.parametrize("u", [0.02, 0.06])
def test_down_sets_average_to_the_analytic_model(s, u):
    spec = MachineSpec.parse(RACKS, options={"segment": str(s), "down_fraction": u})
    process = FailureProcess.of(spec)
    realised = []
    for seed in range(1, 401):
        down = down_set(process, spec.units, seed)
        realised.append(realised_capacity(18 - np.bincount(down // 18, minlength=64), s,
                                          spec.units))
    mean, half = float(np.mean(realised)), half_width(realised, 0.95)
    assert half < 0.01
    assert abs(mean - usable_capacity(18, s, u)) <= half


def test_a_down_set_is_the_seeds_and_hits_no_job():
    spec = MachineSpec.parse("blocks:8x4", options={"down_fraction": 0.25})
    process = FailureProcess.of(spec)
    assert np.array_equal(down_set(process, 32, 5), down_set(process, 32, 5))
    assert not np.array_equal(down_set(process, 32, 5), down_set(process, 32, 6))
    jobs = Jobs.create(np.arange(40), np.arange(40) * 10.0, np.full(40, 300.0),
                       np.full(40, 300.0), np.arange(40) % 7 + 1)
    result = simulate(jobs, spec, "backfill", seed=5)
    down = down_set(process, 32, 5)
    held = result.placements.bits()[:, :32]
    assert not held[:, down].any()
    s = result.summary
    assert s["runs_cut_short"] == 0 and s["failures"] == down.size
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)


def test_jobs_the_down_set_leaves_no_room_for_are_refused_and_counted():
    # every base block of 4 nodes loses one node in some down set; a job of 2 segments of
    # 4 nodes then needs two whole base blocks
    spec = MachineSpec.parse("blocks:4x4", options={"down_fraction": 0.5, "segment": "4"})
    seed = next(k for k in range(100)
                if np.bincount(down_set(FailureProcess.of(spec), 16, k) // 4,
                               minlength=4).min() > 0)
    jobs = Jobs.create([1, 2, 3], [0.0, 1.0, 2.0], [10.0] * 3, [10.0] * 3, [8, 1, 3])
    with pytest.raises(SpecError, match="refuses every job"):
        simulate(jobs, spec, "fcfs", seed=seed)


def test_a_rack_domain_takes_its_whole_base_block():
    spec = MachineSpec.parse("blocks:8x4", options={"failure_domain": "block",
                                                    "down_fraction": 0.3})
    struct = build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))[0]
    masks, units = spec.implementation.failure_domains(struct)
    assert units.tolist() == [4] * 8
    assert int(masks[2, 0]) == 0b1111 << 8
    jobs = Jobs.create(np.arange(30), np.arange(30) * 5.0, np.full(30, 100.0),
                       np.full(30, 100.0), np.full(30, 2))
    result = simulate(jobs, spec, "fcfs", seed=3)
    down = down_set(FailureProcess.of(spec), 8, 3)
    assert result.summary["failed"] == pytest.approx(down.size / 8)


def test_cross_block_dilation_stretches_by_the_blocks_spanned():
    # 4 base blocks of 4 nodes: a 4-node job fits one base block (factor 1); a 12-node job
    # spans 3 (1 + 0.3 x 2 / 3 = 1.2)
    spec = MachineSpec.parse("blocks:4x4", options={"block_dilation": 0.3})
    jobs = Jobs.create([1, 2], [0.0, 0.0], [100.0, 100.0], [100.0, 100.0], [4, 12])
    table = simulate(jobs, spec, "fcfs").jobs
    assert table.column("blocks_spanned").to_pylist() == [1, 3]
    assert table.column("dilation").to_pylist() == pytest.approx([1.0, 1.2])
    assert table.column("end_s").to_pylist() == pytest.approx([100.0, 120.0])


@pytest.mark.parametrize(("options", "message"), [
    ({"block_sizes": "18,20"}, r"block_sizes 20; expected 18 nodes \(the first size\) times "
                               "a power of two"),
    ({"block_sizes": "19"}, "expected the planning size of a base block first, 1..18"),
    ({"block_sizes": "18,72,36"}, "expected sizes ascending"),
    ({"block_sizes": "x"}, "block_sizes item 'x'"),
    ({"segment": "19"}, r"segment '19'; expected 'whole', a node count 1..18 \(the planning"),
    ({"segment": "big"}, "segment 'big'"),
])
def test_bad_block_machines_are_named(options, message):
    spec = MachineSpec.parse(RACKS, options=options)
    with pytest.raises(SpecError, match=message):
        build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))


def check_segments(result, spec):
    """Every placement's nodes come in whole segments, each inside one base block."""
    table = result.jobs
    alloc = dict(zip(table.column("job_id").to_pylist(), table.column("alloc_size").to_pylist(),
                     strict=True))
    segment = dict(zip(table.column("job_id").to_pylist(),
                       segments(spec, table.column("size").to_numpy()).tolist(), strict=True))
    for row, job in zip(result.placements.bits(), result.placements.job_id, strict=True):
        nodes = np.flatnonzero(row[:spec.units])
        assert nodes.size == alloc[int(job)]
        s = segment[int(job)]
        if s:
            assert all(count % s == 0 for count in per_rack(nodes, spec.dims[1]).values())


@pytest.mark.parametrize(("trace", "segment"), [
    ("SDSC-BLUE-2000-4.2-cln", "recommended"), ("CTC-SP2-1996-3.1-cln", "16"),
    ("SDSC-BLUE-2000-4.2-cln", "whole")])
def test_invariants_on_real_traces_with_failures(trace_excerpt, trace, segment):
    table = clean(read_swf(trace_excerpt(trace)))
    spec = MachineSpec.parse(RACKS, options={
        "segment": segment, "unit_mtbf_s": 4e7, "repair_s": 7200, "block_dilation": 0.1})
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, fit_to_machine=True,
                                       offered_load=0.9), spec, seed=2)
    result = simulate(jobs, spec, "backfill", seed=2)
    s = result.summary
    assert s["failures"] > 5 and s["runs_cut_short"] > 0
    struct = spec.implementation.build(spec, jobs)[0]
    masks, units = spec.implementation.failure_domains(struct)
    first = float(result.jobs.column("submit_s").to_numpy().min())  # refused jobs left out
    events = draw(FailureProcess.of(spec), units, 2, first, 1e9)
    ran = len(jobs) - s["refused_jobs"]
    assert check_outages(result, masks, events[:3]) == ran + s["runs_cut_short"]
    check_segments(result, spec)
    table = result.jobs
    assert (table.column("start_s").to_numpy() >= table.column("submit_s").to_numpy()).all()
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)
    assert 0 < s["one_block_share"] < 1


@pytest.mark.parametrize("trace", ["SDSC-BLUE-2000-4.2-cln", "CTC-SP2-1996-3.1-cln"])
def test_invariants_on_real_traces_without_failures(trace_excerpt, trace):
    table = clean(read_swf(trace_excerpt(trace)))
    spec = MachineSpec.parse(RACKS, options={"segment": "4"})
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, fit_to_machine=True,
                                       offered_load=1.0), spec, seed=1)
    result = simulate(jobs, spec, "backfill")
    check_timing(result)
    check_capacity(result, spec.units)
    assert check_exclusive(result) == len(jobs) - result.summary["refused_jobs"]
    check_segments(result, spec)


@st.composite
def block_cases(draw):
    """A machine of base blocks, its levels, an occupancy and a job."""
    blocks = draw(st.integers(1, 9))
    block = draw(st.integers(1, 6))
    plan = draw(st.integers(1, block))
    levels = sorted(draw(st.sets(st.integers(1, 4), max_size=3)) | {0})
    busy = draw(st.sets(st.integers(0, blocks * block - 1)))
    segment = draw(st.sampled_from([0, 0, *range(1, plan + 1)]))
    placement = draw(st.sampled_from(["plain", "spread", "consolidate", "consolidate-spread"]))
    n = draw(st.integers(1, blocks * block))
    if segment:
        n = -(-n // segment) * segment
    return blocks, block, plan, levels, n, segment, placement, busy


@settings(max_examples=400, deadline=None)
@given(block_cases())
def test_the_kernel_chooses_as_the_rules_say(case):
    blocks, block, plan, levels, n, segment, placement, busy = case
    sizes = ",".join(str(plan << k) for k in levels)
    expected = block_choice(blocks, block, plan, levels, n, segment, placement, busy)
    got = choose(f"blocks:{blocks}x{block}", n, busy, block_sizes=sizes,
                 segment=str(segment) if segment else "whole", segment_placement=placement)
    assert got == (None if expected is None else set(expected))


def test_racks_are_rows_of_nodes_in_a_schedules_pictures():
    layout = unit_layout("4x3")
    assert layout.sides == (3, 4) and not layout.wraps
    # bit b B + i is node i (x) of base block b (y)
    assert layout.coords[7].tolist() == [1, 2]
    assert MachineSpec.parse("blocks:4x3").dims == (4, 3)
    with pytest.raises(SpecError, match="expected AxB, A base blocks of B nodes"):
        MachineSpec.parse("blocks:4x3x2")


def test_repairs_that_outlast_the_first_horizon_are_applied_once():
    # 7-day repairs and frequent failures: the process is drawn further many times while
    # nodes are out of service across the horizon; every failure is repaired once, so the
    # machine ends with nothing held and every job placed on nodes in service
    spec = MachineSpec.parse("blocks:8x4", options={"segment": "4", "unit_mtbf_s": 1e6,
                                                    "repair_s": 604800.0})
    n = 400
    jobs = Jobs.create(np.arange(n), np.arange(n) * 50.0, np.full(n, 3000.0),
                       np.full(n, 3000.0), np.full(n, 8))
    result = simulate(jobs, spec, "backfill", seed=1)
    s = result.summary
    assert s["failures"] > 10 and s["resources_left_busy"] == 0
    struct = build(spec, jobs)[0]
    masks, units = spec.implementation.failure_domains(struct)
    events = draw(FailureProcess.of(spec), units, 1, 0.0, 4e6)
    assert s["makespan_s"] > 400 * 50 + n * 3000  # the first horizon, outlasted
    assert check_outages(result, masks, events[:3]) == n + s["runs_cut_short"]
