"""BG/L machine descriptions, their loader, and the per-line link-set tables (Aridor et al.)."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.machines.bgl import wiring
from simcore.machines.bgl.wiring import (
    Cable,
    LineWiring,
    Wiring,
    build_link_table,
    link_sets,
    link_table,
    load_wiring,
)

MACHINES = Path(__file__).resolve().parents[1] / "config" / "machines"
BGL = load_wiring(MACHINES / "bgl.yaml")
TORUS = load_wiring(MACHINES / "torus-links.yaml")
X = BGL.lines[0]
LINES = {"bgl-x": X, "bgl-y": BGL.lines[1], "torus-x": TORUS.lines[0], "torus-y": TORUS.lines[1]}


def paper(line: LineWiring, sets: list[frozenset[int]]) -> list[frozenset[Any]]:
    """Cable-index sets -> sets of cable labels (the paper's link numbers)."""
    return [frozenset(line.cables[i].label for i in s) for s in sets]


# --- an independent checker: which cable sets are paths / cycles, by brute force ---------


def shape_of(line: LineWiring, chosen: tuple[int, ...]) -> tuple[str, frozenset[int], int, int]:
    """Classify a non-empty cable set: ("path", switches, first, last), ("cycle", ...) or
    ("other", ...). A path/cycle is simple: no switch is entered or left twice."""
    succ: dict[int, int] = {}
    pred: dict[int, int] = {}
    for i in chosen:
        c = line.cables[i]
        if c.src in succ or c.dst in pred:
            return "other", frozenset(), -1, -1
        succ[c.src] = c.dst
        pred[c.dst] = c.src
    switches = frozenset(succ) | frozenset(pred)
    starts = [s for s in switches if s not in pred]
    if not starts:  # every switch has one in and one out: a union of cycles
        node, seen = next(iter(switches)), set()
        while node not in seen:
            seen.add(node)
            node = succ[node]
        return ("cycle" if seen == switches else "other"), switches, -1, -1
    if len(starts) != 1:
        return "other", frozenset(), -1, -1
    node, seen = starts[0], [starts[0]]
    while node in succ:
        node = succ[node]
        if node in seen:
            return "other", frozenset(), -1, -1
        seen.append(node)
    if set(seen) != switches:
        return "other", frozenset(), -1, -1
    return "path", switches, seen[0], seen[-1]


@functools.cache
def all_shapes(line: LineWiring) -> list[tuple[frozenset[int], str, frozenset[int], int, int]]:
    """Every non-empty cable subset of `line` that is a simple path or cycle."""
    out = []
    for k in range(1, len(line.cables) + 1):
        for chosen in itertools.combinations(range(len(line.cables)), k):
            kind, switches, first, last = shape_of(line, chosen)
            if kind != "other":
                out.append((frozenset(chosen), kind, switches, first, last))
    return out


def expected(line: LineWiring, members: frozenset[int], topology: str) -> set[frozenset[int]]:
    if not members:
        return set()
    if len(members) == 1:
        return {frozenset()}
    want = "path" if topology == "mesh" else "cycle"
    return {
        cables
        for cables, kind, switches, first, last in all_shapes(line)
        if kind == want
        and members <= switches
        and (kind == "cycle" or (first in members and last in members))
    }


def check_sorted_unique(sets: list[frozenset[int]]) -> None:
    assert len(set(sets)) == len(sets)
    keys = [(len(s), sorted(s)) for s in sets]
    assert keys == sorted(keys)


# --- the paper's examples ----------------------------------------------------------------


def test_labels_follow_file_order() -> None:
    assert [c.label for c in X.cables] == list(range(1, 15))


def test_paper_123() -> None:
    mesh = paper(X, link_sets(X, frozenset({1, 2, 3}), "mesh"))
    torus = paper(X, link_sets(X, frozenset({1, 2, 3}), "torus"))
    assert mesh[:2] == [{3, 6}, {1, 2, 3}]  # the paper's two, and they come first
    assert torus[0] == {1, 2, 3, 6}
    # The paper names only these; the full lists also hold longer detours:
    assert mesh == [
        {3, 6}, {1, 2, 3}, {1, 2, 6}, {4, 6, 7, 10}, {1, 2, 4, 7, 10},
        {4, 6, 8, 10, 11, 13}, {1, 2, 4, 8, 10, 11, 13},
    ]  # fmt: skip
    assert torus == [{1, 2, 3, 6}, {1, 2, 4, 6, 7, 10}, {1, 2, 4, 6, 8, 10, 11, 13}]


def test_paper_345_mesh() -> None:
    mesh = paper(X, link_sets(X, frozenset({3, 4, 5}), "mesh"))
    assert mesh[:2] == [{7, 10}, {4, 5, 7}]  # Figure 4(a) and 4(b)


def test_paper_coexisting_tori_012_and_34() -> None:
    a = link_sets(X, frozenset({0, 1, 2}), "torus")
    b = link_sets(X, frozenset({3, 4}), "torus")
    assert paper(X, a)[0] == {1, 2, 3, 6}  # 0 -> 2 -> (3) -> 1 -> 0, 3 a pass-through
    assert paper(X, b)[0] == {4, 5, 7, 10}  # 3 -> (2) -> 4 -> 5 -> 3
    assert not a[0] & b[0]


def test_y_line_torus_takes_the_whole_ring() -> None:
    y = BGL.lines[1]
    everything = frozenset(range(len(y.cables)))
    tori = [
        s
        for k in range(2, 5)
        for members in itertools.combinations(range(4), k)
        for s in link_sets(y, frozenset(members), "torus")
    ]
    assert tori and all(s == everything for s in tori)  # so a second torus is refused
    assert min(len(s) for s in link_sets(y, frozenset({0, 1}), "mesh")) == 1


def test_plain_torus_ring() -> None:
    x = TORUS.lines[0]
    assert link_sets(x, frozenset({0, 1, 2}), "torus") == [frozenset(range(8))]
    mesh = link_sets(x, frozenset({0, 1, 2}), "mesh")
    assert mesh[0] == {0, 1} and [len(s) for s in mesh] == [2, 7, 7]


@pytest.mark.parametrize("name", sorted(LINES))
def test_single_member_needs_no_cable(name: str) -> None:
    line = LINES[name]
    table = build_link_table(line)
    for p, topology in itertools.product(range(line.length), ("mesh", "torus")):
        assert link_sets(line, frozenset({p}), topology) == [frozenset()]
        assert table.sets(frozenset({p}), topology) == [frozenset()]
    assert link_sets(line, frozenset(), "mesh") == []


def test_every_x_subset_has_mesh_and_torus() -> None:
    table = build_link_table(X)
    counts = np.diff(table.offsets)
    assert counts[0] == counts[1] == 0  # the empty subset
    assert np.all(counts[2:] > 0)


# --- link sets are exactly the paths / cycles through the members --------------------------


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(LINES)),
    raw=st.sets(st.integers(0, 7), min_size=1),
    topology=st.sampled_from(["mesh", "torus"]),
)
def test_link_sets_are_the_paths_and_cycles(name: str, raw: set[int], topology: str) -> None:
    line = LINES[name]
    members = frozenset(p for p in raw if p < line.length)
    got = link_sets(line, members, topology)
    check_sorted_unique(got)
    assert set(got) == expected(line, members, topology)


