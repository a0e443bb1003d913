"""Chu's 2D-mesh allocators: hand-checked placements, the thesis's worked examples, and
every allocator against a plain-Python reference (tests/reference_mesh.py) on drawn
occupancies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.jobs.jobs import Jobs
from simcore.machines.mesh2d.eet import side_tectd
from simcore.machines.mesh2d.grid import busy_list, write_rect
from simcore.machines.registry import ALLOCATORS
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from simcore.tools.probe import Probe
from tests import reference_mesh as ref

SUBMESH = [name for name, row in ALLOCATORS.items() if "submeshes" in row.capabilities]
COMPLETE = [name for name in SUBMESH if "partitions" in ALLOCATORS[name].capabilities]
ROTATES = {"ff-rot", "bf-rot", "as", "bl", "bl-mod", "eet-sb", "eet-sc", "bdi"}


def probe(allocator, dims, running, job, waiting=(), now=0.0, estimates=None, options=None):
    """Place `job` (w, h) with `running` (x, y, w, h, ect) allocated at time 0 in list order
    (their estimates are their ECTs), and `waiting` (w, h) jobs queued behind it; `options`:
    the allocator's."""
    shapes = [(w, h) for _, _, w, h, _ in running] + [job] + list(waiting)
    est = [ect for *_, ect in running] + [1.0 if estimates is None else estimates] + \
        [1.0] * len(waiting)
    p = Probe(allocator, dims, shapes, estimates=est, options=options)
    p.occupy([(k, (x, y, w, h), 0.0) for k, (x, y, w, h, _) in enumerate(running)])
    j = len(running)
    p.wait([j, *range(j + 1, j + 1 + len(waiting))])
    return p.place(j, now)


def test_ff_takes_the_smallest_x_then_the_largest_y():
    """4x4, <0,0,1,1> busy. J(2,3): bases x = 0, 1 overlap it; x = 2 fits at y = 0 and 1,
    the largest is 1. J(1,1): x = 0 is free at y = 2, 3: the largest, 3."""
    busy = [(0, 0, 2, 2, 5.0)]
    assert probe("ff", "mesh:4x4", busy, (2, 3)) == (2, 1, 2, 3)
    assert probe("ff", "mesh:4x4", busy, (1, 1)) == (0, 3, 1, 1)
    assert probe("ff", "mesh:4x4", busy, (3, 3)) is None
    assert probe("ff-rot", "mesh:4x4", busy, (4, 2)) == (0, 2, 4, 2)
    assert probe("ff-rot", "mesh:4x4", [(0, 0, 2, 4, 5.0)], (4, 2)) == (2, 0, 2, 4)


def test_bf_scores_corners_by_busy_neighbours_then_area():
    """5x5 with <2,0,2,2> busy. J(2,1)'s coverage array (bases x <= 3, y <= 4) has 1s at
    x = 1, 2 for y <= 2. Its corners: <0,4> (left and top beyond C: score 2, area 4 x 5),
    <0,0> (left, bottom and C[1,0]: 3, area 1 x 5), <3,4> (2, area 20), <3,0> (3, area 5).
    <0,0> and <3,0> tie on score and area: the first in First Fit's order, <0,0>, wins.
    A lone free node fenced by busy ones and the edges is a corner of score 4."""
    assert probe("bf", "mesh:5x5", [(2, 0, 1, 3, 5.0)], (2, 1)) == (0, 0, 2, 1)
    hole = [(3, 3, 1, 2, 5.0), (4, 3, 1, 1, 5.0)]
    assert probe("bf", "mesh:5x5", hole, (1, 1)) == (4, 4, 1, 1)


