"""Slurm's topology/block selection on a machine of base blocks (`blocks:AxB`), as
`src/plugins/topology/block/eval_nodes_block.c` of Slurm 25.11.7 chooses nodes (every node
of equal weight; docs/modern.md lists each rule with its source).

The machine is A base blocks of B nodes (`blocks:64x18`: 64 NVL72 racks of 18 nodes); node
i of base block b is unit b B + i. `block_sizes` is Slurm's BlockSizes: its first value P is
the planning size of a base block (P < B leaves B - P spare nodes per base block, which
still count as free), each value P 2^k makes level k, the blocks of 2^k base blocks whose
indices agree but for their last k bits (the last one shorter where 2^k does not divide
A); by default levels 0 to 4.

A job of n nodes (placed whole) needs ceil(n / P) base blocks, so level L = ceil(log2 of
that). It goes into a block of the lowest configured level >= L (none: the whole machine
is one block), and may touch at most m = ceil(n / (P 2^l)) blocks of the highest
configured level l < L (l = 0 when L = 0), its *low-level blocks*. A block qualifies when
its free nodes, counting only its m fullest low-level blocks where it has more than m,
are at least n; of those the one with the fewest free nodes wins, ties going to the
highest index. Inside it, base blocks are taken one per round, each giving its lowest
free nodes up to what is left of the job:

- where the block has more than m low-level blocks, a base block in a low-level block
  already used comes before one in a new low-level block; between new ones, the one whose
  free nodes cover what is left, the smaller if both do, the larger if neither does
  (equal: the base-block rule); once m are used no new one is taken;
- the base-block rule: the base block of fewest free nodes that covers what is left, else
  the one of most free nodes; ties to the highest index.

With a segment s (option `segment`: one size for every job, or a policy of its size in
SEGMENT_POLICIES) a job runs as k = ceil(n / s) segments of s nodes (Slurm refuses a size
that is not a multiple of s; here the job is rounded up and the nodes added are lost
capacity). Each segment is placed by the rule above on what earlier segments left, so it
lies inside one base block (s <= P). `segment_placement`: `spread` (--spread-segments) takes
the base blocks a segment used away from the later ones; `consolidate`
(--consolidate-segments) confines every segment to the block of the level the whole job
would need (with `spread`, a whole base block per segment) that the first one chooses,
among the blocks with n free nodes, trying the next such block where a later segment
finds no room.

A job whose nodes span k base blocks runs (1 + d (k - 1) / k) times its run time
(`block_dilation` d); each job's base blocks spanned is a per-job column and the share of
jobs inside one base block a run metric. Failure domains are nodes, or base blocks
(`failure_domain: block`, a rack's switch tray or power shelf).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.base.arrays import arrow_array
from simcore.base.bitset import clear, n_words
from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, dilate, place
from simcore.core.state import BLOCKED_NO_BOX, N_ACTIVE
from simcore.jobs.jobs import Jobs

if TYPE_CHECKING:
    import pyarrow as pa

    from simcore.machines.spec import MachineSpec

#: Named segment policies: (smallest job size in nodes, segment) steps, the last one a
#: job's size reaches applying. `recommended`: segment 1 below 8 nodes (32 GPUs at 4 per
#: node), 4 from 8 to 16 nodes, 16 above (64 GPUs): the sizes a published closed
#: simulation of an NVL72 cluster recommends.
SEGMENT_POLICIES: dict[str, tuple[tuple[int, int], ...]] = {
    "recommended": ((1, 1), (8, 4), (17, 16)),
}
_WHOLE = 0  # the segment of a job placed whole
_DEFAULT_LEVELS = (0, 1, 2, 3, 4)  # Slurm's levels without BlockSizes
_MAX_LEVEL = 15  # Slurm's largest level


class BlockMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    block: int  # nodes per base block
    blocks: int  # base blocks
    plan: int  # planning nodes per base block (BlockSizes' first value)
    levels: np.ndarray  # (levels,) int64: configured levels k (blocks of 2^k), ascending
    segment: np.ndarray  # (jobs,) int64: each job's segment, 0: placed whole
    spread: bool  # --spread-segments
    consolidate: bool  # --consolidate-segments
    dilation: float
    block_domains: bool  # a base block fails as a whole
    free: np.ndarray  # (blocks,) int64 scratch: free nodes per base block
    used: np.ndarray  # (blocks,) bool scratch: base blocks taken by the job
    low_free: np.ndarray  # (blocks,) int64 scratch: free nodes per low-level block
    low_used: np.ndarray  # (blocks,) bool scratch: low-level blocks touched
    closed: np.ndarray  # (blocks,) bool scratch: base blocks segments may not use
    shut: np.ndarray  # (blocks,) bool scratch: blocks consolidated segments may not use
    spanned: np.ndarray  # (jobs,) int64: base blocks spanned at the job's last start
    factor: np.ndarray  # (jobs,) float64: its run-time dilation


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the per-block scratch (per-job arrays are the jobs')."""
    return 35 * spec.dims[0]


