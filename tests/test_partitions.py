"""Largest free partition: brute force, Projection of Partitions, box scan, bit rows agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.machines.boxes import partitions
from simcore.machines.boxes.allocator import box_table, extents

METHODS = [partitions.pop, partitions.boxscan, partitions.bitrows]


@st.composite
def occupancies(draw, max_side=5):
    dims = tuple(draw(st.integers(1, max_side)) for _ in range(3))
    return draw(arrays(np.bool_, dims)), draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(occupancies())
def test_methods_agree_with_bruteforce(case):
    occupied, wrap = case
    expected = partitions.bruteforce(occupied, wrap)
    for method in METHODS:
        assert method(occupied, wrap) == expected, method.__name__


@pytest.mark.parametrize("wrap", [True, False])
def test_bgl_scale_random_occupancies(wrap):
    rng = np.random.default_rng(7)
    for _ in range(40):
        occupied = rng.random((4, 4, 8)) < rng.uniform(0.05, 0.95)
        expected = partitions.bruteforce(occupied, wrap)
        assert [m(occupied, wrap) for m in METHODS] == [expected] * len(METHODS)


def test_hand_checked_grids():
    empty = np.zeros((4, 4, 8), dtype=bool)
    assert partitions.pop(empty, True) == 128
    one = empty.copy()
    one[0, 0, 0] = True
    # torus: 4x4x7 avoids the occupied unit by wrapping; mesh: the same, starting at z=1
    assert partitions.pop(one, True) == 112
    assert partitions.pop(one, False) == 112
    ring = np.ones((4, 4, 1), dtype=bool)
    ring[[3, 0], 2, 0] = False  # free units (3,2) and (0,2): adjacent only around the torus
    assert partitions.bruteforce(ring, True) == 2
    assert partitions.bruteforce(ring, False) == 1
    # a 4x5 plane with row y=0, column x=0 and unit (2,4) taken: best is x 1..3, y 1..3
    plane = np.zeros((4, 5, 1), dtype=bool)
    plane[:, 0, 0] = True
    plane[0, :, 0] = True
    plane[2, 4, 0] = True
    assert partitions.pop(plane, False) == partitions.bruteforce(plane, False) == 9


def test_box_table_order_and_count():
    table = box_table((4, 4, 8), True)
    per_dim = [len(extents(n, True)) for n in (4, 4, 8)]
    assert per_dim == [13, 13, 57]
    assert table.masks.shape == (13 * 13 * 57, 2)
    assert (np.diff(table.volume) <= 0).all()
    assert table.volume[0] == 128 and table.volume[-1] == 1
    assert len({m.tobytes() for m in table.masks}) == table.masks.shape[0], "boxes distinct"
    # sizes no box has: primes above every side, e.g. 17 (18 = 3x3x2 exists)
    assert not table.feasible[17] and table.feasible[18]