def test_frame_sliding_misses_a_free_submesh():
    """3x2 with <0,0> busy: the frames of J(3,1) start at the lowest leftmost free node
    <1,0> and move by 3 columns, so every frame sits at column 1, where a 3-wide frame
    leaves the mesh: the free row <0,1,2,1> is missed. First Fit finds it."""
    busy = [(0, 0, 1, 1, 5.0)]
    assert ref.exists(busy, 3, 2, 3, 1, rotate=False)
    assert probe("fs", "mesh:3x2", busy, (3, 1)) is None
    assert probe("ff", "mesh:3x2", busy, (3, 1)) == (0, 1, 3, 1)
    assert probe("fs", "mesh:3x2", busy, (2, 1)) == (1, 0, 2, 1)


def test_2dbs_gives_the_lower_left_block_of_the_smallest_free_list():
    """8x8 with <0,0,2,2> busy, inside the lower-left 4x4 quadrant. The free lists: 4x4
    blocks <4,0>, <0,4>, <4,4>; no free 2x2 block (each 2x2 block of the quadrant holds a
    busy node); 1x1 blocks: the free nodes of the quadrant. J(3,2) needs level 2 (4x4):
    the first 4x4 block in Z order, <4,0>. J(2,2) (level 1): the 2x2 list is empty, so the
    4x4 <4,0> is split and the job gets its lower-left 2x2. J(1,1): the 1x1 list holds
    <3,0>, <3,1>, <0,3>, ...; the first in Z order is <3,0> (Morton code 5)."""
    busy = [(0, 0, 3, 3, 5.0)]
    assert probe("2dbs", "mesh:8x8", busy, (3, 2)) == (4, 0, 4, 4)
    assert probe("2dbs", "mesh:8x8", busy, (2, 2)) == (4, 0, 2, 2)
    assert probe("2dbs", "mesh:8x8", busy, (1, 1)) == (3, 0, 1, 1)
    assert probe("2dbs", "mesh:8x8", [], (5, 1)) == (0, 0, 8, 8)
    with pytest.raises(SpecError, match="2dbs needs a square mesh whose side is a power"):
        probe("2dbs", "mesh:8x6", [], (1, 1))


def test_adaptive_scan_goes_bottom_up_then_rotates():
    """6x4 with A = <0,0,1,3> and B = <4,0,5,1> busy. J(2,3), row 0: <0,0> lies in A's
    coverage, the scan jumps to x = 2, which is free. J(4,2): rows 0 and 1 meet B after
    the jump past A; row 2: <2,2>. J(3,3) finds nothing either way. On 6x3 with <0,0,1,2>
    busy, J(3,4) does not fit upright; rotated, J(4,3) fits at <2,0>."""
    busy = [(0, 0, 2, 4, 5.0), (4, 0, 2, 2, 5.0)]
    assert probe("as", "mesh:6x4", busy, (2, 3)) == (2, 0, 2, 3)
    assert probe("as", "mesh:6x4", busy, (4, 2)) == (2, 2, 4, 2)
    assert probe("as", "mesh:6x4", busy, (3, 3)) is None
    assert probe("as", "mesh:6x3", [(0, 0, 2, 3, 5.0)], (3, 4)) == (2, 0, 4, 3)


def test_busy_list_counts_edges_and_takes_the_first_best_candidate():
    """6x6 with A = <0,0,2,2> busy. J(2,2): the free mesh corners <4,0>, <0,4>, <4,4>
    have value 4 (two edges), as have A's candidates against the edges; the first
    generated, the mesh corner <4,0>, wins. With B = <4,0,5,1> busy too, <4,0> overlaps
    B; the best free positions have value 4 again and the first candidate among them is
    the mesh corner <0,4>. A 1x2 job fits between A and B: value 2 (A) + 2 (B) + 1
    (bottom edge) = 5. Without edge contacts (`edges: false`) the mesh corners are worth
    0 and A's first east candidate wins: <3,0> with A alone (2), <3,2> beside B (1 + 1)."""
    a, b = (0, 0, 3, 3, 5.0), (4, 0, 2, 2, 6.0)
    assert probe("bl", "mesh:6x6", [a], (2, 2)) == (4, 0, 2, 2)
    assert probe("bl", "mesh:6x6", [a, b], (2, 2)) == (0, 4, 2, 2)
    assert probe("bl-mod", "mesh:6x6", [a, b], (2, 2)) == (0, 4, 2, 2)
    assert probe("bl", "mesh:6x6", [a, b], (1, 2)) == (3, 0, 1, 2)
    assert probe("bl-mod", "mesh:6x6", [a, b], (1, 2)) == (3, 0, 1, 2)
    for allocator in ("bl", "bl-mod"):
        assert probe(allocator, "mesh:6x6", [a], (2, 2), options={"edges": False}) == \
            (3, 0, 2, 2)
        assert probe(allocator, "mesh:6x6", [a, b], (2, 2), options={"edges": False}) == \
            (3, 2, 2, 2)


