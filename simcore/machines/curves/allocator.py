"""One-dimensional allocation along a processor ordering (Leung et al. 2002, Cplant).

The machine's processors are ranked along an ordering (`simcore.machines.curves.orderings`) and a
job of p processors gets p free ones, contiguous in rank where possible (non-contiguous
allocation is allowed). A *free interval* is a maximal run of consecutive free ranks; the
ordering is a line, so intervals do not wrap around. The rules (registry rows):

- `free-list`: the p lowest free ranks (Cplant 1.9's sorted free list);
- `first-fit`: the first interval of length >= p;
- `best-fit`: the shortest interval of length >= p, ties to the earliest;
- `sum-of-squares`: the interval minimising sum_i N(i)^2 after placement, N(i) the number
  of free intervals of length i, ties to the earliest. Placing p in an interval of
  length L changes that sum by 1 - 2 N(L) + (L > p ? 2 N(L - p) + 1 : 0);

each takes the p lowest ranks of its interval. When no interval is long enough, the job
gets p free processors that are consecutive in the order of free processors, those with
the smallest linear span (last rank - first rank), or with option `fallback_span=ring`
the smallest span around the ring of ranks (windows of the free list may then wrap);
ties go to the smallest first rank.

Any p free processors can run a p-processor job, so the allocators offer the `counts`
capability: schedulers decide with counts alone, exactly as on `flat:N`, and the
allocator only chooses which processors. Unit bit r of a placement is the processor of
rank r (so intervals are runs of zero bits); outputs name processors by their index
x + X*y + X*Y*z. Every run reports the locality of each job's processors
(`simcore.machines.curves.locality`): per job in the schedule (`nodes` and the LOCALITY columns)
and aggregated in the summary. With option `dilation` > 0 a job's run time grows with its
mean hop distance (see `DILATION` in `simcore.machines.registry` and `dilate_curve`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array
from simcore.base.bitset import clear, n_words
from simcore.base.jit import implements, kernel
from simcore.core.allocate import dilate, place
from simcore.core.columns import LOCALITY, LOCALITY_STATS, PER_PROCESSOR
from simcore.core.state import LOG_AT, LOG_JOB, LOG_LEN, N_ACTIVE
from simcore.jobs.jobs import Jobs
from simcore.machines.curves import locality
from simcore.machines.curves.orderings import order_of

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

#: How a job's processors are chosen along the ordering (the rows of the same names).
Rule = Literal["free-list", "first-fit", "best-fit", "sum-of-squares"]
FREE_LIST, FIRST_FIT, BEST_FIT, SUM_OF_SQUARES = range(len(get_args(Rule)))


class CurveMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    rule: int  # RULES
    ring: bool  # the fallback minimises the ring span
    order: np.ndarray  # (units,) int64: processor index of each rank
    sides: np.ndarray  # (3,) int64: X, Y, Z
    wrap: bool  # a torus: distances wrap around
    starts: np.ndarray  # (units,) int64 scratch: first rank of each free interval
    lengths: np.ndarray  # (units,) int64 scratch: its length
    count: np.ndarray  # (units + 1,) int64 scratch, zero between calls: intervals per length
    free: np.ndarray  # (units,) int64 scratch: free ranks in order
    dilation: float  # the run-time dilation model's coefficient (0: off)
    compact: np.ndarray  # (units + 1,) float64: least mean hops per size (dilation only)
    factor: np.ndarray  # (jobs,) float64: each job's dilation, 0 until it starts
    ranks: np.ndarray  # (units,) int64 scratch
    index: np.ndarray  # (units,) int64 scratch
    hist: np.ndarray  # (3, longest side) int64 scratch


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the ordering and the scratch: a few words per processor."""
    return spec.units * 8 * 12 + max(spec.dims3) * 24