def planning(spec: MachineSpec) -> tuple[int, np.ndarray]:
    """(planning nodes per base block, configured levels) from `block_sizes`; a SpecError
    names a size Slurm would refuse."""
    block = spec.dims[1]
    text = spec.option("block_sizes").strip()
    if not text:
        return block, np.array(_DEFAULT_LEVELS, dtype=np.int64)
    sizes = []
    for item in text.split(","):
        try:
            sizes.append(int(item))
        except ValueError:
            raise SpecError(f"machine {spec}: block_sizes item {item!r}; expected node "
                            "counts separated by commas, e.g. '18,72,288'") from None
    plan = sizes[0]
    if not 1 <= plan <= block:
        raise SpecError(f"machine {spec}: block_sizes {plan}; expected the planning size of "
                        f"a base block first, 1..{block} nodes")
    levels = []
    for nodes in sizes:
        k = nodes // plan
        if nodes <= 0 or nodes % plan or k & (k - 1) or k > 2 ** _MAX_LEVEL:
            raise SpecError(f"machine {spec}: block_sizes {nodes}; expected {plan} nodes "
                            f"(the first size) times a power of two up to 2^{_MAX_LEVEL}")
        levels.append(k.bit_length() - 1)
    if levels != sorted(set(levels)):
        raise SpecError(f"machine {spec}: block_sizes {text!r}; expected sizes ascending, "
                        "each once")
    return plan, np.array(levels, dtype=np.int64)


def segments(spec: MachineSpec, size: np.ndarray) -> np.ndarray:
    """Each job's segment in nodes (0: placed whole) by the `segment` option."""
    text = spec.option("segment")
    plan = planning(spec)[0]
    if text == "whole":
        return np.zeros(size.shape[0], dtype=np.int64)
    if text in SEGMENT_POLICIES:
        steps = SEGMENT_POLICIES[text]
        lows = np.array([low for low, _ in steps])
        values = np.array([min(seg, plan) for _, seg in steps], dtype=np.int64)
        return values[np.searchsorted(lows, size, side="right") - 1]
    if not text.isdigit() or not 1 <= int(text) <= plan:
        raise SpecError(f"machine {spec}: segment {text!r}; expected 'whole', a node count "
                        f"1..{plan} (the planning size of a base block) or one of "
                        f"{sorted(SEGMENT_POLICIES)}")
    return np.full(size.shape[0], int(text), dtype=np.int64)


