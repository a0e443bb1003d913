"""Slurm's topology/torus3d selection on a placement menu (`slurm-torus3d:MENU.yaml`).

A job of n nodes may only take a fully free anchor box of a placement of size n (see
`simcore.machines.slurm.menu` for the menu and its anchors). The candidates are scanned
as the plugin scans them: torus by torus in the file's order, in a torus its placements of
size n by size (file order among equal sizes), in a placement its anchors in order. A
candidate replaces the best so far when, in turn,

1. its node weight is lower (weights live in slurm.conf; here all nodes weigh the same,
   so this never decides);
2. it belongs to the same placement as the best and its fragmentation cost is lower (a
   higher one keeps the best): the number of anchors of the *next larger* placement that
   overlap it and are entirely free now, the next larger placement being the first one
   after it in its torus's size order whose size is larger than n;
3. its torus has fewer idle nodes than the best's;

so the first candidate found wins the remaining ties. Sizes not in the menu follow the
machine's `unlisted` option: `round-up` to the smallest larger menu size (the default, so
traces can be replayed; the extra nodes are lost capacity) or `refuse` (the plugin's
behaviour: such jobs are left out of the run and counted as `refused_jobs`). With
`segments`, a job larger than the largest placement size L runs as ceil(n / L) segments of
L nodes (Slurm's --segment), each chosen by the rule above among the nodes the earlier
segments left (with `refuse`, only if L divides n). A job that could not be placed even on
an idle machine is refused too.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import clear, copy_into, n_words, popcount64
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, place
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.machines.slurm.menu import Menu, load_menu

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


class MenuTables(NamedTuple):
    """A menu's anchors as bitsets, placement by placement in scan order."""

    masks: np.ndarray  # (anchors, words) uint64: each anchor's nodes
    lo: np.ndarray  # (anchors,) int64: first word holding one of its nodes
    hi: np.ndarray  # (anchors,) int64: one past the last such word
    whole: np.ndarray  # (anchors,) bool: every cell of its box holds a node
    size: np.ndarray  # (placements,) int64
    torus: np.ndarray  # (placements,) int64
    first: np.ndarray  # (placements,) int64: its first anchor
    count: np.ndarray  # (placements,) int64: its anchors
    larger: np.ndarray  # (placements,) int64: the next larger placement (-1: none)
    torus_masks: np.ndarray  # (toruses, words) uint64: each torus's nodes


class MenuMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    t: MenuTables
    largest: int  # the largest placement size a job can get
    tmp: np.ndarray  # (words,) uint64 scratch: occupancy while segments are chosen
    picked: np.ndarray  # (words,) uint64 scratch: the segments chosen so far


@functools.lru_cache(maxsize=8)
def menu_tables(menu: Menu) -> MenuTables:
    """The anchor bitsets and placement order of a menu (once per menu)."""
    words = n_words(menu.units)
    masks, whole, size, torus, first, count, larger = [], [], [], [], [], [], []
    torus_masks = np.zeros((len(menu.toruses), words), dtype=np.uint64)
    for ti, tor in enumerate(menu.toruses):
        _set(torus_masks[ti], tor.unit_of[tor.unit_of >= 0])
        base = len(size)
        for k, placement in enumerate(tor.placements):
            size.append(placement.size)
            torus.append(ti)
            first.append(len(masks))
            count.append(placement.count)
            later = [base + q for q in range(k + 1, len(tor.placements))
                     if tor.placements[q].size > placement.size]
            larger.append(later[0] if later else -1)
            for anchor in placement.anchors:
                cells = tor.cells(placement, anchor)
                mask = np.zeros(words, dtype=np.uint64)
                _set(mask, cells[cells >= 0])
                masks.append(mask)
                whole.append(bool((cells >= 0).all()))
    masks = np.array(masks, dtype=np.uint64).reshape(-1, words)
    nonzero = masks != 0
    lo = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 0).astype(np.int64)
    hi = (words - nonzero[:, ::-1].argmax(axis=1)).astype(np.int64)
    hi[~nonzero.any(axis=1)] = 0
    as_int = functools.partial(np.array, dtype=np.int64)
    return MenuTables(masks, lo, hi, np.array(whole, dtype=np.bool_), as_int(size),
                      as_int(torus), as_int(first), as_int(count), as_int(larger), torus_masks)


