"""Cube machines (cubes:AxBxC:S): chip shapes, whole-cube and sub-cube placement with
optical switching and as a static torus of cubes, cube failures, and a real trace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.core.failures import FailureProcess, draw
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.boxes.allocator import build as build_boxes
from simcore.machines.boxes.allocator import place_box
from simcore.machines.cubes.allocator import chips_run, cube_shapes, place_cubes
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference_failures import check_outages
from tests.reference_modern import cube_placement_ok


def bits_of(units, words):
    bits = np.zeros(words, dtype=np.uint64)
    for u in units:
        bits[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    return bits


def units_of(bits):
    return {u for u in range(bits.shape[0] * 64) if (int(bits[u >> 6]) >> (u & 63)) & 1}


def choose(text, chips, busy=(), allocator=None):
    """The chips a job run on `chips` chips gets with `busy` chips taken (None: none)."""
    spec = MachineSpec.parse(text, allocator)
    m, _, _ = spec.implementation.build(spec, Jobs.create([1], [0.0], [1.0], [1.0], [1]))
    out = np.zeros(m.words, dtype=np.uint64)
    busy = bits_of(busy, m.words)
    if place_cubes(m, None, 0, chips, busy, 0, busy[:0], out) < 0:
        return None
    return units_of(out)


def cube(c, side=2):
    return set(range(c * side ** 3, (c + 1) * side ** 3))


def test_sizes_map_to_the_most_cubic_shape_of_least_volume():
    spec = MachineSpec.parse("cubes:4x4x4:4")
    assert spec.dims == (16, 16, 16) and spec.units == 4096
    sizes = np.array([1, 5, 7, 13, 63, 64, 65, 128, 129, 257, 500, 4096])
    assert chips_run(spec, sizes).tolist() == [1, 6, 8, 16, 64, 64, 128, 128, 192, 384, 512,
                                               4096]
    shapes = cube_shapes((4, 4, 4))
    assert shapes[8].tolist() == [2, 2, 2] and shapes[12].tolist() == [2, 2, 3]
    assert shapes[6].tolist() == [1, 2, 3] and shapes[16].tolist() == [2, 2, 4]
    assert shapes[5].tolist() == [0, 0, 0]  # 1x1x5 does not fit a 4x4x4 grid
    assert cube_shapes((2, 1, 4))[8].tolist() == [1, 2, 4]


@pytest.mark.parametrize(("text", "message"), [
    ("cubes:4x4:4", r"expected AxBxC:S"), ("cubes:4x4x4:0", r"expected AxBxC:S"),
    ("cubes:4x4x4", r"expected AxBxC:S")])
def test_bad_cube_machines_are_refused(text, message):
    with pytest.raises(SpecError, match=message):
        MachineSpec.parse(text)


RING = "cubes:4x1x1:2"  # four cubes of 2x2x2 chips, a ring when wired statically


def test_optical_jobs_take_any_free_cubes_and_static_ones_a_box_of_cubes():
    assert choose(RING, 16, busy={8}) == cube(0) | cube(2)
    assert choose(RING, 16, busy={8}, allocator="cube-boxes") == cube(2) | cube(3)
    assert choose(RING, 24, busy={8}, allocator="cube-boxes") == cube(2) | cube(3) | cube(0)
    assert choose(RING, 16, busy={8, 24}) == cube(0) | cube(2)
    assert choose(RING, 16, busy={8, 24}, allocator="cube-boxes") is None
    assert choose(RING, 32, busy={8}) is None


def test_static_boxes_of_cubes_follow_the_largest_free_rule():
    # A 4x2x1 torus of cubes (cube c at (c // 2, c % 2)) with cube 0 busy: the largest free
    # box is x = 1..3 (6 cubes). A 2-cube job taking column x = 1 (cubes 2, 3) or x = 3
    # (cubes 6, 7) leaves a 2x2 box; x = 2 only a box of 3 (cubes 7, 1, 3 wrapping); the
    # first of the best is x = 1. Then a 4-cube job takes that 2x2 box (cubes 4-7).
    grid = "cubes:4x2x1:2"
    placed = choose(grid, 16, busy={0}, allocator="cube-boxes")
    assert placed == cube(2) | cube(3)
    assert choose(grid, 32, busy={0} | placed, allocator="cube-boxes") == \
        cube(4) | cube(5) | cube(6) | cube(7)
    # cubes 0, 2, 6 busy: the free row y = 1 is 4x1, not the 2x2 shape of 4 cubes
    assert choose(grid, 32, busy={0, 16, 48}, allocator="cube-boxes") is None
    assert choose(grid, 32, busy={0, 16, 48}) == cube(1) | cube(3) | cube(4) | cube(5)


def test_small_jobs_go_to_the_fullest_cube_they_fit():
    # chip 8 is busy (cube 1, local chip (0,0,0)): a 1-chip job joins it there, at the box
    # leaving the cube's largest free box (local (0,0,1), the first such); a 4-chip job
    # needs a free face of the 2x2x2 cube: with locals 0, 1 busy the face x = 1; with
    # locals 0, 1, 4 the face y = 1; with locals 0, 1, 2, 4 none is left: idle cube 0.
    assert choose(RING, 1) == {0}
    assert choose(RING, 1, busy={8}) == {9}
    assert choose(RING, 4, busy={8, 9}) == {12, 13, 14, 15}
    assert choose(RING, 4, busy={8, 9, 12}) == {10, 11, 14, 15}
    assert choose(RING, 4, busy={8, 9, 10, 12}) == {0, 1, 2, 3}
    assert choose(RING, 8, busy={8}) == cube(0)


@st.composite
def cube_occupancies(draw_):
    side = draw_(st.integers(1, 3))
    n_cubes = draw_(st.integers(1, 3))
    units = n_cubes * side ** 3
    busy = draw_(st.sets(st.integers(0, units - 1)))
    chips = draw_(st.integers(1, side ** 3))
    return side, n_cubes, busy, chips


@settings(max_examples=200, deadline=None)
@given(cube_occupancies())
def test_inside_a_cube_jobs_are_placed_as_on_a_small_torus(case):
    side, n_cubes, busy, chips = case
    text = f"cubes:{n_cubes}x1x1:{side}"
    spec = MachineSpec.parse(text)
    size = int(chips_run(spec, np.array([chips]))[0])
    placed = choose(text, size, busy)
    if size == side ** 3:  # whole cubes: the first idle ones
        idle = [c for c in range(n_cubes) if not cube(c, side) & busy]
        assert placed == (cube(idle[0], side) if idle else None)
        return
    small = MachineSpec.parse(f"torus:{side}x{side}x{side}")
    m, _, _ = build_boxes(small, Jobs.create([1], [0.0], [1.0], [1.0], [1]))
    k = side ** 3
    free = [(k - len(cube(c, side) & busy), c) for c in range(n_cubes)]
    expected = None
    for left, c in sorted(free):
        if left < size:
            continue
        local = bits_of({u - c * k for u in busy if c * k <= u < (c + 1) * k}, m.words)
        out = np.zeros(m.words, dtype=np.uint64)
        if place_box(m, None, 0, size, local, 0, local[:0], out) == size:
            expected = {u + c * k for u in units_of(out)}
            break
    assert placed == expected


def test_a_failed_chip_takes_its_cube_out_of_service(tmp_path):
    # cubes 0 and 1 run one job each; cube 1 fails at 10 s for 100 s: its job is requeued
    # and starts again at once on cube 2; a 2-cube job arriving at 20 s waits for cube 0
    # (at 50 s) and takes cubes 0 and 3, not cube 1, out of service until 110 s.
    path = tmp_path / "outages.txt"
    path.write_text("10 1 100\n")
    spec = MachineSpec.parse(RING, options={"failure_trace": str(path)})
    jobs = Jobs.create([1, 2, 3], [0.0, 0.0, 20.0], [50.0, 50.0, 30.0], [50.0] * 3,
                       [8, 8, 16])
    result = simulate(jobs, spec, "fcfs")
    start = result.jobs.column("start_s").to_pylist()
    assert start == [0.0, 10.0, 50.0]
    assert result.jobs.column("failures_hit").to_pylist() == [0, 1, 0]
    log = result.placements
    last = {int(j): units_of(m) for j, m in zip(log.job_id, log.masks, strict=True)}
    assert last[3] == cube(0) | cube(3) and last[2] == cube(2)
    implementation = spec.implementation
    masks, units = implementation.failure_domains(implementation.build(spec, jobs)[0])
    assert units.tolist() == [8] * 4 and units_of(masks[1]) == cube(1)
    assert result.summary["failed"] == pytest.approx(8 * 70 / (32 * 80))  # makespan 80 s


@pytest.mark.parametrize("allocator", ["any-cubes", "cube-boxes"])
def test_invariants_on_a_real_trace_with_failures(trace_excerpt, allocator):
    # SDSC-SP2 (128 processors) on 4x2x2 cubes of 2x2x2 chips; a chip fails every 2e6 s
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    spec = MachineSpec.parse("cubes:4x2x2:2", allocator,
                             options={"unit_mtbf_s": 2e6, "repair_s": 7200})
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, offered_load=0.9), spec, seed=4)
    result = simulate(jobs, spec, "backfill", seed=4)
    s = result.summary
    assert s["failures"] > 5 and s["runs_cut_short"] > 0
    struct, size, _ = spec.implementation.build(spec, jobs)
    masks, units = spec.implementation.failure_domains(struct)
    events = draw(FailureProcess.of(spec), units, 4, float(jobs.submit_s[0]), 1e9)
    assert check_outages(result, masks, events[:3]) == len(jobs) + s["runs_cut_short"]
    alloc = dict(zip(result.jobs.column("job_id").to_pylist(),
                     result.jobs.column("alloc_size").to_pylist(), strict=True))
    shapes = cube_shapes((4, 2, 2))
    for row, job in zip(result.placements.bits(), result.placements.job_id, strict=True):
        chips = alloc[int(job)]
        assert cube_placement_ok(set(np.flatnonzero(row).tolist()), chips, 8, (4, 2, 2),
                                 allocator == "cube-boxes", tuple(shapes[chips // 8]))
    assert sorted(alloc.values()) == sorted(size.tolist())
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)
    assert s["resources_left_busy"] == 0