def test_the_tie_rule_among_equal_boundary_values_decides_the_placement():
    """The busy list's readings differ in which candidate of the highest boundary value
    wins. 6x6, A = <0,0,2,2>, B = <4,0,5,1> busy, J(2,2); four free positions reach the
    highest value, 4, two of them mesh corners:

        5  . . . . . .      c = <0,4,1,5>: mesh corner, west and north edges (4)
        4  c c . . d d      d = <4,4,5,5>: mesh corner, east and north edges (4)
        3  . . . . e e      a = <0,3,1,4>: west edge (2) + A below (2)
        2  A A A . e e      e = <4,2,5,3>: east edge (2) + B below (2)
        1  A A A . B B
        0  A A A . B B
           0 1 2 3 4 5

    `bl` and `bl-mod` generate the mesh corners first and take c. With the mesh corners
    after the busy list's candidates (`mesh_corners: last`), A's north side comes first
    and gives a; so does BL-mod scanning every position by x, then y (`positions:
    anywhere`). a leaves <0,5,1,5>, a 2 x 1 strip between it and the north edge, that only
    jobs of height 1 can use; c leaves none. Over Chu's uniform workload at load 0.5,
    putting the mesh corners last raises BL's mean response by a third (docs/chu.md)."""
    running = [(0, 0, 3, 3, 5.0), (4, 0, 2, 2, 6.0)]
    busy = ref.nodes(running)
    values = {(x, y): ref.boundary(busy, 6, 6, x, y, 2, 2) for x, y in ref.bases(busy, 6, 6, 2, 2)}
    assert max(values.values()) == 4
    assert {k for k, v in values.items() if v == 4} == {(0, 4), (4, 4), (0, 3), (4, 2)}
    for allocator in ("bl", "bl-mod"):
        assert probe(allocator, "mesh:6x6", running, (2, 2)) == (0, 4, 2, 2)
        assert probe(allocator, "mesh:6x6", running, (2, 2),
                     options={"mesh_corners": "last"}) == (0, 3, 2, 2)
    assert probe("bl-mod", "mesh:6x6", running, (2, 2), options={"positions": "anywhere"}) \
        == (0, 3, 2, 2)