@st.composite
def random_lines(draw: st.DrawFn) -> LineWiring:
    n = draw(st.integers(1, 5))
    outs = [(p, port) for p in range(n) for port in wiring.OUT_PORTS]
    ins = [(p, port) for p in range(n) for port in wiring.IN_PORTS]
    outs = draw(st.permutations(outs))
    ins = draw(st.permutations(ins))
    cables = [Cable(s, sp, d, dp) for (s, sp), (d, dp) in zip(outs, ins, strict=True) if s != d]
    return LineWiring(n, tuple(cables[: draw(st.integers(0, len(cables)))]))


@settings(max_examples=60, deadline=None)
@given(line=random_lines())
def test_random_wirings_table_matches_brute_force(line: LineWiring) -> None:
    table = build_link_table(line)
    for mask in range(1 << line.length):
        members = frozenset(p for p in range(line.length) if mask >> p & 1)
        for topology in ("mesh", "torus"):
            got = link_sets(line, members, topology)
            check_sorted_unique(got)
            assert set(got) == expected(line, members, topology)
            assert table.sets(members, topology) == got


@pytest.mark.parametrize("name", sorted(LINES))
def test_table_layout(name: str) -> None:
    line = LINES[name]
    table = build_link_table(line)
    n = line.length
    assert table.offsets.dtype == np.int64 and table.offsets.shape == (2 ** (n + 1) + 1,)
    assert table.cable_masks.dtype == np.uint64 and table.n_cables.dtype == np.int64
    assert table.offsets[0] == 0 and table.offsets[-1] == len(table.cable_masks)
    assert not table.offsets.flags.writeable
    for mask in range(1 << n):
        members = frozenset(p for p in range(n) if mask >> p & 1)
        for topology, code in (("mesh", wiring.MESH), ("torus", wiring.TORUS)):
            row = mask << 1 | code
            lo, hi = table.offsets[row], table.offsets[row + 1]
            sets = link_sets(line, members, topology)
            assert [int(m) for m in table.cable_masks[lo:hi]] == [
                sum(1 << i for i in s) for s in sets
            ]
            assert list(table.n_cables[lo:hi]) == [len(s) for s in sets]


