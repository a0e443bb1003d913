"""Curve allocators (Leung et al. 2002): hand-checked choices, a brute-force reference, the
locality metrics against a direct computation, and the run-time dilation model."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.bitset import n_words
from simcore.core.columns import LOCALITY
from simcore.jobs.jobs import Jobs
from simcore.machines.curves import allocator as curves
from simcore.machines.curves import locality
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from tests.reference import check_exclusive, check_timing, curve_choice, locality_of

RULES = get_args(curves.Rule)


def bits(ranks, n):
    mask = np.zeros(n_words(n), dtype=np.uint64)
    for r in ranks:
        mask[r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    return mask


def choose(layout, p, rule, ring=False, forbidden=()):
    """The ranks `rule` gives p processors on a line machine whose ranks are `layout`
    ('.' free, 'X' busy), as place() computes them (None: no room)."""
    n = len(layout)
    spec = MachineSpec.parse(f"mesh:{n}", rule,
                             options={} if rule == "free-list" else
                             {"fallback_span": "ring" if ring else "linear"})
    m, _, _ = spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [p]))
    busy = bits([r for r, c in enumerate(layout) if c == "X"], n)
    out = np.zeros(m.words, dtype=np.uint64)
    fence = bits(forbidden, n) if forbidden else np.zeros(0, dtype=np.uint64)
    got = curves.place_curve(m, 0, 0, p, busy, 0, fence, out)
    if got < 0:
        return None
    assert got == p
    return [r for r in range(n) if int(out[r >> 6]) >> (r & 63) & 1]


# free intervals: [0] (1), [2..5] (4), [7..9] (3), [11..15], [17..21], [23..27] (5 each)
LAYOUT = ".X....X...X.....X.....X....."


def test_each_rule_on_one_occupancy():
    """p = 2. Free list: the first two free ranks, across the gap. First fit: the first
    interval of 4. Best fit: the shortest that holds 2, the interval of 3. Sum of squares:
    N(1) = N(3) = N(4) = 1, N(5) = 3, so sum N^2 = 12; placing in the 4 leaves 12, in the 3
    leaves 14 (N(1) = 2), in a 5 leaves 10 (N(5) = 2, N(3) = 2): the first 5."""
    assert choose(LAYOUT, 2, "free-list") == [0, 2]
    assert choose(LAYOUT, 2, "first-fit") == [2, 3]
    assert choose(LAYOUT, 2, "best-fit") == [7, 8]
    assert choose(LAYOUT, 2, "sum-of-squares") == [11, 12]


def test_exact_fits_and_ties():
    """p = 5: best fit and sum of squares take the first of three equal intervals (each
    empties a 5: sum 12 -> 1 + 1 + 1 + 4 = 7). p = 1: free list, first fit and best fit
    fill the lone free rank 0; sum of squares does not: emptying the 1 leaves 11, turning
    a 5 into a 4 leaves N(4) = N(5) = 2, sum 10."""
    for rule in ("first-fit", "best-fit", "sum-of-squares"):
        assert choose(LAYOUT, 5, rule) == [11, 12, 13, 14, 15]
    for rule in ("free-list", "first-fit", "best-fit"):
        assert choose(LAYOUT, 1, rule) == [0]
    assert choose(LAYOUT, 1, "sum-of-squares") == [11]


def test_sum_of_squares_prefers_an_exact_fit_that_empties_a_common_length():
    """Free intervals 2, 3, 3 (ranks 0-1, 3-5, 7-9); p = 3: into the 3 -> N = {2: 1, 3: 1},
    sum 2; best fit agrees. p = 2: into the 2 -> {3: 2}, sum 4; into a 3 -> {2: 1, 1: 1,
    3: 1}, sum 3: sum of squares splits a 3, best fit takes the 2."""
    layout = "..X...X..."
    assert choose(layout, 3, "sum-of-squares") == [3, 4, 5]
    assert choose(layout, 2, "best-fit") == [0, 1]
    assert choose(layout, 2, "sum-of-squares") == [3, 4]


def test_span_fallback_and_its_ties():
    """No interval holds 3. Free 0, 1, 4, 7, 8 (of 9): the windows of three consecutive free
    processors span 4 (0,1,4), 6 (1,4,7) and 4 (4,7,8): the tie goes to the smallest first
    rank. Around the ring, 7, 8, 0 spans 2."""
    layout = "..XX.XX.."
    for rule in ("first-fit", "best-fit", "sum-of-squares"):
        assert choose(layout, 3, rule) == [0, 1, 4]
        assert choose(layout, 3, rule, ring=True) == [0, 7, 8]
    assert choose(layout, 3, "free-list") == [0, 1, 4]


def test_intervals_do_not_wrap_but_the_ring_fallback_does():
    """Free 0, 1, 6, 7 of 8: around the ring they form one run of four, but intervals follow
    the line, so 3 processors need the fallback. Linear: (0,1,6) and (1,6,7) both span 6,
    the first wins. Ring: (6,7,0) and (7,0,1) both span 2; the first rank 6 wins."""
    for rule in ("first-fit", "best-fit", "sum-of-squares"):
        assert choose("..XXXX..", 3, rule) == [0, 1, 6]
        assert choose("..XXXX..", 3, rule, ring=True) == [0, 6, 7]


def test_no_room_and_forbidden_processors():
    assert choose("X.X.X", 3, "best-fit") is None
    assert choose(".....", 3, "first-fit", forbidden=[1]) == [2, 3, 4]
    assert choose(".....", 3, "free-list", forbidden=[1]) == [0, 2, 3]


layouts = st.integers(1, 14).flatmap(
    lambda n: st.tuples(st.lists(st.booleans(), min_size=n, max_size=n), st.integers(1, n)))


@settings(max_examples=400, deadline=None)
@given(case=layouts, rule=st.sampled_from(RULES), ring=st.booleans())
def test_rules_match_a_brute_force_reference(case, rule, ring):
    free, p = case
    layout = "".join("." if f else "X" for f in free)
    assert choose(layout, p, rule, ring) == curve_choice(free, p, rule, ring)


def nodes_of(result):
    return result.jobs.column("nodes").to_pylist()


machines = st.tuples(st.sampled_from(["mesh", "torus"]), st.integers(1, 5), st.integers(1, 4),
                     st.integers(1, 3), st.sampled_from(["row-major", "snake", "hilbert"]),
                     st.sampled_from(RULES))
small_workloads = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 40), min_size=n, max_size=n),
    st.lists(st.integers(0, 50), min_size=n, max_size=n),
    st.lists(st.integers(1, 60), min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(machine=machines, case=small_workloads,
       scheduler=st.sampled_from(["fcfs", "backfill", "conservative", "cplant",
                                  "cplant-backfill"]))
def test_curve_machines_schedule_as_flat_ones_and_measure_what_they_place(machine, case,
                                                                          scheduler):
    """Any p free processors do: the schedule is flat:N's job for job; every job gets
    exactly p processors, none held twice; each metric equals a direct computation."""
    kind, x, y, z, ordering, rule = machine
    spec = MachineSpec.parse(f"{kind}:{x}x{y}x{z}", rule, ordering=ordering)
    n = spec.units
    submit, run, size = (np.array(v) for v in case)
    jobs = Jobs.create(np.arange(1, len(submit) + 1), submit, run, run + 3,
                       (size - 1) % n + 1)
    result = simulate(jobs, spec, scheduler)
    flat = simulate(jobs, f"flat:{n}", scheduler)
    assert np.array_equal(result.jobs.column("sched_s").to_numpy(),
                          flat.jobs.column("sched_s").to_numpy())
    check_timing(result)
    check_exclusive(result)
    order = curves.order_of(ordering, spec.dims3)
    for row, nodes in zip(result.jobs.to_pylist(), nodes_of(result), strict=True):
        assert len(nodes) == len(set(nodes)) == row["size"]
        rank = {int(u): r for r, u in enumerate(order)}
        assert [rank[u] for u in nodes] == sorted(rank[u] for u in nodes)
        expected = locality_of(nodes, order, spec.dims3, kind == "torus")
        for column in LOCALITY:
            assert row[column.name] == pytest.approx(expected[column.name]), column.name


def measure(nodes, sides, wrap):
    """Every metric of processors `nodes` (row-major ranks) by the kernel."""
    n = sides[0] * sides[1] * sides[2]
    out = np.zeros(locality.N_METRICS)
    ranks = np.array(sorted(nodes), dtype=np.int64)
    locality.measure(ranks, len(nodes), n, np.arange(n, dtype=np.int64), np.array(sides),
                     wrap, locality.curve_dims(sides), locality.smallest_cubes(sides),
                     np.zeros(n, dtype=np.int64), np.zeros((3, max(sides)), dtype=np.int64),
                     np.zeros(n, dtype=np.int64), 1, np.zeros(n, dtype=np.int64), out)
    return dict(zip([c.name for c in LOCALITY], out.tolist(), strict=True))


def test_locality_by_hand():
    """4x4 row-major, processors 0, 1, 4, 15 = (0,0), (1,0), (0,1), (3,3). Ranks are the
    indices: linear span 16; gaps 0, 2, 10 and 0 around the ring: ring span 16 - 10 = 6,
    stretch 6 / 4. Mesh: box 4x4 (volume 16, sides 4 + 4), cube 4^2 = 16 against 2^2 for
    the smallest four, ratio 4; components {0, 1, 4} and {15}; hops 1, 1, 6, 2, 5, 5: 20/6.
    Torus: x and y in {3, 0, 1}, arcs of 3: box 9, sides 6, cube 9, ratio 9/4; (3,3)'s
    neighbours (2,3), (0,3), (3,2), (3,0) are not in the job: still 2 components; hops
    1, 1, 2, 2, 3, 3: 12/6."""
    assert measure([0, 1, 4, 15], (4, 4, 1), False) == {
        "span_linear": 16, "span_ring": 6, "stretch_span": 1.5, "bbox_volume": 16,
        "bbox_sides": 8, "bcube_volume": 16, "bcube_ratio": 4, "components": 2,
        "mean_hops": 20 / 6}
    assert measure([0, 1, 4, 15], (4, 4, 1), True) == {
        "span_linear": 16, "span_ring": 6, "stretch_span": 1.5, "bbox_volume": 9,
        "bbox_sides": 6, "bcube_volume": 9, "bcube_ratio": 9 / 4, "components": 2,
        "mean_hops": 2.0}
    one = measure([5], (4, 4, 1), False)
    assert (one["span_ring"], one["mean_hops"], one["components"], one["bcube_ratio"]) == \
        (1, 0.0, 1, 1.0)
    # 8x8x5: a 4x4x4 cube needs side 4 (64 = 4^3); 200 processors need side 7 (6x6x5 = 180
    # is too few: the machine's 5 caps the third side)
    cubes = locality.smallest_cubes((8, 8, 5))
    assert (cubes[64], cubes[65], cubes[180], cubes[181], cubes[320]) == (64, 125, 216, 343,
                                                                          512)


def test_run_aggregates_by_hand():
    values = np.zeros((2, locality.N_METRICS))
    values[:, locality.SPAN_RING] = [4.0, 10.0]
    out = curves.aggregate(values, np.array([2, 5]), np.array([30.0, 10.0]))
    assert out["span_ring_mean"] == 7.0 and out["span_ring_max"] == 10.0
    assert out["span_ring_sumsq"] == 116.0
    assert out["span_ring_weighted"] == (4 * 30 + 10 * 10) / 40
    assert out["span_ring_per_proc"] == (2 + 2) / 2
    assert "stretch_span_per_proc" not in out and "mean_hops_weighted" in out


def test_compact_placements_by_hand():
    """Least mean hops of box-filling placements. Mesh 4x4: 2 -> 1; 3 -> 4/3 (a row of
    three, or an L: 1, 1, 2); 4 -> 8/6 (a 2x2 square: four 1s and two 2s, where a row of
    four sums 10). The whole 4x4 torus: per dimension the distance over all 16 x 16 ordered
    pairs averages (0 + 1 + 2 + 1) / 4 = 1, so the 120 pairs sum 2 x 256 / 2."""
    mesh = np.zeros(17)
    locality.compact_hops(np.array([4, 4, 1]), False, np.zeros((3, 4), dtype=np.int64), mesh)
    assert mesh[:5].tolist() == [0.0, 0.0, 1.0, pytest.approx(4 / 3), pytest.approx(8 / 6)]
    torus = np.zeros(17)
    locality.compact_hops(np.array([4, 4, 1]), True, np.zeros((3, 4), dtype=np.int64), torus)
    assert torus[16] == pytest.approx(256 / 120) and torus[4] == mesh[4]


DILATED = [(0.0, 10.0, 2), (0.0, 100.0, 1), (5.0, 50.0, 6), (6.0, 1.0, 7)]


def dilated_jobs(rows):
    rows = np.array(rows)
    return Jobs.create(np.arange(1, len(rows) + 1), rows[:, 0], rows[:, 1], rows[:, 1],
                       rows[:, 2].astype(int))


def test_dilation_stretches_scattered_jobs():
    """mesh:8, free list, dilation 1. Job 1 takes ranks 0-1, job 2 rank 2; job 3 (6 procs)
    waits for job 1 and gets 0, 1, 3, 4, 5, 6: its pairwise distances sum 43 against 35 for
    six in a row, so it runs 50 x 43/35 s. Job 4 (7 procs) starts when job 3 ends, on all
    but rank 2: 66 against 56. Jobs on compact placements (and single processors) keep
    their run times."""
    spec = MachineSpec.parse("mesh:8", "free-list", options={"dilation": 1.0})
    result = simulate(dilated_jobs(DILATED), spec, "fcfs")
    check_exclusive(result)
    rows = result.jobs.to_pylist()
    assert [r["nodes"] for r in rows[:3]] == [[0, 1], [2], [0, 1, 3, 4, 5, 6]]
    assert [r["dilation"] for r in rows] == [1.0, 1.0, pytest.approx(43 / 35),
                                             pytest.approx(66 / 56)]
    assert rows[2]["start_s"] == 10.0
    assert rows[2]["end_s"] == pytest.approx(10 + 50 * 43 / 35)
    assert rows[3]["start_s"] == rows[2]["end_s"]
    off = simulate(dilated_jobs(DILATED), MachineSpec.parse("mesh:8", "free-list"), "fcfs")
    assert "dilation" not in off.jobs.column_names  # the store's column is null then
    assert off.jobs.column("start_s").to_pylist()[3] == 60.0
    half = simulate(dilated_jobs(DILATED), MachineSpec.parse(
        "mesh:8", "free-list", options={"dilation": 0.5}), "fcfs").jobs.to_pylist()
    assert half[2]["dilation"] == pytest.approx(1 + 0.5 * (43 / 35 - 1))


def test_ross_span_on_the_papers_mesh(trace_excerpt):
    """Sandia Ross (a Cplant machine) on 8x8x5, 3000 jobs, work multiple 0.5: every
    counts-only scheduler places on every curve allocator exactly as on flat:320, no
    processor is held twice, every job gets exactly its size."""
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf
    from simcore.workload.transforms import WorkloadSpec, prepare

    table = clean(read_swf(trace_excerpt("Sandia-Ross-2001-1.1-cln")))
    mesh = MachineSpec.parse("mesh:8x8x5", "best-fit", ordering="hilbert")
    jobs = prepare(table, WorkloadSpec(first_jobs=3000, runtime_scale=0.5, machine_fit="drop"),
                   mesh)
    assert jobs.oversize_jobs > 0
    for scheduler in ("fcfs", "backfill", "conservative", "cplant", "cplant-backfill"):
        flat = simulate(jobs, "flat:320", scheduler).jobs.column("sched_s").to_numpy()
        for rule, ordering in (("free-list", "row-major"), ("first-fit", "snake"),
                               ("best-fit", "hilbert"), ("sum-of-squares", "hilbert")):
            spec = MachineSpec.parse("mesh:8x8x5", rule, ordering=ordering,
                                     options={} if rule == "free-list" else
                                     {"fallback_span": "ring"})
            result = simulate(jobs, spec, PolicySpec(scheduler))
            assert np.array_equal(result.jobs.column("sched_s").to_numpy(), flat)
            assert check_exclusive(result) == len(jobs)
            sizes = [len(nodes) for nodes in nodes_of(result)]
            assert sizes == jobs.size.tolist()
            assert result.summary["resources_left_busy"] == 0
