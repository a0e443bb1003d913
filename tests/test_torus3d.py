"""Slurm topology/torus3d menus: the file, the anchors, the selection rule (hand-checked and
against a plain-Python scan), refused and rounded sizes, and a real trace."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.bitset import n_words
from simcore.base.errors import SpecError
from simcore.core.failures import FailureProcess, draw
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.slurm.allocator import machine, place_menu
from simcore.machines.slurm.hostlist import expand
from simcore.machines.slurm.menu import axis_positions, load_menu
from simcore.machines.spec import MachineSpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference_failures import check_outages
from tests.reference_modern import menu_choice


def xyz(x, y=1, z=1):
    return {"x": x, "y": y, "z": z}


def menu(tmp_path, toruses, name="menu.yaml"):
    """A menu file of `toruses`: (name, dims, placements as (dims, seed, spacing))."""
    entries, first = [], 0
    for torus, dims, placements in toruses:
        nodes = dims[0] * dims[1] * dims[2]
        entries.append({"name": torus, "dims": xyz(*dims),
                        "nodes": f"n[{first:03d}-{first + nodes - 1:03d}]",
                        "placements": [{"dims": xyz(*p[0]),
                                        **({"anchor_seed": xyz(*p[1])} if p[1] else {}),
                                        **({"anchor_spacing": xyz(*p[2])} if p[2] else {})}
                                       for p in placements]})
        first += nodes
    path = tmp_path / name
    path.write_text(yaml.safe_dump([{"topology": "test", "torus3d": {"toruses": entries}}]))
    return str(path)


def choose(path, n, busy=(), **options):
    """The units the rule gives a job of n nodes with `busy` units taken (None: none)."""
    spec = MachineSpec.parse(f"slurm-torus3d:{path}", options=options)
    m = machine(spec)
    bits = np.zeros(m.words, dtype=np.uint64)
    for u in busy:
        bits[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    out = np.zeros(m.words, dtype=np.uint64)
    if place_menu(m, None, 0, n, bits, 0, bits[:0], out) < 0:
        return None
    return {u for u in range(spec.units) if (int(out[u >> 6]) >> (u & 63)) & 1}


LINE = ("t0", (4, 1, 1))


def test_the_fragmentation_cost_breaks_ties_within_a_placement(tmp_path):
    # A line of 4 nodes; size 1 anchored everywhere, size 2 at {0,1} and {2,3}. With node 2
    # busy, nodes 0 and 1 would each break the free pair {0,1} (cost 1); node 3 breaks no
    # free pair (cost 0), so it wins although it is found last.
    path = menu(tmp_path, [(*LINE, [((1, 1, 1), None, None), ((2, 1, 1), None, None)])])
    assert choose(path, 1, busy={2}) == {3}
    assert choose(path, 1) == {0}  # every candidate breaks one free pair: the first wins


def test_the_next_larger_placement_is_the_first_larger_one_in_size_order(tmp_path):
    # Size 1, then size 2 at {1,2},{3,0} (seed 1), then size 2 at {0,1},{2,3}: only the
    # first placement of size 2 counts. Nothing busy: node 0 and node 3 break {3,0};
    # nodes 1, 2 break {1,2}: all cost 1, so node 0 (first) wins; with node 1 busy, the
    # pair {1,2} is not free: node 2 costs 0.
    path = menu(tmp_path, [(*LINE, [((1, 1, 1), None, None), ((2, 1, 1), (1, 0, 0), None),
                                    ((2, 1, 1), None, None)])])
    assert choose(path, 1) == {0}
    assert choose(path, 1, busy={1}) == {2}


def test_costs_are_compared_within_a_placement_only(tmp_path):
    # Two placements of size 1 (node 3 only, then every node), and size 2 at {0,1},{2,3}.
    # Node 3 (first placement, found first) breaks the free pair {2,3}; node 0 of the
    # second placement would break one too, and node 1... but candidates of different
    # placements are not compared by cost: with the same torus, the first found wins.
    path = menu(tmp_path, [(*LINE, [((1, 1, 1), (3, 0, 0), (4, 1, 1)),
                                    ((1, 1, 1), None, None), ((2, 1, 1), None, None)])])
    assert choose(path, 1, busy={0}) == {3}  # node 1 would cost 0, but is of placement 2


def test_anchors_wrap_around_the_torus(tmp_path):
    assert axis_positions(5, 2, 0) == [0, 2, 4, 1, 3]
    assert axis_positions(8, 4, 1) == [1, 5] and axis_positions(4, 4, 3) == [3]
    path = menu(tmp_path, [(*LINE, [((2, 1, 1), (1, 0, 0), None)])])
    assert [a for p in load_menu(path).toruses[0].placements for a in p.anchors] == \
        [(1, 0, 0), (3, 0, 0)]
    assert choose(path, 2, busy={1}) == {3, 0}
    assert choose(path, 2, busy={1, 0}) is None


def test_overlapping_placements_share_nodes(tmp_path):
    # Size 2 as {0,1},{2,3} and as {1,2},{3,0}: a job on {0,1} leaves only {2,3}; on a
    # 2x2 square every 2x1 anchor overlaps the 2x2 anchor, which a job of 2 then blocks.
    path = menu(tmp_path, [(*LINE, [((2, 1, 1), None, None), ((2, 1, 1), (1, 0, 0), None)])])
    assert choose(path, 2) == {0, 1}
    assert choose(path, 2, busy={0, 1}) == {2, 3}
    assert choose(path, 2, busy={0, 2}) is None
    square = menu(tmp_path, [("sq", (2, 2, 1), [((2, 1, 1), None, (1, 1, 1)),
                                                 ((2, 2, 1), None, None)])], "sq.yaml")
    assert choose(square, 4, busy=choose(square, 2)) is None
    # a self-overlapping placement: every shift of 2x1 on the line of 4
    self_path = menu(tmp_path, [(*LINE, [((2, 1, 1), None, (1, 1, 1))])], "self.yaml")
    assert choose(self_path, 2, busy={0}) == {1, 2}


def test_the_torus_with_fewer_idle_nodes_wins(tmp_path):
    path = menu(tmp_path, [("a", (2, 1, 1), [((1, 1, 1), None, None)]),
                           ("b", (2, 1, 1), [((1, 1, 1), None, None)])])
    assert choose(path, 1) == {0}
    assert choose(path, 1, busy={2}) == {3}  # torus b has 1 idle node, a has 2
    assert choose(path, 1, busy={0, 2}) == {1}  # both have 1: the first found


def test_segments_take_the_largest_placement_one_after_another(tmp_path):
    path = menu(tmp_path, [("t0", (8, 1, 1), [((2, 1, 1), None, None)])])
    assert choose(path, 6, segments=True) == {0, 1, 2, 3, 4, 5}
    assert choose(path, 6, busy={2}, segments=True) == {0, 1, 4, 5, 6, 7}
    assert choose(path, 6, busy={2, 4}, segments=True) is None


def test_unlisted_sizes_are_rounded_up_or_refused_and_counted(tmp_path):
    path = menu(tmp_path, [("t0", (8, 1, 1), [((1, 1, 1), None, None),
                                              ((2, 1, 1), None, None),
                                              ((4, 1, 1), None, None)])])
    jobs = Jobs.create([1, 2, 3, 4], [0.0, 1.0, 2.0, 3.0], [10.0] * 4, [10.0] * 4, [1, 3, 5, 8])
    rounded = simulate(jobs, f"slurm-torus3d:{path}", "fcfs")
    assert rounded.jobs.column("alloc_size").to_pylist() == [1, 4]  # 5 and 8: no size
    assert rounded.summary["refused_jobs"] == 2 and rounded.summary["rounded_jobs"] == 1
    assert rounded.summary["lost"] > 0
    spec = MachineSpec.parse(f"slurm-torus3d:{path}", options={"unlisted": "refuse"})
    refused = simulate(jobs, spec, "fcfs")
    assert refused.jobs.column("job_id").to_pylist() == [1]
    assert refused.summary["refused_jobs"] == 3 and refused.summary["jobs"] == 1
    spec = MachineSpec.parse(f"slurm-torus3d:{path}", options={"segments": True})
    segmented = simulate(jobs, spec, "fcfs")
    assert segmented.jobs.column("alloc_size").to_pylist() == [1, 4, 8, 8]
    spec = MachineSpec.parse(f"slurm-torus3d:{path}",
                             options={"segments": True, "unlisted": "refuse"})
    assert simulate(jobs, spec, "fcfs").jobs.column("alloc_size").to_pylist() == [1, 8]
    with pytest.raises(SpecError, match="refuses every job"):
        simulate(Jobs.create([1], [0.0], [1.0], [1.0], [3]), spec, "fcfs")


def test_regions_leave_holes_that_anchors_must_avoid(tmp_path):
    # A 4x1x1 torus mapping x = 0, 1 and 3: the anchor {2,3} has a hole and is never
    # chosen; a job of 2 gets {0,1}, then none; units are numbered by coordinate.
    path = tmp_path / "regions.yaml"
    path.write_text(yaml.safe_dump([{"topology": "r", "torus3d": {"toruses": [{
        "name": "t", "dims": xyz(4), "regions": [
            {"anchor": xyz(0, 0, 0), "dims": xyz(2), "nodes": "a[1-2]"},
            {"anchor": xyz(3, 0, 0), "dims": xyz(1), "nodes": "b1"}],
        "placements": [{"dims": xyz(2)}, {"dims": xyz(1)}]}]}}]))
    assert MachineSpec.parse(f"slurm-torus3d:{path}").units == 3
    assert choose(path, 2) == {0, 1}
    assert choose(path, 2, busy={0}) is None
    assert choose(path, 1, busy={0, 1}) == {2}


@pytest.mark.parametrize(("entry", "message"), [
    ({"dims": xyz(5)}, r"toruses\[0\] \(t\)\.placements\[0\]\.dims: 5x1x1 exceed the torus "
                       r"4x1x1"),
    ({"dims": xyz(1), "anchor_seed": xyz(4, 0, 0)}, r"placements\[0\]\.anchor_seed: \(4, 0, "
                                                    r"0\) must lie within the torus"),
    ({"dims": xyz(1), "anchor_spacing": xyz(5)}, r"anchor_spacing: \(5, 1, 1\) must lie"),
    ({"dims": {"x": 1, "y": 1}}, r"placements\[0\]\.dims: .*expected \{x, y, z\} integers"),
    ({"dims": xyz(1), "weight": 2}, r"placements\[0\]: unknown key\(s\) \['weight'\]"),
])
def test_bad_placements_are_named(tmp_path, entry, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump([{"topology": "x", "torus3d": {"toruses": [
        {"name": "t", "dims": xyz(4), "nodes": "n[0-3]", "placements": [entry]}]}}]))
    with pytest.raises(SpecError, match=message):
        MachineSpec.parse(f"slurm-torus3d:{path}")


@pytest.mark.parametrize(("document", "message"), [
    ([{"topology": "x", "torus3d": {"toruses": [{"name": "t", "dims": xyz(4),
                                                 "nodes": "n[0-2]"}]}}],
     r"toruses\[0\] \(t\)\.nodes: 3 nodes; dims 4x1x1 need 4"),
    ([{"topology": "x", "torus3d": {"toruses": [{"name": "t", "dims": xyz(4)}]}}],
     r"expected exactly one of nodes or regions"),
    ([{"topology": "x", "torus3d": {"toruses": [
        {"name": "t", "dims": xyz(2), "nodes": "n[0-1]", "placements": [{"dims": xyz(1)}]},
        {"name": "t", "dims": xyz(2), "nodes": "m[0-1]"}]}}], r"name 't' defined twice"),
    ([{"topology": "x", "torus3d": {"toruses": [
        {"name": "t", "dims": xyz(2), "nodes": "n[0-1]", "placements": [{"dims": xyz(1)}]},
        {"name": "u", "dims": xyz(2), "nodes": "n[1-2]"}]}}],
     r"toruses\[1\] \(u\): node n1 is also in torus t"),
    ([{"topology": "a", "torus3d": {}}, {"topology": "b", "torus3d": {}}],
     r"2 torus3d topologies \['a', 'b'\]; expected one"),
    ([{"topology": "x", "torus3d": {"toruses": [{"name": "t", "dims": xyz(4), "regions": [
        {"anchor": xyz(0, 0, 0), "dims": xyz(2), "nodes": "a[1-2]"},
        {"anchor": xyz(1, 0, 0), "dims": xyz(2), "nodes": "b[1-2]"}]}]}}],
     r"regions\[1\]: overlaps an earlier region at \(1, 0, 0\)"),
    ([{"topology": "x", "torus3d": {"toruses": [{"name": "t", "dims": xyz(4),
                                                 "nodes": "n[0-3]"}]}}],
     r"no placement has an anchor"),
    ({"topology": "x"}, r"expected a list of topologies"),
])
def test_bad_menus_are_named(tmp_path, document, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(SpecError, match=message):
        MachineSpec.parse(f"slurm-torus3d:{path}")


def test_the_menu_is_found_keyed_and_round_trips(tmp_path):
    spec = MachineSpec.parse("slurm-torus3d:example-8x4x4.yaml")
    assert spec.units == 128 and str(spec) == "slurm-torus3d:example-8x4x4.yaml"
    assert MachineSpec.from_config(spec.to_config()) == spec
    with pytest.raises(SpecError, match=r"placement menu 'nope\.yaml': no such file"):
        MachineSpec.parse("slurm-torus3d:nope.yaml")
    path = menu(tmp_path, [(*LINE, [((1, 1, 1), None, None)])])
    before = MachineSpec.parse(f"slurm-torus3d:{path}").key()
    menu(tmp_path, [(*LINE, [((2, 1, 1), None, None)])])
    assert MachineSpec.parse(f"slurm-torus3d:{path}").key() != before


def test_host_lists_expand_as_slurm_writes_them():
    assert expand("node[01-03,7]") == ["node01", "node02", "node03", "node7"]
    assert expand("r[1-2]n[1-2],x") == ["r1n1", "r1n2", "r2n1", "r2n2", "x"]
    for bad in ("n[1-", "n[3-1]", "n[a]", "a,,b", ""):
        with pytest.raises(SpecError):
            expand(bad)


@st.composite
def menus_and_occupancies(draw_):
    dims = tuple(draw_(st.integers(1, 4)) for _ in range(3))
    toruses = []
    for t in range(draw_(st.integers(1, 2))):
        placements = []
        for _ in range(draw_(st.integers(1, 4))):
            shape = tuple(draw_(st.integers(1, d)) for d in dims)
            seed = tuple(draw_(st.integers(0, d - 1)) for d in dims)
            spacing = tuple(draw_(st.integers(1, d)) for d in dims)
            placements.append((shape, seed, spacing))
        toruses.append((f"t{t}", dims, placements))
    units = len(toruses) * dims[0] * dims[1] * dims[2]
    busy = draw_(st.sets(st.integers(0, units - 1)))
    return toruses, busy


@settings(max_examples=200, deadline=None)
@given(menus_and_occupancies())
def test_the_kernel_scans_as_the_plugin_does(case):
    import tempfile
    from pathlib import Path

    toruses, busy = case
    with tempfile.TemporaryDirectory() as tmp:
        path = menu(Path(tmp), toruses)
        loaded = load_menu(path)
        for n in sorted({p.size for t in loaded.toruses for p in t.placements}):
            expected = menu_choice(loaded, n, busy)
            assert choose(path, n, busy) == (None if expected is None else set(expected))


@pytest.mark.parametrize("scheduler", ["fcfs", "backfill"])
def test_invariants_on_a_real_trace_with_failures(trace_excerpt, scheduler):
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    spec = MachineSpec.parse("slurm-torus3d:example-8x4x4.yaml",
                             options={"unit_mtbf_s": 2e6, "repair_s": 7200})
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, offered_load=0.9), spec, seed=3)
    result = simulate(jobs, spec, scheduler, seed=3)
    s = result.summary
    assert s["failures"] > 10 and s["runs_cut_short"] > 0
    struct, size, _ = spec.implementation.build(spec, jobs)
    masks, units = spec.implementation.failure_domains(struct)
    events = draw(FailureProcess.of(spec), units, 3, float(jobs.submit_s[0]), 1e9)
    assert check_outages(result, masks, events[:3]) == len(jobs) + s["runs_cut_short"]
    # every placement is an anchor box of a placement of the job's rounded size
    anchors = {}
    for torus in load_menu(spec.argument).toruses:
        for p in torus.placements:
            for a in p.anchors:
                anchors.setdefault(p.size, set()).add(frozenset(torus.cells(p, a).tolist()))
    alloc = dict(zip(result.jobs.column("job_id").to_pylist(),
                     result.jobs.column("alloc_size").to_pylist(), strict=True))
    bits = result.placements.bits()
    for row, job in zip(bits, result.placements.job_id, strict=True):
        assert frozenset(np.flatnonzero(row).tolist()) in anchors[alloc[int(job)]]
    assert (np.array(list(alloc.values())) == size).all()
    assert n_words(spec.units) == struct.words
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)