def test_bdi_readings_of_rotation_and_distance():
    """Two readings of chapter 8 against Fig. 8.3's. 4x4 with a wall A = <1,0,1,3>:
    J(2,1) fits only right of it, at <2,0> (BDI 1 + 1 + 1 + 1 + 1/4 + 1 + 1/4 + 1 = 6.5,
    tied with <2,3>; the first wins). Scoring J(1,2) too (`rotation: both`): <0,0,0,1>
    between the west edge and the wall has 1 + 1 + 1 + 1 + 1/3 + 1 + 1/3 + 1 = 6.67 and
    wins, leaving columns 2-3 whole.
    4x4 with B = <0,2,2,3> busy, J(1,2): along rows and columns, <3,2,3,3> (its corners
    touch B, the east and north edges; 1/3 twice down column 3) has 6.67 and beats
    <0,0,0,1> (6 + 1/4 + 1/4 east along rows 0 and 1). Counting the nearest busy node of
    each half-plane (`distance: half-plane`), <0,0>'s east distances shrink to 3 (to
    <1,2>) and 2: 6 + 1/3 + 1/2 = 6.83, and it wins."""
    wall = [(1, 0, 1, 4, 5.0)]
    assert probe("bdi", "mesh:4x4", wall, (2, 1)) == (2, 0, 2, 1)
    assert probe("bdi", "mesh:4x4", wall, (2, 1), options={"rotation": "both"}) == (0, 0, 1, 2)
    busy = ref.nodes(wall)
    assert ref.bdi_value(busy, 4, 4, 2, 0, 2, 1) == 6.5
    assert round(ref.bdi_value(busy, 4, 4, 0, 0, 1, 2), 2) == 6.67
    block = [(0, 2, 3, 2, 5.0)]
    busy = ref.nodes(block)
    assert round(ref.bdi_value(busy, 4, 4, 3, 2, 1, 2), 2) == 6.67
    assert ref.bdi_value(busy, 4, 4, 0, 0, 1, 2) == 6.5
    assert round(ref.bdi_value(busy, 4, 4, 0, 0, 1, 2, "half-plane"), 2) == 6.83
    assert probe("bdi", "mesh:4x4", block, (1, 2)) == (3, 2, 1, 2)
    assert probe("bdi", "mesh:4x4", block, (1, 2), options={"distance": "half-plane"}) == \
        (0, 0, 1, 2)


def test_bdi_scores_the_free_regions_corners_best_fits_or_the_busy_lists_candidates():
    """Section 8.3's check: BDI over other candidate sets. 8x8 with B1 = <5,3,5,4> and B2 =
    <7,6,7,7> busy, J(2,2). Free regions (B1's coverage <4,2,5,4> split left, right, below,
    above, then B2's <6,5,7,7> cut from the right one): <0,0,3,6>, <6,0,6,4>, <4,0,5,1>,
    <4,5,5,6>, whose corners are 12 bases. Best Fit's corners of the coverage array: <0,6>,
    <0,0>, <5,6>, <5,5>, <6,4>, <6,0>. The busy list's: the free mesh corners <0,0>, <6,0>,
    <0,6>, then the free positions along B1's east side <6,2..4>, north <4..5,5>, west
    <3,2..4>, south <4..5,1>, and B2's west side <5,5..6> (north and east leave the mesh;
    south: <6,4>).
    Regions and Best Fit both take <5,6>: BDI = 1/2 (LLS, B1 two rows down) + 1/6 + 1/7
    + 1 (B2) + 1 + 1/6 + 1 + 1 (B2) = 4.98. The busy list's <6,3>, between B1 and the east
    edge, no region's corner, has 1/4 + 1 + 1/4 + 1 + 1/4 + 1 + 1/2 (B2 two rows up) + 1 =
    5.25, the highest of any free base, and wins."""
    running = [(5, 3, 1, 2, 5.0), (7, 6, 1, 2, 5.0)]
    assert set(ref.bdi_candidates(running, 8, 8, 2, 2)) == {
        (0, 0), (3, 0), (0, 6), (3, 6), (6, 0), (6, 4), (4, 0), (5, 0), (4, 1), (5, 1),
        (4, 5), (5, 5), (4, 6), (5, 6)}
    assert ref.bdi_candidates(running, 8, 8, 2, 2, "best-fit") == [
        (0, 6), (0, 0), (5, 6), (5, 5), (6, 4), (6, 0)]
    assert ref.bdi_candidates(running, 8, 8, 2, 2, "busy-list") == [
        (0, 0), (6, 0), (0, 6), (6, 2), (6, 3), (6, 4), (4, 5), (5, 5), (3, 2), (3, 3),
        (3, 4), (4, 1), (5, 1), (5, 5), (5, 6), (6, 4)]
    busy = ref.nodes(running)
    assert round(ref.bdi_value(busy, 8, 8, 5, 6, 2, 2), 2) == 4.98
    assert ref.bdi_value(busy, 8, 8, 6, 3, 2, 2) == 5.25
    assert ref.bdi_value(busy, 8, 8, 6, 3, 2, 2) == max(
        ref.bdi_value(busy, 8, 8, x, y, 2, 2) for x, y in ref.bases(busy, 8, 8, 2, 2))
    assert probe("bdi", "mesh:8x8", running, (2, 2)) == (5, 6, 2, 2)
    assert probe("bdi", "mesh:8x8", running, (2, 2), options={"candidates": "best-fit"}) == \
        (5, 6, 2, 2)
    assert probe("bdi", "mesh:8x8", running, (2, 2), options={"candidates": "busy-list"}) \
        == (6, 3, 2, 2)