def _sizes(spec: MachineSpec, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes run, segment) of jobs of `size` nodes: sizes rounded up to whole segments."""
    segment = segments(spec, size)
    step = np.maximum(segment, 1)
    return -(-size // step) * step, segment


def machine(spec: MachineSpec, segment: np.ndarray) -> BlockMachine:
    """A fresh machine struct for jobs of these segments."""
    blocks, block = spec.dims
    plan, levels = planning(spec)
    n, words = segment.shape[0], n_words(spec.units)
    arrangement = spec.option("segment_placement")
    return BlockMachine(
        spec.units, words, False, block, blocks, plan, levels, segment,
        "spread" in arrangement, "consolidate" in arrangement, spec.option("block_dilation"),
        spec.option("failure_domain") == "block", np.zeros(blocks, dtype=np.int64),
        np.zeros(blocks, dtype=np.bool_), np.zeros(blocks, dtype=np.int64),
        np.zeros(blocks, dtype=np.bool_), np.zeros(blocks, dtype=np.bool_),
        np.zeros(blocks, dtype=np.bool_),
        np.zeros(n, dtype=np.int64), np.ones(n))


def refused(spec: MachineSpec, jobs: Jobs) -> np.ndarray:
    """Jobs the idle machine has no room for (more segments than its base blocks hold)."""
    size, segment = _sizes(spec, jobs.size)
    kinds, inverse = np.unique(np.stack([size, segment], axis=1), axis=0, return_inverse=True)
    m = machine(spec, kinds[:, 1].copy())
    idle = np.zeros(m.words, dtype=np.uint64)
    out = np.zeros(m.words, dtype=np.uint64)
    never = np.array([place_block(m, None, i, int(kinds[i, 0]), idle, 0, idle[:0], out) < 0
                      for i in range(kinds.shape[0])], dtype=bool)
    return never[inverse.ravel()]


def build(spec: MachineSpec, jobs: Jobs) -> tuple[BlockMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's nodes as run (whole segments) and its class (its
    nodes and segment: such jobs place alike)."""
    size, segment = _sizes(spec, jobs.size)
    return machine(spec, segment), size, size * (spec.units + 1) + segment


