"""Kueue's topology-aware scheduling (TAS) on a machine of racks (`blocks:AxB`), as
`pkg/cache/scheduler/tas_flavor_snapshot.go` of Kueue v0.15.8 places a pod set of one pod
per node (identical nodes; docs/modern.md lists each rule with its source).

The topology's levels, top down, are the switch groups of `rack_groups` below the root
(named by their racks, e.g. "4"), "rack" and "host"; domains are named so that their
order is their index order. A job of n nodes is a pod set of n pods with a request
(`tas_request`) at a level (`tas_level`):

- each domain counts its free hosts ("pods") and its slices: with `slice_size` S at
  `slice_level`, a domain there holds floor(pods / S) slices and one above the sum of its
  children's; without, S = 1 at the hosts. The job needs n / S slices;
- the level search: a domain of the level that holds them all is chosen by best fit (the
  fewest slices that do, then the fewest pods, then the first name). Where none does,
  `required` fails (the job waits; one the idle machine cannot hold is refused),
  `preferred` tries one level up, and at the top (or for `unconstrained`, which starts at
  the hosts, or at the top with slices) the domains are taken greedily;
- the greedy, BestFit: in order of slices descending, pods ascending, name, each domain
  whole until one holds what is left, then the best fit among those left takes the rest;
  LeastFreeCapacity: in order of slices ascending, each whole, the first that holds the
  rest takes it;
- the descent: down to the slice level the children of every domain chosen are pooled and
  the greedy runs again for the whole job (without slices, down to the hosts: the job
  takes the first free hosts of the racks chosen); below the slice level each domain
  gives its pods to its own children, in order of pods ascending, each whole until one
  holds the rest, and a rack its first free hosts.

`tas_profile`: `mixed` (v0.15's default, TASProfileMixed: LeastFreeCapacity for
unconstrained requests, BestFit for the others), `best-fit` or `least-free`. `tas_level:
fit` asks each job for the lowest level whose domains can hold it (a job larger than them
all: the top level, preferred). Admission is the scheduler's: Kueue's BestEffortFIFO is
`scan-all` (a job that does not fit waits for a release, those behind it go on),
StrictFIFO is `fcfs`; neither backfills.
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

__all__ = ["build", "failure_domains", "job_metrics", "memory_bytes", "metrics_text",
           "refused"]

REQUIRED, PREFERRED, UNCONSTRAINED = 0, 1, 2
_REQUESTS = {"required": REQUIRED, "preferred": PREFERRED, "unconstrained": UNCONSTRAINED}


class KueueMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool
    block: int  # hosts per rack
    blocks: int  # racks
    span: np.ndarray  # (levels,) int64: racks per domain, top level first, the rack last
    request: np.ndarray  # (jobs,) int64: REQUIRED, PREFERRED or UNCONSTRAINED
    level: np.ndarray  # (jobs,) int64: the level searched first (len(span): the hosts)
    least_free: np.ndarray  # (jobs,) bool: LeastFreeCapacity, else BestFit
    slice_size: int  # S (1: none)
    slice_level: int  # the level slices are counted at (len(span): the hosts)
    dilation: float
    block_domains: bool  # a rack fails as a whole
    free: np.ndarray  # (racks,) int64 scratch: free hosts per rack
    pods: np.ndarray  # (levels, racks) int64 scratch: free hosts per domain
    slices: np.ndarray  # (levels, racks) int64 scratch: slices per domain
    take: np.ndarray  # (levels, racks) int64 scratch: slices (pods below the slice
    # level) each domain gives the job, -1: not in the pool
    order: np.ndarray  # (racks,) int64 scratch: a pool in order
    spanned: np.ndarray  # (jobs,) int64: racks spanned at the job's last start
    factor: np.ndarray  # (jobs,) float64: its run-time dilation


def _levels(spec: MachineSpec) -> tuple[np.ndarray, list[str]]:
    """(racks per domain top down, ending with the rack; level names)."""
    groups = rack_levels(spec)[1:-1][::-1] if spec.dims[0] > 1 else np.zeros(0, np.int64)
    names = [str(g) for g in groups]
    return np.array([*groups, 1], dtype=np.int64), [*names, "rack", "host"]


def _level(spec: MachineSpec, option: str, names: list[str]) -> int:
    value = spec.option(option)
    if value not in names:
        raise SpecError(f"machine {spec}: {option} {value!r}; expected one of the topology's "
                        f"levels {names} (rack counts from rack_groups)")
    return names.index(value)


def _requests(spec: MachineSpec, size: np.ndarray, span: np.ndarray,
              names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(request, level searched first) per job."""
    hosts = len(span)
    asked = _REQUESTS[spec.option("tas_request")]
    request = np.full(size.shape[0], asked, dtype=np.int64)
    if asked == UNCONSTRAINED:  # at the hosts; with slices alone, at the top
        level = np.full(size.shape[0], 0 if spec.option("slice_size") else hosts)
    elif spec.option("tas_level") == "fit":
        room = np.array([*(np.minimum(span, spec.dims[0]) * spec.dims[1]), 1])
        holds = size[:, None] <= room[None, :]  # levels whose domains hold the job
        held = holds.any(axis=1)
        level = np.where(held, hosts - np.argmax(holds[:, ::-1], axis=1), 0)
        request[~held] = PREFERRED
    else:
        level = np.full(size.shape[0], _level(spec, "tas_level", names))
    return request, level.astype(np.int64)


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the per-domain scratch (per-job arrays are the jobs')."""
    return 8 * spec.dims[0] * (3 * len(rack_levels(spec)) + 3)


def _sizes(spec: MachineSpec, size: np.ndarray) -> np.ndarray:
    """Each job's pods: its nodes rounded up to whole slices."""
    s = max(spec.option("slice_size"), 1)
    return -(-size.astype(np.int64) // s) * s


def _check_slices(spec: MachineSpec, slice_level: int, names: list[str]) -> None:
    """A SpecError where slices cannot apply: at the hosts, above the request's level, or
    under `tas_level: fit` (a job's level may lie below them)."""
    where = f"machine {spec}: slice_level {spec.option('slice_level')!r}"
    if slice_level == len(names) - 1:
        raise SpecError(f"{where}; expected a level of racks or above")
    if spec.option("tas_request") == "unconstrained":
        return
    if spec.option("tas_level") == "fit":
        raise SpecError(f"{where} with tas_level 'fit'; expected a fixed tas_level (a job's "
                        "own level may lie below the slices')")
    if slice_level < _level(spec, "tas_level", names):
        raise SpecError(f"{where}; expected a level at or below tas_level "
                        f"{spec.option('tas_level')!r}")


def build(spec: MachineSpec, jobs: Jobs) -> tuple[KueueMachine, np.ndarray, np.ndarray]:
    """The machine struct, each job's pods and its class (its pods and level)."""
    racks, block = spec.dims
    span, names = _levels(spec)
    size = _sizes(spec, jobs.size)
    request, level = _requests(spec, size, span, names)
    slice_size = spec.option("slice_size")
    slice_level = _level(spec, "slice_level", names) if slice_size else len(span)
    if slice_size:
        _check_slices(spec, slice_level, names)
    profile = spec.option("tas_profile")
    least_free = np.full(size.shape[0], profile == "least-free") | \
        ((profile == "mixed") & (request == UNCONSTRAINED))
    levels = span.shape[0]
    struct = KueueMachine(
        spec.units, n_words(spec.units), False, block, racks, span, request, level,
        least_free, max(slice_size, 1), slice_level, spec.option("block_dilation"),
        spec.option("failure_domain") == "block", np.zeros(racks, dtype=np.int64),
        np.zeros((levels, racks), dtype=np.int64), np.zeros((levels, racks), dtype=np.int64),
        np.zeros((levels, racks), dtype=np.int64), np.zeros(racks, dtype=np.int64),
        np.zeros(size.shape[0], dtype=np.int64), np.ones(size.shape[0]))
    return struct, size, size * (levels + 2) * 3 + level * 3 + request


def refused(spec: MachineSpec, jobs: Jobs) -> np.ndarray:
    """Jobs whose required level has no domain that holds them on the idle machine."""
    m, size, placement_class = build(spec, jobs)
    _, first, inverse = np.unique(placement_class, return_index=True, return_inverse=True)
    idle = np.zeros(m.words, dtype=np.uint64)
    out = np.zeros(m.words, dtype=np.uint64)
    never = np.array([place_kueue(m, None, int(j), int(size[j]), idle, 0, idle[:0], out) < 0
                      for j in first], dtype=bool)
    return never[inverse.ravel()]


@kernel
def _domains(m, level):
    """Domains of `level` (len(m.span): the hosts are not domains here)."""
    return (m.blocks + m.span[level] - 1) // m.span[level]


@kernel
def _count(m):
    """Pods and slices of every domain from m.free."""
    levels = m.span.shape[0]
    for level in range(levels):
        for g in range(m.blocks):
            m.pods[level, g] = 0
            m.slices[level, g] = 0
    for b in range(m.blocks):
        for level in range(levels):
            m.pods[level, b // m.span[level]] += m.free[b]
    for level in range(min(m.slice_level, levels - 1), -1, -1):
        for g in range(_domains(m, level)):
            if m.slice_size == 1:
                m.slices[level, g] = m.pods[level, g]
            elif level == m.slice_level:
                m.slices[level, g] = m.pods[level, g] // m.slice_size
            else:
                ratio = m.span[level] // m.span[level + 1]
                for c in range(g * ratio, min((g + 1) * ratio, _domains(m, level + 1))):
                    m.slices[level, g] += m.slices[level + 1, c]


@kernel
def _before(m, level, a, b, key, least_free):
    """Whether domain a comes before domain b in the greedy's order: by `key` (slices, or
    pods below the slice level) descending (BestFit) or ascending, then pods ascending,
    then name."""
    ka, kb = key[level, a], key[level, b]
    if ka != kb:
        return ka < kb if least_free else ka > kb
    pa, pb = m.pods[level, a], m.pods[level, b]
    if pa != pb:
        return pa < pb
    return a < b


@kernel
def _sort_pool(m, level, count, key, least_free):
    """Sort m.order[:count] (domains of `level`) into the greedy's order (insertion sort:
    pools are a few racks)."""
    for i in range(1, count):
        d = m.order[i]
        k = i
        while k > 0 and _before(m, level, d, m.order[k - 1], key, least_free):
            m.order[k] = m.order[k - 1]
            k -= 1
        m.order[k] = d


@kernel
def _greedy(m, level, count, need, key, least_free):
    """Give `need` (in `key`'s units) to the domains m.order[:count] of `level` by the
    greedy: m.take[level, d]; whether they held it."""
    _sort_pool(m, level, count, key, least_free)
    left = need
    for i in range(count):
        d = m.order[i]
        if key[level, d] >= left:
            if not least_free:  # the best fit among those left
                for k in range(i + 1, count):
                    e = m.order[k]
                    if left <= key[level, e] < key[level, d]:
                        d = e
            m.take[level, d] = left
            return True
        m.take[level, d] = key[level, d]
        left -= key[level, d]
    return False


@kernel
def _search(m, j, level, need):
    """The level search for `need` slices from `level`: m.take of the fit level set; the
    fit level, or -1 where the request cannot be met."""
    least_free = m.least_free[j]
    while True:
        count = _domains(m, level)
        best = -1
        for g in range(count):
            m.take[level, g] = -1
            s = m.slices[level, g]
            if s >= need and (best < 0 or s < m.slices[level, best] or (
                    s == m.slices[level, best] and m.pods[level, g] < m.pods[level, best])):
                best = g
        if best >= 0:
            m.take[level, best] = need
            return level
        if m.request[j] == REQUIRED:
            return -1
        if m.request[j] == PREFERRED and level > 0:
            level -= 1
            continue
        for g in range(count):
            m.order[g] = g
        return level if _greedy(m, level, count, need, m.slices, least_free) else -1


@kernel
def _descend(m, j, level, need):
    """From the domains of `level` given slices, down to racks: pooled greedy above the
    slice level, each domain to its own children at and below it."""
    levels = m.span.shape[0]
    least_free = m.least_free[j]
    while level < levels - 1:
        child = level + 1
        ratio = m.span[level] // m.span[child]
        count = 0
        for c in range(_domains(m, child)):
            m.take[child, c] = -1
        for g in range(_domains(m, level)):
            if m.take[level, g] <= 0:
                continue
            for c in range(g * ratio, min((g + 1) * ratio, _domains(m, child))):
                m.order[count] = c
                count += 1
        if level < m.slice_level:  # pooled: the whole request again
            _greedy(m, child, count, need, m.slices, least_free)
        else:  # each domain's pods to its own children
            for g in range(_domains(m, level)):
                give = m.take[level, g]
                if give <= 0:
                    continue
                if level == m.slice_level:
                    give *= m.slice_size
                k = 0
                for c in range(g * ratio, min((g + 1) * ratio, _domains(m, child))):
                    m.order[k] = c
                    k += 1
                _greedy(m, child, k, give, m.pods, True)  # pods ascending: best fit
        level = child


@kernel
def _lowest_free(m, n, busy, forbidden, out):
    """The n lowest free hosts (the first by name); whether there were n."""
    clear(out)
    free = 0
    for b in range(m.blocks):
        free += m.free[b]
    if free < n:
        return False
    for b in range(m.blocks):
        take = min(n, m.free[b])
        _take(m, b, take, busy, forbidden, out)
        n -= take
    return True


@implements(place, KueueMachine)
@kernel
def place_kueue(m, st, j, units, busy, growth, forbidden, out):
    """The job's hosts by Kueue's TAS rule (module docstring). At the hosts one host holds
    one pod: an unconstrained job, or one of one pod, takes the first free hosts; a larger
    one required there fails, preferred there starts at the racks."""
    _count_free(m, busy, forbidden)
    hosts = m.span.shape[0]
    if m.level[j] == hosts and (m.request[j] == UNCONSTRAINED or units == 1):
        return units if _lowest_free(m, units, busy, forbidden, out) else -1
    if m.level[j] == hosts and m.request[j] == REQUIRED:
        return -1
    _count(m)
    need = units // m.slice_size
    level = _search(m, j, min(m.level[j], hosts - 1), need)
    if level < 0:
        return -1
    _descend(m, j, level, need)
    clear(out)
    racks = hosts - 1
    left = units
    for b in range(m.blocks):
        give = m.take[racks, b]
        if give <= 0:
            continue
        if m.slice_level == hosts:  # pooled down to the hosts: the first free ones
            give = min(left, m.free[b])
        elif m.slice_level == racks:
            give *= m.slice_size
        _take(m, b, give, busy, forbidden, out)
        left -= give
    return units


@implements(blocked_cause, KueueMachine)
@kernel
def blocked_kueue(m, st, j):
    """A job that cannot be placed lacks a domain with room for it."""
    return BLOCKED_NO_BOX


implements(dilate, KueueMachine)(dilate_block)