# --- loader validation -------------------------------------------------------------------


def bgl_doc() -> dict[str, Any]:
    return yaml.safe_load((MACHINES / "bgl.yaml").read_text())


def cable(doc: dict[str, Any], label: int) -> dict[str, Any]:
    return next(c for c in doc["lines"][0]["cables"] if c.get("label") == label)


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _label(label: int, key: str, value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        cable(doc, label)[key] = value

    return edit


def _drop_z(doc: dict[str, Any]) -> None:
    del doc["lines"][2]


def _unknown_cable_key(doc: dict[str, Any]) -> None:
    cable(doc, 1)["form"] = cable(doc, 1).pop("from")


def _missing_in(doc: dict[str, Any]) -> None:
    del cable(doc, 5)["in"]


BAD = {
    "unknown out port": (
        _label(1, "out", "S5"),
        r"lines\[0\] \(x\)\.cables\[0\] \(label 1\)\.out: 'S5'.*S2, S4",
    ),
    "unknown in port": (_label(2, "in", "S1"), r"cables\[1\] \(label 2\)\.in: 'S1'.*S3, S5"),
    "output port used twice": (
        _label(3, "from", 0),  # 0.S4 is also the output of label 14
        r"cables\[13\] \(label 14\)\.out: port 0\.S4 is already used by cables\[2\] \(label 3\)",
    ),
    "input port used twice": (
        _label(14, "in", "S5"),  # 1.S5 is already the input of label 6 (3 -> 1)
        r"cables\[13\] \(label 14\)\.in: port 1\.S5 is already used by cables\[5\] \(label 6\)",
    ),
    "position outside": (_label(4, "to", 8), r"cables\[3\] \(label 4\)\.to: 8 is outside"),
    "negative position": (_label(4, "from", -1), r"cables\[3\] \(label 4\)\.from: -1 is outside"),
    "self-loop": (_label(4, "to", 2), r"cables\[3\] \(label 4\)\.to: self-loop 2 -> 2"),
    "non-integer position": (
        _label(4, "to", "two"),
        r"cables\[3\] \(label 4\)\.to: expected an integer",
    ),
    "missing cable key": (_missing_in, r"cables\[4\]: missing key 'in'"),
    "duplicate label": (_label(14, "label", 13), r"cables\[13\].*label: 13 is already the label"),
    "two dims": (_set(("dims",), [8, 4]), r"dims: expected 3 positive integers"),
    "line count": (_drop_z, r"lines: expected one line wiring per dimension \(3\), got 2"),
    "length vs dims": (_set(("dims",), [8, 4, 5]), r"lines\[2\] \(z\)\.length: 4 .*dims\[2\] = 5"),
    "unknown top key": (_set(("dimz",), 3), r"top level: unknown key 'dimz'"),
    "unknown cable key": (_unknown_cable_key, r"cables\[0\]: unknown key 'form'"),
    "duplicate axis": (_set(("lines", 2, "axis"), "y"), r"lines\[2\]\.axis: 'y' is already"),
    "bad unit": (_set(("unit", "nodes"), 0), r"unit\.nodes: expected a positive integer"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_validation_errors(case: str, tmp_path: Path) -> None:
    edit, pattern = BAD[case]
    doc = bgl_doc()
    edit(doc)
    path = tmp_path / "broken-machine.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=pattern) as info:
        load_wiring(path)
    assert str(info.value).startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "empty document"),
        ("name: [unclosed", "not valid YAML"),
        ("- 1\n", "expected a mapping"),
    ],
)
def test_unreadable_files(text: str, pattern: str, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=pattern):
        load_wiring(path)
    with pytest.raises(SpecError, match="cannot read"):
        load_wiring(tmp_path / "missing.yaml")


