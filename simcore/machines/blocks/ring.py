"""Slurm's topology/ring selection on a machine of racks (`blocks:AxB`), as
`src/plugins/topology/ring/eval_nodes_ring.c:eval_nodes_ring` of Slurm 26.05.3 chooses
nodes (every node of equal weight, whole-node jobs; docs/modern.md lists each rule with
its source).

The machine's nodes, in order, form rings of `ring_racks` consecutive racks each (0: one
ring of every node), as `RingName=... Nodes=...` lines of topology.conf would list them; a
ring's last node is next to its first. A job of n nodes needs a run of n consecutive free
nodes of one ring, which may wrap around its end:

- each ring at least n long with at least n free nodes offers one run: the one starting
  at its lowest position (a scan that, meeting a busy node, starts again just past it);
- of the rings that offer one, the ring with the fewest free nodes wins (best fit), ties
  going to the ring listed first.

With `ring_segment` s (--segment=s) the job is k = n / s segments of s nodes, each such a
run, and each in a different ring: the k rings of fewest free nodes that offer a run of s
(ties: those listed first). Slurm refuses a size that is not a multiple of s; here it is
rounded up (the nodes added are lost capacity), and a segment larger than the job is
ignored, as Slurm does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.bitset import clear, n_words
from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause, dilate, place
from simcore.core.state import BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.machines.blocks.allocator import (
    _is_set,
    dilate_block,
    failure_domains,
    job_metrics,
    metrics_text,
)

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec

__all__ = ["build", "failure_domains", "job_metrics", "memory_bytes", "metrics_text",
           "refused"]


class RingMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    block: int  # nodes per rack
    blocks: int  # racks
    ring: int  # nodes per ring (the last ring may be shorter)
    segment: np.ndarray  # (jobs,) int64: each job's segment, its size where it has none
    dilation: float
    block_domains: bool  # a rack fails as a whole
    start: np.ndarray  # (rings,) int64 scratch: the run each ring offers (-1: none)
    idle: np.ndarray  # (rings,) int64 scratch: free nodes per ring
    spanned: np.ndarray  # (jobs,) int64: racks spanned at the job's last start
    factor: np.ndarray  # (jobs,) float64: its run-time dilation


def _ring(spec: MachineSpec) -> int:
    """Nodes per ring; a SpecError names a ring larger than the machine."""
    racks, block = spec.dims
    per = spec.option("ring_racks")
    if per > racks:
        raise SpecError(f"machine {spec}: ring_racks {per}; expected at most the machine's "
                        f"{racks} racks (0: one ring of every node)")
    return (per or racks) * block


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the per-ring scratch (per-job arrays are the jobs')."""
    return 16 * (spec.units // _ring(spec) + 1)


def _sizes(spec: MachineSpec, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes run, segment) per job: sizes rounded up to whole segments; a job no larger
    than its segment is one run of its size."""
    size = size.astype(np.int64)
    s = spec.option("ring_segment")
    segment = np.where((s > 0) & (size > s), s, size)
    return -(-size // segment) * segment, segment


def build(spec: MachineSpec, jobs: Jobs) -> tuple[RingMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's nodes and its class (its nodes and segment)."""
    racks, block = spec.dims
    ring = _ring(spec)
    rings = -(-spec.units // ring)
    size, segment = _sizes(spec, jobs.size)
    struct = RingMachine(
        spec.units, n_words(spec.units), False, block, racks, ring, segment,
        spec.option("block_dilation"), spec.option("failure_domain") == "block",
        np.zeros(rings, dtype=np.int64), np.zeros(rings, dtype=np.int64),
        np.zeros(size.shape[0], dtype=np.int64), np.ones(size.shape[0]))
    return struct, size, size * (spec.units + 1) + segment


def refused(spec: MachineSpec, jobs: Jobs) -> np.ndarray:
    """Jobs the idle machine has no room for: a run longer than a ring, or more segments
    than rings that hold one."""
    size, segment = _sizes(spec, jobs.size)
    ring = _ring(spec)
    lengths = np.minimum(ring, spec.units - np.arange(0, spec.units, ring))
    holding = (lengths[None, :] >= segment[:, None]).sum(axis=1)
    return holding < size // segment


@kernel
def _free(busy, forbidden, u):
    return not _is_set(busy, u) and not (forbidden.shape[0] > 0 and _is_set(forbidden, u))


@kernel
def _offer(m, r, s, busy, forbidden):
    """m.idle[r] and m.start[r]: ring r's free nodes and the first run of s consecutive
    free nodes it offers, wrapping around (-1: none)."""
    first = r * m.ring
    length = min(m.ring, m.units - first)
    idle = 0
    for p in range(length):
        if _free(busy, forbidden, first + p):
            idle += 1
    m.idle[r] = idle
    m.start[r] = -1
    if length < s or idle < s:
        return
    start = 0
    while start < length:
        run = 0
        while run < s and _free(busy, forbidden, first + (start + run) % length):
            run += 1
        if run == s:
            m.start[r] = start
            return
        start += run + 1


@implements(place, RingMachine)
@kernel
def place_ring(m, st, j, units, busy, growth, forbidden, out):
    """The job's nodes by the ring rule (module docstring)."""
    s = m.segment[j]
    rings = m.start.shape[0]
    for r in range(rings):
        _offer(m, r, s, busy, forbidden)
    clear(out)
    for _ in range(units // s):
        best = -1
        for r in range(rings):
            if m.start[r] >= 0 and (best < 0 or m.idle[r] < m.idle[best]):
                best = r
        if best < 0:
            return -1
        first = best * m.ring
        length = min(m.ring, m.units - first)
        for p in range(s):
            u = first + (m.start[best] + p) % length
            out[u >> 6] |= np.uint64(1) << np.uint64(u & 63)
        m.start[best] = -1  # one segment per ring
    return units


@implements(blocked_cause, RingMachine)
@kernel
def blocked_ring(m, st, j):
    """A job that cannot be placed lacks a free run of a ring."""
    return BLOCKED_NO_BOX


implements(dilate, RingMachine)(dilate_block)
