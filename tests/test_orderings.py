"""Processor orderings: registered curves, ordering files, and machines that use them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.machines.curves.orderings import (
    ORDERINGS,
    hilbert,
    hilbert_points,
    order_of,
    read_ordering_file,
    snake,
    write_ordering_file,
)
from simcore.machines.spec import MachineSpec


def coords(order, sides):
    order = np.asarray(order)
    return np.stack([order % sides[0], order // sides[0] % sides[1],
                     order // (sides[0] * sides[1])], axis=1)


def steps(order, sides):
    """L1 length of each step between consecutive ranks."""
    return np.abs(np.diff(coords(order, sides), axis=0)).sum(axis=1)


sides_3d = st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 6))


@settings(max_examples=60, deadline=None)
@given(sides=sides_3d, name=st.sampled_from(sorted(ORDERINGS)))
def test_every_ordering_is_a_permutation(sides, name):
    order = ORDERINGS[name].order(sides)
    assert sorted(order.tolist()) == list(range(sides[0] * sides[1] * sides[2]))


@settings(max_examples=60, deadline=None)
@given(sides=sides_3d)
def test_snake_moves_to_a_neighbour_at_every_step(sides):
    assert (steps(snake(sides), sides) == 1).all()


def test_row_major_and_snake_by_hand():
    assert ORDERINGS["row-major"].order((3, 2, 1)).tolist() == [0, 1, 2, 3, 4, 5]
    # 3x2x2: plane 0 rows y=0 (x up), y=1 (x down); plane 1 rows y=1 (x up), y=0 (x down)
    assert snake((3, 2, 2)).tolist() == [0, 1, 2, 5, 4, 3, 9, 10, 11, 8, 7, 6]


def test_hilbert_test_vectors():
    """The orientation documented in hilbert_points: from the origin to (2^b - 1, 0[, 0])."""
    assert hilbert_points(1, 2).tolist() == [[0, 0], [0, 1], [1, 1], [1, 0]]
    assert hilbert_points(1, 3).tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 1], [0, 1, 0],
                                             [1, 1, 0], [1, 1, 1], [1, 0, 1], [1, 0, 0]]
    assert hilbert_points(2, 2).tolist() == [
        [0, 0], [1, 0], [1, 1], [0, 1], [0, 2], [0, 3], [1, 3], [1, 2],
        [2, 2], [2, 3], [3, 3], [3, 2], [3, 1], [2, 1], [2, 0], [3, 0]]
    # indices x + 4y on the 4x4 machine: the same curve
    assert hilbert((4, 4, 1)).tolist() == [0, 1, 5, 4, 8, 12, 13, 9, 10, 14, 15, 11, 7, 6, 2, 3]


@pytest.mark.parametrize(("bits", "dims"), [(1, 2), (2, 2), (3, 2), (4, 2), (5, 2),
                                            (1, 3), (2, 3), (3, 3), (4, 3)])
def test_hilbert_curves_are_hilbert_curves(bits, dims):
    """Unit steps, and the recursive property that tells a Hilbert curve from any other
    walk with unit steps: every aligned sub-cube of side 2^l is one stretch of the curve."""
    points = hilbert_points(bits, dims)
    assert len({tuple(p) for p in points.tolist()}) == 1 << (bits * dims)
    assert (np.abs(np.diff(points, axis=0)).sum(axis=1) == 1).all()
    for level in range(1, bits):
        blocks = [tuple(b) for b in (points >> level).tolist()]
        runs = [blocks[0]] + [b for a, b in itertools.pairwise(blocks) if a != b]
        assert len(runs) == len(set(runs)) == 1 << ((bits - level) * dims)


@pytest.mark.parametrize("sides", [(2, 2, 1), (4, 4, 1), (8, 8, 1), (16, 16, 1),
                                   (2, 2, 2), (4, 4, 4), (8, 8, 8), (1, 8, 8), (4, 1, 4)])
def test_hilbert_on_power_of_two_squares_and_cubes_has_unit_steps(sides):
    assert (steps(hilbert(sides), sides) == 1).all()


def test_hilbert_on_other_sides_drops_points_of_the_enclosing_cube():
    """8x8x5 lies in the 8x8x8 cube: its ranks follow the cube's curve with z >= 5 left
    out; on a line the curve is the line."""
    cube = coords(hilbert((8, 8, 8)), (8, 8, 8))
    kept = cube[cube[:, 2] < 5]
    assert np.array_equal(coords(hilbert((8, 8, 5)), (8, 8, 5)), kept)
    assert hilbert((7, 1, 1)).tolist() == list(range(7))
    three = hilbert((3, 3, 1))  # the 4x4 curve without x = 3 or y = 3
    assert three.tolist() == [0, 1, 4, 3, 6, 7, 8, 5, 2]


def test_ordering_file_round_trip(tmp_path):
    path = tmp_path / "curve.txt"
    order = hilbert((8, 8, 5))
    write_ordering_file(path, order, comment="Hilbert 8x8x5")
    assert path.read_text().startswith("# Hilbert 8x8x5\n# index rank\n0 0\n")
    assert np.array_equal(read_ordering_file(str(path), 320), order)
    assert np.array_equal(order_of(str(path), (8, 8, 5)), order)


@pytest.mark.parametrize(("text", "message"), [
    ("0 0\n1 1\n2\n", r"f.txt:3: '2'; expected two integers, 'index rank'"),
    ("0 0\n1 x\n", r"f.txt:2: '1 x'; expected two integers"),
    ("0 0\n4 1\n", r"f.txt:2: index 4; expected 0..3 \(the machine has 4 processors\)"),
    ("0 0\n1 -1\n", r"f.txt:2: rank -1; expected 0..3"),
    ("0 0\n0 1\n", r"f.txt:2: index 0 listed twice"),
    ("0 0\n1 0\n", r"f.txt:2: rank 0 given twice \(to indices 0 and 1\)"),
    ("# a comment\n0 3\n1 2\n\n3 0  # trailing\n", r"f.txt: 1 processor\(s\) missing, e.g. "
                                                   r"index 2; expected one line for each of "
                                                   r"the 4"),
])
def test_bad_ordering_files_fail_precisely(tmp_path, text, message):
    path = tmp_path / "f.txt"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        read_ordering_file(str(path), 4)


def test_machine_spec_ordering_text_key_and_config(tmp_path):
    spec = MachineSpec.parse("mesh:8x8x5", "best-fit", ordering="hilbert")
    assert str(spec) == "mesh:8x8x5 allocator=best-fit ordering=hilbert"
    assert spec.to_config() == {"spec": "mesh:8x8x5", "allocator": "best-fit",
                                "ordering": "hilbert"}
    assert MachineSpec.from_config(spec.to_config()) == spec
    default = MachineSpec.parse("torus:4x4", "free-list")
    assert default.ordering == "row-major" and str(default).endswith("ordering=row-major")
    ring = MachineSpec.from_config({"spec": "mesh:8x8x5", "allocator": "first-fit",
                                    "ordering": "snake", "fallback_span": "ring"})
    assert str(ring) == "mesh:8x8x5 allocator=first-fit ordering=snake fallback_span=ring"
    assert ring.option("fallback_span") == "ring" and ring.option("dilation") == 0.0
    assert MachineSpec.from_config(ring.to_config()) == ring
    assert ring.key() != MachineSpec.parse("mesh:8x8x5", "first-fit", ordering="snake").key()
    # an ordering file is part of the key by content
    path = tmp_path / "curve.txt"
    write_ordering_file(path, hilbert((8, 8, 5)))
    by_file = MachineSpec.parse("mesh:8x8x5", "best-fit", ordering=str(path))
    before = by_file.key()
    assert before.startswith(f"mesh:8x8x5 allocator=best-fit ordering={path}#ordering:")
    write_ordering_file(path, snake((8, 8, 5)))
    assert by_file.key() != before
    # machines without an ordered allocator keep their text and key
    assert MachineSpec.parse("torus:4x4x8").key() == "torus:4x4x8"


@pytest.mark.parametrize(("text", "allocator", "ordering", "options", "message"), [
    ("torus:4x4x8", None, "hilbert", {}, r"allocator largest-free uses no processor ordering; "
                                         r"expected one of the allocators \['free-list'"),
    ("mesh:8x8x5", "best-fit", "peano", {}, r"ordering 'peano': no such ordering or file; "
                                            r"expected one of row-major, snake, hilbert"),
    ("mesh:8x8x5", "best-fit", None, {"fallback_span": "square"},
     r"allocator best-fit: fallback_span='square'; expected 'linear' or 'ring'"),
    ("mesh:8x8x5", "free-list", None, {"fallback_span": "ring"},
     r"allocator free-list: parameter\(s\) \['fallback_span'\] do not apply"),
    ("mesh:8x8x5", "best-fit", None, {"dilation": "-1"}, r"dilation='-1'; expected a finite "
                                                         r"number >= 0"),
])
def test_machine_spec_ordering_errors(text, allocator, ordering, options, message):
    with pytest.raises(SpecError, match=message):
        MachineSpec.parse(text, allocator, ordering=ordering, options=options)


def test_ordering_file_of_the_wrong_size_is_refused(tmp_path):
    path = tmp_path / "small.txt"
    write_ordering_file(path, snake((2, 2, 1)))
    with pytest.raises(SpecError, match=r"machine mesh:4x4 allocator=best-fit ordering=.*"
                                        r"small.txt: 12 processor\(s\) missing"):
        MachineSpec.parse("mesh:4x4", "best-fit", ordering=str(path))


def test_unknown_machine_config_key_names_the_allowed_ones():
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['curve'\]; expected spec, "
                                        r"allocator, ordering, fallback_span, dilation"):
        MachineSpec.from_config({"spec": "mesh:4x4", "allocator": "best-fit", "curve": "x"})