def test_lookahead_policies_pick_regions_by_base_area_and_the_largest_waiting_job():
    """5x5 with a wall <1,0,1,4>. J(1,2)'s free regions: <0,0,0,3> (area 4) and <2,0,4,3>
    (area 12): first fit and best fit take the left one, worst fit the right. A waiting
    3x5 job fits only right of the wall, so WFL(1) leaves that region to it; a 4x5 job fits
    nowhere, so WFL(1) falls back to the largest region. With the wall and <2,3,4,4> busy,
    the regions are <0,0,0,3> (4) and <2,0,4,1> (6); a waiting 1x5 job fits only in
    column 0, so BFL(1) takes the larger region instead of the smallest."""
    wall = [(1, 0, 1, 5, 5.0)]
    assert ref.regions(wall, 5, 5, 1, 2) == [(0, 0, 0, 3), (2, 0, 4, 3)]
    assert probe("la-ff", "mesh:5x5", wall, (1, 2)) == (0, 0, 1, 2)
    assert probe("la-bf", "mesh:5x5", wall, (1, 2)) == (0, 0, 1, 2)
    assert probe("la-wf", "mesh:5x5", wall, (1, 2)) == (2, 0, 1, 2)
    assert probe("wfl1", "mesh:5x5", wall, (1, 2), waiting=[(3, 5)]) == (0, 0, 1, 2)
    assert probe("wfl1", "mesh:5x5", wall, (1, 2), waiting=[(4, 5)]) == (2, 0, 1, 2)
    shelf = [*wall, (2, 3, 3, 2, 5.0)]
    assert probe("la-bf", "mesh:5x5", shelf, (1, 2), waiting=[(1, 5)]) == (0, 0, 1, 2)
    assert probe("bfl1", "mesh:5x5", shelf, (1, 2), waiting=[(1, 5)]) == (2, 0, 1, 2)
    assert probe("bfl1", "mesh:5x5", shelf, (1, 2), waiting=[(2, 2)]) == (0, 0, 1, 2)