def build(spec: MachineSpec, jobs: Jobs, *,
          rule: Rule) -> tuple[CurveMachine, np.ndarray, np.ndarray]:
    """The machine struct of `rule`; jobs need their requested size, and all place alike
    (one class: only counts matter)."""
    sides = spec.dims3
    units = spec.units
    wrap = spec.wrap
    dilation = spec.option("dilation")
    hist = np.zeros((3, max(sides)), dtype=np.int64)
    compact = np.zeros(units + 1)
    if dilation > 0:
        locality.compact_hops(np.array(sides, dtype=np.int64), wrap, hist, compact)
    options = dict(spec.options)
    machine = CurveMachine(
        units, n_words(units), True, get_args(Rule).index(rule),
        options.get("fallback_span", "linear") == "ring",
        np.ascontiguousarray(order_of(spec.ordering, sides)), np.array(sides, dtype=np.int64),
        wrap, np.zeros(units, dtype=np.int64), np.zeros(units, dtype=np.int64),
        np.zeros(units + 1, dtype=np.int64), np.zeros(units, dtype=np.int64), dilation,
        compact, np.zeros(len(jobs)), np.zeros(units, dtype=np.int64),
        np.zeros(units, dtype=np.int64), hist)
    return machine, jobs.size, np.zeros(len(jobs), dtype=np.int64)


@kernel
def _is_free(busy, forbidden, r):
    """Whether rank r is neither busy nor forbidden (`forbidden` empty: nothing is)."""
    w = r >> 6
    bit = np.uint64(1) << np.uint64(r & 63)
    if busy[w] & bit:
        return False
    return forbidden.shape[0] == 0 or not forbidden[w] & bit


@kernel
def _set(out, r):
    out[r >> 6] |= np.uint64(1) << np.uint64(r & 63)


@kernel
def _choose_interval(m, n_intervals, p):
    """The interval the rule picks for p processors, or -1 if none is long enough."""
    lengths, count, rule = m.lengths, m.count, m.rule
    best = -1
    if rule == SUM_OF_SQUARES:
        for i in range(n_intervals):
            count[lengths[i]] += 1
        best_change = 0
        for i in range(n_intervals):
            length = lengths[i]
            if length < p:
                continue
            change = 1 - 2 * count[length]
            if length > p:
                change += 2 * count[length - p] + 1
            if best < 0 or change < best_change:
                best, best_change = i, change
        for i in range(n_intervals):
            count[lengths[i]] = 0
        return best
    for i in range(n_intervals):
        if lengths[i] < p:
            continue
        if rule == FIRST_FIT:
            return i
        if best < 0 or lengths[i] < lengths[best]:
            best = i
    return best


@kernel
def _fallback(m, n_free, p):
    """The first position in m.free of the p consecutive free processors of least span
    (linear, or around the ring of ranks), ties to the smallest first rank."""
    free, n = m.free, m.units
    best = 0
    best_span = n + 1
    windows = n_free if m.ring else n_free - p + 1
    for i in range(windows):
        last = free[(i + p - 1) % n_free]
        span = last - free[i] if last >= free[i] else last - free[i] + n
        if span < best_span:
            best, best_span = i, span
    return best


@implements(place, CurveMachine)
@kernel
def place_curve(m, st, j, units, busy, growth, forbidden, out):
    """The rule's p = `units` processors among those free in `busy` and not `forbidden`."""
    n, p = m.units, units
    free, starts, lengths = m.free, m.starts, m.lengths
    clear(out)
    n_free = 0
    n_intervals = 0
    r = 0
    while r < n:
        if not _is_free(busy, forbidden, r):
            r += 1
            continue
        first = r
        while r < n and _is_free(busy, forbidden, r):
            free[n_free] = r
            n_free += 1
            r += 1
        starts[n_intervals] = first
        lengths[n_intervals] = r - first
        n_intervals += 1
        if m.rule == FREE_LIST and n_free >= p:
            break
    if n_free < p:
        return -1
    if m.rule == FREE_LIST:
        for k in range(p):
            _set(out, free[k])
        return p
    i = _choose_interval(m, n_intervals, p)
    if i >= 0:
        for k in range(p):
            _set(out, starts[i] + k)
        return p
    first = _fallback(m, n_free, p)
    for k in range(p):
        _set(out, free[(first + k) % n_free])
    return p