def failure_domains(struct: BlockMachine) -> tuple[np.ndarray, np.ndarray]:
    """Every node alone, or every base block (`failure_domain: block`)."""
    span = struct.block if struct.block_domains else 1
    count = struct.units // span
    masks = np.zeros((count, struct.words), dtype=np.uint64)
    for d in range(count):
        for u in range(d * span, (d + 1) * span):
            masks[d, u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    return masks, np.full(count, span, dtype=np.int64)


@kernel
def _is_set(bits, u):
    return (bits[u >> 6] >> np.uint64(u & 63)) & np.uint64(1)


@kernel
def _count_free(m, busy, forbidden):
    """m.free[b]: the free nodes of base block b (neither busy nor forbidden)."""
    guarded = forbidden.shape[0] > 0
    for b in range(m.blocks):
        free = 0
        for u in range(b * m.block, (b + 1) * m.block):
            if not _is_set(busy, u) and not (guarded and _is_set(forbidden, u)):
                free += 1
        m.free[b] = free


@kernel
def _levels_for(m, n):
    """(level, low level, m) for n nodes: the lowest configured level whose blocks hold n
    (-1: none, the whole machine is one block), the highest configured level below it and
    how many blocks of that one the job may touch."""
    need = (n + m.plan - 1) // m.plan
    wanted = 0
    while (1 << wanted) < need:
        wanted += 1
    level, low = -1, 0
    for k in m.levels:
        if k >= wanted and level < 0:
            level = k
        if k <= wanted - 1:
            low = k
    per_low = m.plan << low
    return level, low, (n + per_low - 1) // per_low


@kernel
def _low_counts(m, first, end, low):
    """m.low_free[i]: free nodes of low-level block i (i = b >> low); returns how many low-level
    blocks [first, end) touches."""
    count = 0
    for b in range(first, end):
        i = b >> low
        if b == first or i != (b - 1) >> low:
            m.low_free[i] = 0
            count += 1
        m.low_free[i] += m.free[b]
    return count


@kernel
def _capacity(m, first, end, low, limit):
    """Free nodes of base blocks [first, end), counting only its `limit` fullest low-level
    blocks where it has more."""
    count = _low_counts(m, first, end, low)
    total = 0
    if count <= limit:
        for b in range(first, end):
            total += m.free[b]
        return total
    lo, hi = first >> low, ((end - 1) >> low) + 1
    for i in range(lo, hi):
        m.low_used[i] = False
    for _ in range(limit):  # the fullest low-level blocks, one at a time
        best = -1
        for i in range(lo, hi):
            if not m.low_used[i] and (best < 0 or m.low_free[i] > m.low_free[best]):
                best = i
        m.low_used[best] = True
        total += m.low_free[best]
    return total


@kernel
def _choose_block(m, n, level, low, limit, lo, hi):
    """The first base block of the block of `level` within [lo, hi) a job of n nodes goes
    into (-1: none): among those whose capacity holds n, the fewest free nodes, ties to
    the highest index."""
    step = (hi - lo) if level < 0 else 1 << level
    best, best_free = -1, 0
    first = lo if level < 0 else (lo >> level) << level
    while first < hi:
        end = min(first + step, hi)
        start = max(first, lo)
        if _capacity(m, start, end, low, limit) >= n:
            free = 0
            for b in range(start, end):
                free += m.free[b]
            if best < 0 or free <= best_free:
                best, best_free = start, free
        first += step
    return best


@kernel
def _prefers(m, b, best, left, low, rule):
    """Whether base block b is preferred to `best` for `left` nodes (module docstring)."""
    if best < 0:
        return True
    if rule:
        i, j = b >> low, best >> low
        if i != j:
            if m.low_used[j] != m.low_used[i]:
                return m.low_used[i]
            if not m.low_used[i] and m.low_free[i] != m.low_free[j]:
                fits, fits_best = m.low_free[i] >= left, m.low_free[j] >= left
                if fits != fits_best:
                    return fits
                return (m.low_free[i] < m.low_free[j]) == fits
    fits, fits_best = m.free[b] >= left, m.free[best] >= left
    if fits != fits_best:
        return fits
    return m.free[b] <= m.free[best] if fits else m.free[b] >= m.free[best]


@kernel
def _take(m, b, count, busy, forbidden, out):
    """Add to `out` the `count` lowest nodes of base block b free in `busy`, not forbidden
    and not in `out` already."""
    guarded = forbidden.shape[0] > 0
    u = b * m.block
    while count > 0:
        if not _is_set(busy, u) and not _is_set(out, u) and \
                not (guarded and _is_set(forbidden, u)):
            out[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
            count -= 1
        u += 1


@kernel
def _fill(m, first, end, n, low, limit, busy, forbidden, out):
    """Take n nodes of base blocks [first, end) into `out` (module docstring); whether it
    could."""
    rule = _low_counts(m, first, end, low) > limit
    for b in range(first, end):
        m.used[b] = False
        m.low_used[b >> low] = False
    left = n
    while left > 0:
        best = -1
        for b in range(first, end):
            if m.used[b] or m.free[b] == 0 or (rule and limit == 0 and not m.low_used[b >> low]):
                continue
            if _prefers(m, b, best, left, low, rule):
                best = b
        if best < 0:
            return False
        m.used[best] = True
        if rule and not m.low_used[best >> low]:
            m.low_used[best >> low] = True
            limit -= 1
        take = min(left, m.free[best])
        left -= take
        _take(m, best, take, busy, forbidden, out)
    return True


@kernel
def _place_whole(m, n, busy, forbidden, lo, hi, out):
    """n nodes by the block rule within base blocks [lo, hi) (m.free counted): the first
    base block of the block chosen, or -1 where there is none or it could not be filled."""
    level, low, limit = _levels_for(m, n)
    first = _choose_block(m, n, level, low, limit, lo, hi)
    if first < 0:
        return -1
    end = hi if level < 0 else min(first + (1 << level), hi)
    return first if _fill(m, first, end, n, low, limit, busy, forbidden, out) else -1


@kernel
def _place_segments(m, k, s, busy, forbidden, lo, hi, out):
    """k segments of s nodes one after another within base blocks [lo, hi) that are not
    closed; the base block of the first, or -1 where they do not all fit. As s <= P, the
    rule for s nodes is level 0: the base block of fewest free nodes that holds s (ties:
    the highest), its lowest free nodes. Each segment takes s nodes of one base block, so
    they all fit exactly when the base blocks hold k segments between them."""
    _count_free(m, busy, forbidden)
    room = 0
    for b in range(lo, hi):
        if not m.closed[b]:
            room += 1 if m.spread and m.free[b] >= s else m.free[b] // s
    if room < k:
        return -1
    clear(out)
    first = -1
    for _ in range(k):
        best = -1
        for b in range(lo, hi):
            if not m.closed[b] and m.free[b] >= s and (best < 0 or m.free[b] <= m.free[best]):
                best = b
        first = best if first < 0 else first
        m.free[best] -= s
        m.closed[best] = m.closed[best] or m.spread
        _take(m, best, s, busy, forbidden, out)
    return first


@kernel
def _place_consolidated(m, k, s, units, busy, forbidden, out):
    """k segments of s nodes inside one block of the level the whole job needs: the one
    the first segment chooses among those with `units` free nodes, else the next."""
    whole = k * ((s + m.plan - 1) // m.plan) * m.plan if m.spread else units
    level = _levels_for(m, whole)[0]
    step = m.blocks if level < 0 else 1 << level
    _count_free(m, busy, forbidden)
    for group in range(0, m.blocks, step):
        free = 0
        for b in range(group, min(group + step, m.blocks)):
            free += m.free[b]
        for b in range(group, min(group + step, m.blocks)):
            m.shut[b] = free < units
    while True:
        for b in range(m.blocks):
            m.closed[b] = m.shut[b]
        first = _place_segments(m, 1, s, busy, forbidden, 0, m.blocks, out)
        if first < 0:
            return -1
        group = (first // step) * step
        hi = min(group + step, m.blocks)
        for b in range(m.blocks):
            m.closed[b] = False
        if _place_segments(m, k, s, busy, forbidden, group, hi, out) >= 0:
            return units
        for b in range(group, hi):
            m.shut[b] = True


@implements(place, BlockMachine)
@kernel
def place_block(m, st, j, units, busy, growth, forbidden, out):
    """The job's nodes by the block rule (module docstring); growth does not apply."""
    s = m.segment[j]
    for b in range(m.blocks):
        m.closed[b] = False
    if s == _WHOLE:
        _count_free(m, busy, forbidden)
        clear(out)
        return units if _place_whole(m, units, busy, forbidden, 0, m.blocks, out) >= 0 else -1
    if m.consolidate:
        return _place_consolidated(m, units // s, s, units, busy, forbidden, out)
    placed = _place_segments(m, units // s, s, busy, forbidden, 0, m.blocks, out)
    return units if placed >= 0 else -1


@implements(blocked_cause, BlockMachine)
@kernel
def blocked_block(m, st, j):
    """A job that cannot be placed lacks a block with room for it."""
    return BLOCKED_NO_BOX


@implements(dilate, BlockMachine)
@kernel
def dilate_block(m, st, jobs, t):
    """Record the base blocks spanned by the jobs started at t, and stretch their run
    times by (1 + d (k - 1) / k)."""
    run, out = st.run, st.out
    for i in range(st.ctr[N_ACTIVE]):
        slot = run.active[i]
        j = run.slot_job[slot]
        if out.sched_s[j] != t:
            continue
        held = run.held[slot]
        spanned = 0
        for b in range(m.blocks):
            for u in range(b * m.block, (b + 1) * m.block):
                if _is_set(held, u):
                    spanned += 1
                    break
        m.spanned[j] = spanned
        if m.dilation > 0:
            factor = 1.0 + m.dilation * (spanned - 1) / spanned
            m.factor[j] = factor
            end = out.start_s[j] + jobs.run[j] * factor
            run.slot_end[slot] = end
            out.end_s[j] = end


def job_metrics(m: BlockMachine, st: Any, jobs: Any) -> tuple[dict[str, pa.Array],
                                                               dict[str, float]]:
    """Per job its base blocks spanned (and its dilation when on); the run's mean base
    blocks spanned and share of jobs inside one base block, over the jobs that ran."""
    ran = m.spanned > 0
    columns = {"blocks_spanned": arrow_array(m.spanned)}
    if m.dilation > 0:
        columns["dilation"] = arrow_array(m.factor)
    spanned = m.spanned[ran]
    return columns, {
        "blocks_spanned_mean": float(spanned.mean()) if spanned.size else float("nan"),
        "one_block_share": float((spanned == 1).mean()) if spanned.size else float("nan")}


def metrics_text(summary: Mapping[str, Any]) -> tuple[str, str] | None:
    """The placement quality `job_metrics` measured, as the command line prints it."""
    if summary.get("one_block_share") is None:
        return None
    return "blocks", (f"{100 * summary['one_block_share']:.1f}% of jobs inside one base "
                      f"block, mean {summary['blocks_spanned_mean']:.2f} base blocks spanned")
