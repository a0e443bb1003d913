"""Placement menu search: box shapes, size sets, candidate files that load as menus, and the
Pareto set (hand-checked and against a plain-Python dominance scan)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SimcoreError, SpecError
from simcore.machines.slurm.menu import load_menu
from simcore.tools.menu_search import (
    box_shape,
    box_volume_at_least,
    candidates,
    pareto,
    size_set,
    write_candidates,
)

DIMS = (8, 4, 4)


def test_box_shape_is_the_most_cubic_box_that_fits():
    assert box_shape(8, DIMS) == (2, 2, 2)
    assert box_shape(32, DIMS) == (4, 4, 2)        # longer sides along x, then y
    assert box_shape(6, DIMS) == (3, 2, 1)
    assert box_shape(7, DIMS) == (7, 1, 1)         # a prime only fits as a line
    assert box_shape(128, DIMS) == (8, 4, 4)
    assert box_shape(44, DIMS) is None             # 44 = 4 * 11: 11 fits along no axis
    assert box_volume_at_least(44, DIMS) == 45     # 5 x 3 x 3


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 128))
def test_box_shape_against_every_box(size):
    boxes = [(a, b, c) for a in range(1, 9) for b in range(1, 5) for c in range(1, 5)
             if a * b * c == size]
    shape = box_shape(size, DIMS)
    if not boxes:
        assert shape is None
        return
    assert shape in boxes
    assert max(shape) == min(max(b) for b in boxes)


def test_size_sets():
    size, run = np.arange(1, 101), np.ones(100)
    assert size_set("pow2", size, run, DIMS) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert size_set("pow4", size, run, DIMS) == [1, 4, 16, 64, 128]
    # percentiles 10..90, 95, 99 of 1..100, each rounded up to a box volume (50 -> 54)
    assert size_set("quantiles", size, run, DIMS) == [1, 10, 20, 30, 40, 54, 60, 72, 80,
                                                      96, 112, 128]
    # all the work in the one long job of size 100 (rounded to 112): every percentile there
    run = np.where(size == 100, 1e9, 1.0)
    assert size_set("work", size, run, DIMS) == [1, 112, 128]
    with pytest.raises(SpecError, match="size set 'cubes'"):
        size_set("cubes", size, run, DIMS)


def test_candidates_load_as_menus(tmp_path):
    size, run = np.array([1, 2, 3, 8, 8, 32]), np.ones(6)
    paths = write_candidates("t", size, run, DIMS, tmp_path, "a note")
    assert len(paths) == len(candidates("t", size, run, DIMS)) == 8
    for path in paths:
        menu = load_menu(str(path))
        torus = menu.toruses[0]
        assert torus.dims == DIMS
        half = path.stem.endswith("-half")
        for p in torus.placements:
            expected = tuple(max(1, d // 2) for d in p.dims) if half else p.dims
            assert p.spacing == expected
        assert max(p.size for p in torus.placements) == 128
        assert "a note" in path.read_text()


def summaries(rows):
    return pl.DataFrame({
        "experiment": ["e"] * len(rows), "workload": ["w"] * len(rows),
        "offered_load": [0.9] * len(rows), "machine": [r[0] for r in rows],
        "machine_spec": [f"slurm-torus3d:{r[0]}.yaml" for r in rows],
        "utilization": [r[1] for r in rows], "mean_wait_s": [r[2] for r in rows]})


def test_pareto_hand_checked():
    table = pareto(summaries([("a", 0.8, 100.0), ("b", 0.7, 50.0), ("c", 0.7, 80.0),
                              ("d", 0.8, 100.0), ("e", 0.6, 10.0), ("a", 0.6, 100.0)]),
                   "e")
    rows = {r["machine"]: r for r in table.iter_rows(named=True)}
    assert rows["a"]["runs"] == 2 and rows["a"]["utilization"] == pytest.approx(0.7)
    # a (0.7, 100) is dominated by b (0.7, 50); c by b; d (0.8, 100) dominates none of b, e
    assert {m for m, r in rows.items() if r["pareto"]} == {"b", "d", "e"}
    assert [m for m, r in rows.items() if r["recommended"]] == ["d"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=8))
def test_pareto_against_a_dominance_scan(points):
    rows = [(f"m{i}", u / 5, float(w)) for i, (u, w) in enumerate(points)]
    table = pareto(summaries(rows), "e")
    front = {r["machine"] for r in table.iter_rows(named=True) if r["pareto"]}
    for name, u, w in rows:
        dominated = any(u2 >= u and w2 <= w and (u2 > u or w2 < w) for _, u2, w2 in rows)
        assert (name in front) != dominated
    best = table.filter(pl.col("recommended"))
    assert best.height == 1 and best["machine"][0] in front
    assert best["utilization"][0] == max(u for _, u, _ in rows)


def test_pareto_refuses_mixed_loads():
    frame = summaries([("a", 0.8, 1.0), ("b", 0.7, 2.0)]).with_columns(
        pl.Series("offered_load", [0.7, 0.9]))
    with pytest.raises(SimcoreError, match="one offered load"):
        pareto(frame, "e")
    with pytest.raises(SimcoreError, match="no runs of experiment 'x'"):
        pareto(frame, "x")


def test_pareto_refuses_an_experiment_of_other_machines():
    frame = summaries([("a", 0.8, 1.0), ("b", 0.7, 2.0)]).with_columns(
        pl.Series("machine_spec", ["torus:4x4x8", "slurm-torus3d:b.yaml"]))
    with pytest.raises(SimcoreError, match=r"\['torus:4x4x8'\] are no placement menus"):
        pareto(frame, "e")


def test_a_menu_search_at_the_workloads_own_load_is_summarised():
    frame = summaries([("a", 0.8, 1.0)]).with_columns(
        pl.Series("offered_load", [None], dtype=pl.Float64))
    assert pareto(frame, "e")["recommended"].to_list() == [True]
    from simcore.tools import menu_search
    assert menu_search._load(None) == "its own load"
    assert menu_search._load(0.9) == "offered load 0.9"
