"""One allocation interface over every machine kind, for the numba schedulers.

`Allocator` bundles what the kernels need to know about a machine: its kind, its size,
the box table (torus and mesh) and the link tables (wired machines). `place` finds where a
job would go in a given occupancy, with the kind's own rule:

- BOX (torus, mesh): Krevat's largest-free-partition heuristic over every shape of the
  job's size, growing the job by up to `growth` units when no shape of its size is free;
- LINKS (bgl, torus-links): Aridor's two-phase allocation of the job's own shape and
  topology, fewest cables first; jobs never grow.

Flat machines need no placement (any free units will do) and are handled by counts.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simcore.bitset import copy_into, n_words
from simcore.jit import kernel
from simcore.machines.boxes import best_box, box_table, free_boxes
from simcore.machines.links import LinkMachine, link_machine, no_link_machine, place_links
from simcore.machines.spec import MachineSpec

FLAT = 0
BOX = 1
LINKS = 2


class Allocator(NamedTuple):
    kind: int
    units: int
    words: int
    box_masks: np.ndarray  # (boxes, words) uint64, volume-descending (BOX)
    box_volume: np.ndarray  # (boxes,) int64
    feasible: np.ndarray  # (units + 1,) bool: some box has this volume (BOX)
    links: LinkMachine  # (LINKS)


def allocator(spec: MachineSpec) -> Allocator:
    """The allocation tables of a machine."""
    if spec.kind == "flat":
        return Allocator(FLAT, spec.units, 1, np.zeros((1, 1), np.uint64),
                         np.zeros(1, np.int64), np.ones(spec.units + 1, bool), no_link_machine())
    if spec.kind in ("torus", "mesh"):
        table = box_table(spec.dims3, spec.wrap)
        return Allocator(BOX, spec.units, n_words(spec.units), table.masks, table.volume,
                         table.feasible, no_link_machine())
    links = link_machine(str(spec.wiring))
    return Allocator(LINKS, spec.units, links.words, np.zeros((1, links.words), np.uint64),
                     np.zeros(1, np.int64), np.zeros(spec.units + 1, bool), links)


@kernel
def refresh(m, st, busy):
    """List the boxes free in `busy` into st.free_list (BOX); return their count."""
    if m.kind != BOX:
        return 0
    return free_boxes(m.box_masks, busy, st.free_list)


@kernel
def largest_listed(m, st, n_free):
    """Largest free partition given a refreshed free list (BOX)."""
    return m.box_volume[st.free_list[0]] if n_free > 0 else 0


@kernel
def place(m, st, jobs, j, busy, n_free, growth, forbidden, use_forbidden, out):
    """Where job j would go in occupancy `busy`; writes its resources to `out`.

    BOX needs st.free_list refreshed for `busy` (`n_free` entries). Candidates that
    intersect `forbidden` are excluded when `use_forbidden`. Returns the units allocated,
    or -1 if the job cannot be placed.
    """
    if m.kind == BOX:
        if n_free == 0:
            return -1
        top = min(jobs.size[j] + growth, m.box_volume[st.free_list[0]])
        for q in range(jobs.size[j], top + 1):
            if not m.feasible[q]:
                continue
            b = best_box(m.box_masks, m.box_volume, st.free_list, n_free, q, forbidden,
                         use_forbidden)
            if b >= 0:
                copy_into(out, m.box_masks[b])
                return q
        return -1
    if use_forbidden:
        for w in range(busy.shape[0]):
            st.tmp[w] = busy[w] | forbidden[w]
        busy = st.tmp
    return place_links(m.links, busy, jobs.rotations[j], jobs.n_rotations[j], jobs.torus[j], out)
