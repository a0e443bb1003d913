"""Slurm's topology/tree selection on a machine of racks (`blocks:AxB`), as
`src/plugins/topology/tree/eval_nodes_tree.c:_eval_nodes_topo` of Slurm 25.11.7 chooses
nodes under select/cons_tres (every node of equal weight, whole-node jobs; docs/modern.md
lists each rule with its source), or, with `tree_release: "22.05"`, as
`src/plugins/select/cons_tres/job_test.c:_eval_nodes_topo` of 22.05.8 does.

Each rack is a leaf switch; `rack_groups` ("4,16") stacks switches over 4 and 16
consecutive racks, and one root joins them all. Leaves are listed first in rack order, so
a lower index is a lower rack. A job of n nodes, where at least n are free, takes leaves
one at a time, each giving its lowest free nodes, until it has n. With R nodes still
needed, a leaf is compared with the best one so far (the first with free nodes, in rack
order) by `_compare`:

- a leaf whose free nodes hold R beats one whose do not; of two that do, fewer free nodes
  wins (best fit);
- where neither holds R and they hang under different switches, the two switches are
  compared the same way, one level up, and so on;
- otherwise (siblings that do not hold R) more free nodes wins; a tie keeps the best so far.

After the first leaf, a leaf's distance is its summed hops to the leaves taken (2 per
level to their common switch). A farther leaf never replaces a nearer best; a nearer one
replaces it where it holds R (25.11; 22.05: unless the comparison prefers the best), one at
the same distance where the comparison prefers it. A leaf used up is removed from its
switches' counts (25.11 only; 22.05 keeps their counts from the start of the pass).

`switches` k (--switches=k@`switch_wait_s`): a placement over more than k leaves is refused
until the job has waited `switch_wait_s` since the first placement tried for it with enough
free nodes (Slurm's wait4switch, default max_switch_wait 300 s); then the next placement is
taken however many leaves it spans. The machine wakes the scheduler when a wait lapses
(`wake`), as Slurm's periodic passes do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import clear, n_words
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, dilate, place, wake
from simcore.core.state import BLOCKED_NO_BOX, NOW, QLEN
from simcore.jobs.jobs import Jobs
from simcore.machines.blocks.allocator import (
    _count_free,
    _take,
    dilate_block,
    failure_domains,
    job_metrics,
    metrics_text,
)
from simcore.machines.blocks.groups import rack_levels

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["build", "failure_domains", "job_metrics", "memory_bytes", "metrics_text"]


class TreeMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    block: int  # nodes per rack (a leaf switch)
    blocks: int  # racks
    levels: np.ndarray  # (levels,) int64: racks per switch at each level, 1 .. racks
    switches: int  # --switches k, 0: none
    switch_wait: float  # seconds a job waits for k leaves
    stale_counts: bool  # 22.05: switch counts not decreased as leaves are used up
    dilation: float
    block_domains: bool  # a rack fails as a whole
    free: np.ndarray  # (racks,) int64 scratch: free nodes per rack
    count: np.ndarray  # (levels, racks) int64 scratch: free nodes per switch
    dist: np.ndarray  # (racks,) int64 scratch: summed hops to the leaves taken
    first_tried: np.ndarray  # (jobs,) float64: when the switch wait began (nan: not yet)
    timer: np.ndarray  # (1,) float64: the earliest wait to lapse after now (inf: none)
    spanned: np.ndarray  # (jobs,) int64: racks spanned at the job's last start
    factor: np.ndarray  # (jobs,) float64: its run-time dilation


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the per-rack scratch (per-job arrays are the jobs')."""
    return 8 * spec.dims[0] * (len(rack_levels(spec)) + 2)