def test_eet_candidate_sums_follow_the_thesis_figure_7_1():
    """8x8 (Fig. 7.1): X = <0,4,7,7> (ECT x) above, Y = <3,2,3,3> (ECT y); Z asks for 3 x 4
    with estimate z', z = t + z'. A = <0,0,2,3> touches X along 3 nodes, Y along 2, has 2
    free neighbours and 7 beyond the edges: 3|z-x| + 2|z-y| + 2z'. B = <5,0,7,3>:
    3|z-x| + 4z'. An overdue neighbour (ECT before t) counts as ending at t: the thesis's
    three cases x, y > t; x < t < y; x, y < t."""
    for t, x, y in ((10.0, 15.0, 13.0), (10.0, 8.0, 13.0), (10.0, 7.0, 9.0)):
        z_est = 4.0
        z = t + z_est
        p = Probe("eet-sb", "mesh:8x8", [(8, 4), (1, 2), (3, 4)], estimates=[x, y, z_est])
        p.occupy([(0, (0, 4, 8, 4), 0.0), (1, (3, 2, 1, 2), 0.0)])
        mesh = p.machine.mesh
        n = busy_list(mesh, p.state, p.state.run.occ, p.state.scratch.nothing)
        ectd_x, ectd_y = abs(z - max(x, t)), abs(z - max(y, t))
        assert side_tectd(mesh, n, 0, 0, 2, 3, t, z_est) == 3 * ectd_x + 2 * ectd_y + 2 * z_est
        assert side_tectd(mesh, n, 5, 0, 7, 3, t, z_est) == 3 * ectd_x + 4 * z_est
    # X ends at 14.5, near z = 14, Y at 30: A's 2|z - y| = 32 loses to B's two more free
    # neighbours (8 in all); the rotated 4 x 3 candidates touch no X and lose too
    running = [(0, 4, 8, 4, 14.5), (3, 2, 1, 2, 30.0)]
    for allocator, reference in (("eet-sb", ref.eet_sb), ("eet-sc", ref.eet_sc)):
        choice = probe(allocator, "mesh:8x8", running, (3, 4), now=10.0, estimates=4.0)
        assert choice == reference(running, 8, 8, 3, 4, 10.0, 4.0) == (5, 0, 3, 4)
    # Y ending with Z (y = 14) makes A's sum the least
    running = [(0, 4, 8, 4, 14.5), (3, 2, 1, 2, 14.0)]
    assert probe("eet-sb", "mesh:8x8", running, (3, 4), now=10.0, estimates=4.0) == \
        (0, 0, 3, 4)


#: A 10x10 occupancy with every property the thesis states of its Fig. 8.1, whose busy
#: array the OCR lost (a reconstruction: the figure's top row, 1000000011, is kept).
FIGURE_8_1 = [(0, 4, 4, 1), (0, 8, 1, 2), (8, 8, 2, 2), (5, 3, 4, 1), (7, 2, 3, 1),
              (9, 4, 1, 3), (8, 7, 1, 1), (4, 0, 1, 1), (4, 2, 1, 1)]


def test_figure_8_1():
    """J(3,3) on Fig. 8.1: Best Fit finds two 3-corners, C[0,5] of area 6 and C[6,4] of
    area 3, and takes C[6,4]; the highest boundary value is 7, reached by <0,5,2,7> and
    <6,4,8,6> (BL takes the first it meets); BDI(<0,0,2,2>) = 1 + 1 + 1 + 1 + four 1/2 =
    6 and BDI(<0,5,2,7>) = 5.64, and BDI takes <0,0,2,2>, leaving the larger space."""
    running = [(*r, 5.0) for r in FIGURE_8_1]
    busy = ref.nodes(running)
    corners = {(x, y): (score, area) for x, y, score, area in ref._corners(busy, 10, 10, 3, 3)}
    assert {k: v for k, v in corners.items() if v[0] >= 3} == {(0, 5): (3, 6), (6, 4): (3, 3)}
    assert probe("bf", "mesh:10x10", running, (3, 3)) == (6, 4, 3, 3)
    values = {(x, y): ref.boundary(busy, 10, 10, x, y, 3, 3)
              for x, y in ref.bases(busy, 10, 10, 3, 3)}
    assert max(values.values()) == values[(0, 5)] == values[(6, 4)] == 7
    assert probe("bl", "mesh:10x10", running, (3, 3)) == (0, 5, 3, 3)
    assert probe("bl-mod", "mesh:10x10", running, (3, 3)) == (0, 5, 3, 3)
    assert ref.bdi_value(busy, 10, 10, 0, 0, 3, 3) == 6.0
    assert round(ref.bdi_value(busy, 10, 10, 0, 5, 3, 3), 2) == 5.64
    assert probe("bdi", "mesh:10x10", running, (3, 3)) == (0, 0, 3, 3)