def test_key_is_content_not_bytes(tmp_path: Path) -> None:
    path = tmp_path / "same.yaml"
    path.write_text(yaml.safe_dump(bgl_doc(), default_flow_style=True))  # no comments, no anchors
    assert load_wiring(path).key() == BGL.key()
    assert BGL.lines[1].key() == BGL.lines[2].key()  # identical lines share a table
    doc = bgl_doc()
    cable(doc, 14)["label"] = 15
    path.write_text(yaml.safe_dump(doc))
    assert load_wiring(path).key() != BGL.key()
    assert BGL.key() != TORUS.key() and len(BGL.key()) == 64
    assert isinstance(BGL, Wiring) and BGL.dims == (8, 4, 4) and BGL.unit_nodes == 512


# --- the disk cache ----------------------------------------------------------------------


def same(a: wiring.LinkTable, b: wiring.LinkTable) -> bool:
    return (
        a.key == b.key
        and np.array_equal(a.offsets, b.offsets)
        and np.array_equal(a.cable_masks, b.cable_masks)
        and np.array_equal(a.n_cables, b.n_cables)
    )


def test_cache_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = link_table(X, tmp_path)
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]  # no temp file left behind

    def no_rebuild(line: LineWiring) -> wiring.LinkTable:
        raise AssertionError("a valid cache must be read, not rebuilt")

    monkeypatch.setattr(wiring, "build_link_table", no_rebuild)
    again = link_table(X, tmp_path)
    assert same(first, again) and same(again, build_link_table(X))
    assert not again.cable_masks.flags.writeable


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a zip file at all")


def _flip_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 16):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _save(path: Path, key: str, table: wiring.LinkTable, n_cables: np.ndarray) -> None:
    with path.open("wb") as fh:
        np.savez(
            fh,
            key=np.array(key),
            offsets=table.offsets,
            cable_masks=table.cable_masks,
            n_cables=n_cables,
        )


def _other_line(path: Path) -> None:
    """A well-formed table of another line (its own key) under this line's file name."""
    other = build_link_table(TORUS.lines[0])
    _save(path, other.key, other, other.n_cables)


def _inconsistent(path: Path) -> None:
    """The right key, but cable counts that do not match the masks."""
    table = build_link_table(X)
    _save(path, table.key, table, table.n_cables + 1)


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flip_middle, _other_line, _inconsistent])
def test_corrupt_cache_is_rebuilt(
    damage: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_table(X, tmp_path)
    (path,) = tmp_path.iterdir()
    damage(path)
    builds = []

    def counting(line: LineWiring) -> wiring.LinkTable:
        builds.append(line)
        return build_link_table(line)

    monkeypatch.setattr(wiring, "build_link_table", counting)
    table = link_table(X, tmp_path)
    assert len(builds) == 1
    assert same(table, build_link_table(X))
    link_table(X, tmp_path)  # the rewritten file is valid again
    assert len(builds) == 1