def _set(mask: np.ndarray, units: np.ndarray) -> None:
    for u in units:
        mask[u >> 6] |= np.uint64(1) << np.uint64(u & 63)


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the anchor bitsets."""
    menu = load_menu(spec.argument)
    anchors = sum(p.count for t in menu.toruses for p in t.placements)
    return anchors * (n_words(menu.units) * 8 + 25)


def machine(spec: MachineSpec) -> MenuMachine:
    """A fresh machine struct (shared tables, its own scratch)."""
    menu = load_menu(spec.argument)
    words = n_words(menu.units)
    return MenuMachine(menu.units, words, False, menu_tables(menu), max(menu.sizes),
                       np.zeros(words, dtype=np.uint64), np.zeros(words, dtype=np.uint64))


def rounded_sizes(spec: MachineSpec, size: np.ndarray) -> np.ndarray:
    """Each requested size as the machine runs it (see the module docstring); -1: refused."""
    m = machine(spec)
    sizes = np.array(load_menu(spec.argument).sizes)
    unlisted, segments = spec.option("unlisted"), spec.option("segments")
    idle = np.zeros(m.words, dtype=np.uint64)
    out = np.zeros(m.words, dtype=np.uint64)
    rule = {}
    for n in np.unique(size).tolist():
        if n in sizes:
            rule[n] = n
        elif segments and n > m.largest and (unlisted == "round-up" or n % m.largest == 0):
            k = -(-n // m.largest) * m.largest
            rule[n] = k if place_menu(m, None, 0, k, idle, 0, idle[:0], out) == k else -1
        elif unlisted == "round-up" and (sizes > n).any():
            rule[n] = int(sizes[sizes > n][0])
        else:
            rule[n] = -1
    return np.array([rule[n] for n in size.tolist()], dtype=np.int64)


def refused(spec: MachineSpec, jobs: Jobs) -> np.ndarray:
    """Jobs the machine will not run: sizes the menu refuses or cannot place at all."""
    return rounded_sizes(spec, jobs.size) < 0


def build(spec: MachineSpec, jobs: Jobs) -> tuple[MenuMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's size as run (rounded up or segmented) and its class
    (that size: jobs of one size place alike)."""
    size = rounded_sizes(spec, jobs.size)
    assert (size > 0).all(), "refused jobs reach build"
    return machine(spec), size, size


@kernel
def _overlaps(t, a, bits):
    """Whether anchor a shares a node with the bitset `bits`."""
    for w in range(t.lo[a], t.hi[a]):
        if t.masks[a, w] & bits[w]:
            return True
    return False


@kernel
def fragmentation(t, a, larger, busy):
    """Anchors of placement `larger` that overlap anchor a and are entirely free in
    `busy` (0 without a larger placement)."""
    if larger < 0:
        return 0
    cost = 0
    for b in range(t.first[larger], t.first[larger] + t.count[larger]):
        overlap = False
        for w in range(max(t.lo[a], t.lo[b]), min(t.hi[a], t.hi[b])):
            if t.masks[a, w] & t.masks[b, w]:
                overlap = True
                break
        if overlap and not _overlaps(t, b, busy):
            cost += 1
    return cost


@kernel
def best_anchor(t, n, busy, forbidden):
    """The anchor the plugin's rule picks for n nodes in occupancy `busy`, avoiding
    `forbidden` (empty: nothing), or -1 (module docstring)."""
    guarded = forbidden.shape[0] > 0
    best = -1
    best_place = -1
    best_cost = -1
    best_idle = 0
    torus = -1
    idle = 0
    for p in range(t.size.shape[0]):
        if t.size[p] != n:
            continue
        if t.torus[p] != torus:
            torus = t.torus[p]
            idle = 0
            for w in range(busy.shape[0]):
                idle += popcount64(t.torus_masks[torus, w] & ~busy[w])
        for a in range(t.first[p], t.first[p] + t.count[p]):
            if not t.whole[a] or _overlaps(t, a, busy) or (guarded and
                                                           _overlaps(t, a, forbidden)):
                continue
            if best < 0:
                best, best_place, best_cost, best_idle = a, p, -1, idle
                continue
            cost = -1
            if p == best_place:
                if best_cost < 0:
                    best_cost = fragmentation(t, best, t.larger[p], busy)
                cost = fragmentation(t, a, t.larger[p], busy)
                if cost != best_cost:
                    if cost < best_cost:
                        best, best_cost = a, cost
                    continue
            if idle < best_idle:
                best, best_place, best_cost, best_idle = a, p, cost, idle
    return best


@implements(place, MenuMachine)
@kernel
def place_menu(m, st, j, units, busy, growth, forbidden, out):
    """An anchor box of `units` nodes, or ceil(units / largest) segments of the largest
    size, one after another (growth does not apply)."""
    t = m.t
    if units <= m.largest:
        a = best_anchor(t, units, busy, forbidden)
        if a < 0:
            return -1
        copy_into(out, t.masks[a])
        return units
    copy_into(m.tmp, busy)
    clear(m.picked)
    for _ in range(units // m.largest):
        a = best_anchor(t, m.largest, m.tmp, forbidden)
        if a < 0:
            return -1
        for w in range(t.lo[a], t.hi[a]):
            m.tmp[w] |= t.masks[a, w]
            m.picked[w] |= t.masks[a, w]
    copy_into(out, m.picked)
    return units


@implements(blocked_cause, MenuMachine)
@kernel
def blocked_menu(m, st, j):
    """A job that cannot be placed lacks a free anchor box."""
    return BLOCKED_NO_BOX