def build(spec: MachineSpec, jobs: Jobs) -> tuple[TreeMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's nodes and its class (its size; under a switch limit
    every job its own, as its wait is its own)."""
    racks, block = spec.dims
    levels = rack_levels(spec)
    n = len(jobs)
    switches = spec.option("switches")
    struct = TreeMachine(
        spec.units, n_words(spec.units), False, block, racks, levels, switches,
        spec.option("switch_wait_s"), spec.option("tree_release") == "22.05",
        spec.option("block_dilation"), spec.option("failure_domain") == "block",
        np.zeros(racks, dtype=np.int64), np.zeros((levels.shape[0], racks), dtype=np.int64),
        np.zeros(racks, dtype=np.int64), np.full(n, np.nan), np.full(1, np.inf),
        np.zeros(n, dtype=np.int64), np.ones(n))
    size = jobs.size.astype(np.int64)
    placement_class = spec.units + 1 + np.arange(n) if switches else size
    return struct, size, placement_class


@kernel
def _hops(m, a, b):
    """Hops between leaves a and b: 2 per level up to their common switch."""
    level = 0
    while a // m.levels[level] != b // m.levels[level]:
        level += 1
    return 2 * level


@kernel
def _compare(m, i, j, need):
    """(> 0: leaf i preferred to leaf j, < 0: j, 0: neither; whether i's side holds
    `need`) by the rule of the module docstring."""
    top = m.levels.shape[0] - 1
    level = 0
    while True:
        gi, gj = i // m.levels[level], j // m.levels[level]
        ci, cj = m.count[level, gi], m.count[level, gj]
        fits_i, fits_j = ci >= need, cj >= need
        if fits_i and fits_j and ci != cj:
            return (1 if ci < cj else -1), fits_i
        if fits_i != fits_j:
            return (1 if fits_i else -1), fits_i
        if fits_i or level == top or i // m.levels[level + 1] == j // m.levels[level + 1]:
            break
        level += 1
    if ci != cj:
        return (1 if ci > cj else -1), fits_i
    return 0, fits_i


@kernel
def _choose_leaf(m, need):
    """The next leaf for `need` nodes (-1: none has free nodes)."""
    best = -1
    for i in range(m.blocks):
        if m.count[0, i] == 0:
            continue
        if best < 0:
            best = i
            continue
        order, fits = _compare(m, i, best, need)
        if m.dist[i] < m.dist[best]:
            nearer = order >= 0 if m.stale_counts else fits
            if nearer:
                best = i
        elif m.dist[i] == m.dist[best] and order > 0:
            best = i
    return best


@kernel
def _leaves(m, n, busy, forbidden, out):
    """Take n nodes by the tree rule into `out` (m.free counted, at least n free); the
    leaves used."""
    top = m.levels.shape[0]
    for level in range(top):
        for g in range(m.blocks):
            m.count[level, g] = 0
    for b in range(m.blocks):
        m.dist[b] = 0
        for level in range(top):
            m.count[level, b // m.levels[level]] += m.free[b]
    clear(out)
    need, used = n, 0
    while need > 0:
        leaf = _choose_leaf(m, need)
        for b in range(m.blocks):
            m.dist[b] += _hops(m, leaf, b)
        take = min(need, m.count[0, leaf])
        _take(m, leaf, take, busy, forbidden, out)
        need -= take
        used += 1
        if need > 0:
            if not m.stale_counts:
                for level in range(1, top):
                    m.count[level, leaf // m.levels[level]] -= m.count[0, leaf]
            m.count[0, leaf] = 0
    return used


@implements(place, TreeMachine)
@kernel
def place_tree(m, st, j, units, busy, growth, forbidden, out):
    """The job's nodes by the tree rule and its switch limit (module docstring); the
    limit applies to queued jobs (the idle machine's check of a down set, with nothing
    queued, asks only whether the job fits at all)."""
    _count_free(m, busy, forbidden)
    free = 0
    for b in range(m.blocks):
        free += m.free[b]
    if free < units:
        return -1
    used = _leaves(m, units, busy, forbidden, out)
    if m.switches > 0 and st.ctr[QLEN] > 0:
        now = st.acc[NOW]
        if np.isnan(m.first_tried[j]):
            m.first_tried[j] = now
        due = m.first_tried[j] + m.switch_wait
        if used > m.switches and now < due:
            if m.timer[0] <= now or due < m.timer[0]:
                m.timer[0] = due
            return -1
    return units


@implements(wake, TreeMachine)
@kernel
def wake_tree(m, st):
    """The earliest switch wait to lapse after now (inf: none)."""
    return m.timer[0] if m.timer[0] > st.acc[NOW] else np.inf


@implements(blocked_cause, TreeMachine)
@kernel
def blocked_tree(m, st, j):
    """A job that cannot be placed lacks free nodes, or leaves within its limit."""
    return BLOCKED_NO_BOX


implements(dilate, TreeMachine)(dilate_block)