@implements(dilate, CurveMachine)
@kernel
def dilate_curve(m, st, jobs, t):
    """Run-time dilation of the jobs allocated at t: run x (1 + dilation x max(0,
    h / h_compact - 1)), h their mean pairwise hop distance and h_compact the least mean
    hop distance of a box-filling placement of their size (`locality.compact_hops`)."""
    if m.dilation == 0:
        return
    run, out = st.run, st.out
    for i in range(st.ctr[N_ACTIVE]):
        slot = run.active[i]
        j = run.slot_job[slot]
        if m.factor[j] > 0 or out.sched_s[j] != t:
            continue
        p = locality.unpack(run.held[slot], m.units, m.ranks)
        for k in range(p):
            m.index[k] = m.order[m.ranks[k]]
        hops = locality.mean_hops(m.index, p, m.sides, m.wrap, m.hist)
        factor = 1.0
        if m.compact[p] > 0:
            factor += m.dilation * max(0.0, hops / m.compact[p] - 1.0)
        m.factor[j] = factor
        end = out.start_s[j] + jobs.run[j] * factor
        run.slot_end[slot] = end
        out.end_s[j] = end


def job_metrics(m: CurveMachine, st, jobs) -> tuple[dict[str, pa.Array], dict[str, float]]:
    """Per-job columns (`nodes`, the LOCALITY metrics, `dilation` when on) and their run
    aggregates (metrics.locality_aggregates) from the run's placement log."""
    n_log = int(st.ctr[LOG_LEN])
    size = np.asarray(st.out.alloc)
    offsets = np.zeros(size.shape[0] + 1, dtype=np.int64)
    np.cumsum(size, out=offsets[1:])
    values = np.full((size.shape[0], locality.N_METRICS), np.nan)
    nodes = np.zeros(offsets[-1], dtype=np.int64)
    sides = tuple(int(s) for s in m.sides)
    locality.measure_log(
        st.out.log_entry[:n_log, LOG_JOB], st.out.log_entry[:, LOG_AT], st.out.log_code,
        m.units, m.order, m.sides, m.wrap, locality.curve_dims(sides),
        locality.smallest_cubes(sides), m.ranks, m.index, m.hist,
        np.zeros(m.units, dtype=np.int64), np.zeros(m.units, dtype=np.int64),
        values, nodes, offsets)
    columns: dict[str, pa.Array] = {
        "nodes": pa.ListArray.from_arrays(arrow_array(offsets, pa.int32()), arrow_array(nodes))}
    for k, column in enumerate(LOCALITY):
        columns[column.name] = arrow_array(values[:, k].astype(column.type))
    if m.dilation > 0:
        columns["dilation"] = arrow_array(m.factor)
    run_s = st.out.end_s - st.out.start_s
    return columns, aggregate(values, size, run_s)


def metrics_text(summary: Mapping[str, Any]) -> tuple[str, str] | None:
    """The locality aggregates `job_metrics` measured, as the command line prints them."""
    if summary.get("span_ring_mean") is None:
        return None
    s = summary
    return "locality", (f"mean span {s['span_ring_mean']:.1f} (linear "
                        f"{s['span_linear_mean']:.1f}), bounding cube / smallest "
                        f"{s['bcube_ratio_mean']:.2f}, components {s['components_mean']:.2f}, "
                        f"hops {s['mean_hops_mean']:.2f}")


def aggregate(values: np.ndarray, size: np.ndarray, run_s: np.ndarray) -> dict[str, float]:
    """Run aggregates of per-job metrics values[:, k] (LOCALITY order): LOCALITY_STATS."""
    weight = run_s.sum()
    out = {}
    for k, column in enumerate(LOCALITY):
        v = values[:, k]
        stats = {"mean": v.mean(), "max": v.max(), "sumsq": (v * v).sum(),
                 "weighted": (v * run_s).sum() / weight if weight > 0 else v.mean(),
                 "per_proc": (v / size).mean()}
        for stat in LOCALITY_STATS:
            if stat != "per_proc" or column.name in PER_PROCESSOR:
                out[f"{column.name}_{stat}"] = float(stats[stat])
    return out