HALVES = st.integers(0, 40).map(lambda k: k / 2)


@st.composite
def occupancies(draw, square=False):
    """(W, H, running, job): up to 7 non-overlapping busy submeshes with drawn ECTs, and a
    job (w, h) whose submesh, or the rotated one, fits the mesh. Times are halves, so that
    sums of ECT differences are exact and ties are ties in both implementations."""
    if square:
        width = height = draw(st.sampled_from([4, 8]))
    else:
        width, height = draw(st.integers(2, 9)), draw(st.integers(2, 9))
    running = []
    for _ in range(draw(st.integers(0, 7))):
        w, h = draw(st.integers(1, width)), draw(st.integers(1, height))
        x, y = draw(st.integers(0, width - w)), draw(st.integers(0, height - h))
        if ref.free(ref.nodes(running), width, height, x, y, w, h):
            running.append((x, y, w, h, draw(HALVES)))
    w, h = draw(st.integers(1, width)), draw(st.integers(1, height))
    return width, height, running, ((h, w) if draw(st.booleans()) else (w, h))


PLAIN = {"ff": ref.first_fit, "bf": ref.best_fit, "as": ref.adaptive_scan,
         "fs": ref.frame_sliding, "bl": ref.busy_list, "bl-mod": ref.busy_list_modified,
         "bdi": ref.bdi}
LOOKAHEAD = ("la-ff", "la-bf", "la-wf", "bfl1", "wfl1")


def reference(allocator, running, W, H, w, h, waiting, now, est):
    """The plain-Python reference's placement for `allocator`."""
    if allocator in ("ff-rot", "bf-rot"):
        return PLAIN[allocator[:2]](running, W, H, w, h, rotate=True)
    if allocator in LOOKAHEAD:
        return ref.lookahead(running, W, H, w, h, allocator, waiting)
    if allocator in ("eet-sb", "eet-sc"):
        return (ref.eet_sb if allocator == "eet-sb" else ref.eet_sc)(running, W, H, w, h,
                                                                      now, est)
    return PLAIN[allocator](running, W, H, w, h)


@pytest.mark.parametrize("allocator", [a for a in SUBMESH if a != "2dbs"])
@settings(max_examples=150, deadline=None)
@given(case=occupancies(), waiting=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)),
                                            max_size=3),
       now=HALVES, est=HALVES)
def test_allocator_matches_its_reference(allocator, case, waiting, now, est):
    width, height, running, (w, h) = case
    if allocator not in ROTATES and (w > width or h > height):
        w, h = h, w
    waiting = [(min(a, width), min(b, height)) for a, b in waiting]
    got = probe(allocator, f"mesh:{width}x{height}", running, (w, h), waiting, now, est)
    assert got == reference(allocator, running, width, height, w, h, waiting, now, est)
    if got is not None:
        assert ref.free(ref.nodes(running), width, height, *got)
        assert (got[2], got[3]) in ((w, h), (h, w))
    if allocator in COMPLETE:
        assert (got is not None) == ref.exists(running, width, height, w, h,
                                               rotate=allocator in ROTATES)
    if allocator == "bl-mod" and got is not None:  # the highest value of any free position
        busy = ref.nodes(running)
        assert ref.boundary(busy, width, height, *got) == max(
            ref.boundary(busy, width, height, x, y, cw, ch)
            for cw, ch in ref.turns(w, h, True) for x, y in ref.bases(busy, width, height, cw, ch))


READINGS = [
    ("bl", {"edges": False}, lambda *a: ref.busy_list(*a, edges=False)),
    ("bl", {"mesh_corners": "last"}, lambda *a: ref.busy_list(*a, corners_last=True)),
    ("bl-mod", {"mesh_corners": "last", "edges": False},
     lambda *a: ref.busy_list_modified(*a, edges=False, corners_last=True)),
    ("bl-mod", {"positions": "anywhere"}, ref.busy_list_anywhere),
    ("bl-mod", {"positions": "anywhere", "edges": False},
     lambda *a: ref.busy_list_anywhere(*a, edges=False)),
    ("bdi", {"rotation": "both"}, lambda *a: ref.bdi(*a, rotation="both")),
    ("bdi", {"distance": "half-plane"}, lambda *a: ref.bdi(*a, distance="half-plane")),
    ("bdi", {"candidates": "busy-list"}, lambda *a: ref.bdi(*a, candidates="busy-list")),
    ("bdi", {"candidates": "best-fit", "rotation": "both"},
     lambda *a: ref.bdi(*a, candidates="best-fit", rotation="both")),
]


@pytest.mark.parametrize(("allocator", "options", "reference_rule"), READINGS,
                         ids=[f"{a}-{'-'.join(map(str, o.values()))}" for a, o, _ in READINGS])
@settings(max_examples=60, deadline=None)
@given(case=occupancies())
def test_reading_options_match_their_reference(allocator, options, reference_rule, case):
    """The options that read the thesis otherwise (docs/chu.md), against the reference."""
    width, height, running, (w, h) = case
    got = probe(allocator, f"mesh:{width}x{height}", running, (w, h), options=options)
    assert got == reference_rule(running, width, height, w, h)
    assert (got is not None) == ref.exists(running, width, height, w, h, rotate=True)


@settings(max_examples=150, deadline=None)
@given(case=occupancies(square=True))
def test_2dbs_matches_its_reference(case):
    side, _, running, (w, h) = case
    got = probe("2dbs", f"mesh:{side}x{side}", running, (w, h))
    assert got == ref.buddy(running, side, w, h)
    if got is not None:
        assert ref.free(ref.nodes(running), side, side, *got)
        assert got[2] >= max(w, h) and got[0] % got[2] == 0 and got[1] % got[2] == 0


@pytest.mark.parametrize("allocator", SUBMESH)
def test_forbidden_processors_are_never_placed_on(allocator):
    """4x4 with <0,0,1,1> busy and <2,0,3,3> forbidden (a reservation): a 2x2 job can only
    go to <0,2,1,3>, and every allocator finds it there."""
    p = Probe(allocator, "mesh:4x4", [(2, 2), (2, 2)])
    p.occupy([(0, (0, 0, 2, 2), 0.0)])
    forbidden = np.zeros_like(p.mask)
    write_rect(p.machine.mesh, 2, 0, 2, 4, forbidden)
    assert p.place(1, forbidden=forbidden) == (0, 2, 2, 2)
    assert p.place(1) is not None


@pytest.mark.parametrize("allocator", SUBMESH)
def test_allocators_refuse_machines_that_are_not_2d_meshes(allocator):
    jobs = Jobs.create([1], [0.0], [1.0], [1.0], [1])
    with pytest.raises(SpecError, match=f"allocator {allocator} needs a 2D mesh"):
        build(allocator, "mesh:4x4x2", jobs)
    with pytest.raises(SpecError, match=f"allocator {allocator} works on mesh machines"):
        build(allocator, "torus:4x4", jobs)


def test_a_job_no_submesh_holds_is_refused():
    jobs = Jobs.create([7], [0.0], [1.0], [1.0], [5], shape=np.array([[5, 1, 1]]),
                       torus=np.zeros(1, bool))
    with pytest.raises(SpecError, match=r"job 7 asks for a 5 x 1 submesh; machine "
                                        r"mesh:4x8 allocator=ff has none \(this allocator "
                                        r"does not rotate\)"):
        build("ff", "mesh:4x8", jobs)
    result = simulate(jobs, MachineSpec.parse("mesh:4x8", "as"), "fcfs")
    assert result.summary["jobs"] == 1  # rotated: 1 x 5 in a column


def build(allocator, machine, jobs):
    spec = MachineSpec.parse(machine, allocator)
    return spec.implementation.build(spec, jobs)
