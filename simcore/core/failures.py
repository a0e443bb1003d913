"""Unit failures: failure domains go out of service and come back, hitting running jobs.

Every machine kind can fail. Its allocator names its *failure domains*: by default every
allocation unit is one (unit u is resource bit u); a cube of chips fails as a whole
(`simcore.machines.cubes.allocator`); on a flat machine units have no identity (no bits), so a
failure takes out one unit of the pool. A failure process is a machine option
(`simcore.machines.registry.FAILURE_OPTIONS`), so it is part of the machine's key and of
every run key:

- `unit_mtbf_s`: each unit fails at rate 1 / unit_mtbf_s, so a domain of k units fails at
  rate k / unit_mtbf_s (any of its units takes it down); up times are exponential and a
  failed domain is back `repair_s` later. The draws are counter-based (a hash of the run's
  seed, the domain and the failure's number), so the process does not depend on the
  schedule, on the other domains or on how far ahead it was drawn: it is pre-drawn to a
  horizon and drawn further, identically, if the run outlasts it;
- `failure_trace`: a file of outages, one per line `time_s domain repair_s` (time from the
  first arrival; `#` starts a comment), whose content hash is in the machine's key;
- `down_fraction`: a static down set, each domain independently with probability f (a
  counter-based draw from the run's seed), out of service from the first arrival to the
  end of the run, so that no job is hit: the independent unavailability an analytic
  capacity model assumes. It may be combined with `unit_mtbf_s` (the other domains then fail and are
  repaired as above), not with a trace. Jobs that could not be placed even on the idle
  machine without the down set are left out of the run and counted (`refused_jobs`).

A failure takes the domain's resources out of service (they count as occupied, so no
allocator can place a job on them, and as `failed` capacity until repaired) and hits every
job running on them: with `on_failure: requeue` the job goes back to the queue at its old
position (arrival order) and later runs again from the start; with `kill` it ends at the
failure and never completes. With `drain` (an outage announced, as an administrator drains
nodes: no new starts, running jobs continue) it hits no job: the failing unit, drawn as a
failure's is (busy with probability busy units not already draining / in-service units),
goes out of service at once if free, else when the next completions free units (units have
no identity, so the ones freed stand for it); a repair of a unit still owed cancels it.
Drains need units without identity (flat machines): on a machine of bits, which unit a job
frees is not one the failure named. A static down set hits no job either, being out of
service from the first arrival: it is a drain that begins before anything runs. On a flat
machine the failing unit is busy with probability busy / in-service units, and then belongs
to a running job with probability proportional to its units (a counter-based draw u per
failure picks unit floor(u x in-service units), counting the running jobs' units first, job
by job in job order). Work of runs cut short counts as utilized capacity but not as
goodput.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simcore.base.bitset import intersects
from simcore.base.draws import STREAMS, job_uniforms
from simcore.base.errors import SimcoreError, SpecError
from simcore.base.jit import kernel
from simcore.base.regular import read_text
from simcore.core.state import (
    ABORTED,
    ABORTED_WORK,
    DOWN_UNITS,
    DRAIN_OWED,
    EPOCH,
    FAILURES,
    FREE_UNITS,
    N_ACTIVE,
    OUTAGE_POS,
    Outages,
    enqueue,
    release,
)

UP_STREAM = STREAMS["failure_up"]
HIT_STREAM = STREAMS["failure_hit"]
DOWN_STREAM = STREAMS["down_set"]
#: A run that needs the process drawn this many times further than the first horizon is
#: taken to be unable to finish between failures.
MAX_HORIZON_FACTOR = 1024


@dataclass(frozen=True)
class FailureProcess:
    """A machine's failure process, from its options (see the module docstring)."""

    unit_mtbf_s: float | None
    repair_s: float
    trace: str | None
    requeue: bool
    down_fraction: float = 0.0
    drain: bool = False

    @classmethod
    def of(cls, machine: Any) -> FailureProcess | None:
        """The process a MachineSpec's options describe, or None if it never fails."""
        if not machine.fails():
            return None
        options = dict(machine.options)
        return cls(options.get("unit_mtbf_s"), options["repair_s"],
                   options.get("failure_trace"), options["on_failure"] == "requeue",
                   options.get("down_fraction", 0.0), options["on_failure"] == "drain")


def down_set(process: FailureProcess, n_domains: int, seed: int) -> np.ndarray:
    """The domains of the static down set, in order: each domain independently, with
    probability down_fraction (a counter-based draw per domain below it)."""
    if process.down_fraction == 0:
        return np.zeros(0, dtype=np.int64)
    draws = job_uniforms(seed, DOWN_STREAM, np.arange(n_domains))
    return np.flatnonzero(draws < process.down_fraction).astype(np.int64)


def down_resources(masks: np.ndarray, units: np.ndarray,
                   down: np.ndarray) -> tuple[np.ndarray, int]:
    """(bitset, units) of the domains `down`, from every domain's masks and units."""
    bits = np.bitwise_or.reduce(masks[down], axis=0) if down.size else \
        np.zeros(masks.shape[1], dtype=np.uint64)
    return bits, int(units[down].sum())


def draw(process: FailureProcess, domain_units: np.ndarray, seed: int, start_s: float,
         horizon_s: float, down: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """(time, domain, repair, draw) of every failure before start + horizon and its repair,
    in time order (repairs before failures at one time, then by domain), ending with a
    sentinel event (domain -1) at start + horizon. The domains of the down set never fail
    (they are out of service already)."""

    assert process.unit_mtbf_s is not None
    rate = domain_units / process.unit_mtbf_s
    n = domain_units.shape[0]
    times, doms, hits = [], [], []
    up_since = np.zeros(n)  # time each domain last came back, from start
    alive = np.arange(n) if down is None else np.setdiff1d(np.arange(n), down)
    k = 0
    while alive.size:
        ids = (alive.astype(np.uint64) << np.uint64(32)) | np.uint64(k)
        up = -np.log1p(-job_uniforms(seed, UP_STREAM, ids)) / rate[alive]
        fail = up_since[alive] + up
        keep = fail < horizon_s
        alive, fail, ids = alive[keep], fail[keep], ids[keep]
        times.append(fail)
        doms.append(alive)
        hits.append(job_uniforms(seed, HIT_STREAM, ids))
        up_since[alive] = fail + process.repair_s
        k += 1
    fail_t = np.concatenate(times) if times else np.zeros(0)
    fail_d = np.concatenate(doms) if doms else np.zeros(0, dtype=np.int64)
    fail_u = np.concatenate(hits) if hits else np.zeros(0)
    return _events(start_s + fail_t, fail_d, fail_u, process.repair_s, start_s + horizon_s)


def _events(fail_t: np.ndarray, fail_d: np.ndarray, fail_u: np.ndarray,
            repair_s: float | np.ndarray, sentinel_s: float | None) -> tuple[np.ndarray, ...]:
    """Failure and repair events in time order (repairs first at one time, then by domain),
    with a sentinel at `sentinel_s` if given and no event from it on: those come with the
    process drawn further, so that the events before the sentinel, which a run may have
    applied, are the first events of every longer draw."""
    time = np.concatenate([fail_t, fail_t + repair_s])
    domain = np.concatenate([fail_d, fail_d]).astype(np.int64)
    repair = np.concatenate([np.zeros(fail_t.size, bool), np.ones(fail_t.size, bool)])
    hit = np.concatenate([fail_u, np.zeros(fail_t.size)])
    if sentinel_s is not None:
        early = time < sentinel_s
        time, domain, repair, hit = time[early], domain[early], repair[early], hit[early]
    order = np.lexsort((domain, ~repair, time))
    time, domain, repair, hit = time[order], domain[order], repair[order], hit[order]
    if sentinel_s is not None:
        time = np.append(time, sentinel_s)
        domain = np.append(domain, -1)
        repair = np.append(repair, False)
        hit = np.append(hit, 0.0)
    return time, domain, repair, hit


def read_trace(path: str | os.PathLike[str]) -> np.ndarray:
    """The outages of a failure trace as rows (time_s, domain, repair_s), validated; a
    SpecError names the file and line of the first problem."""
    stat = Path(path).stat()
    return _read_trace(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_trace(path: str, mtime_ns: int, size: int) -> np.ndarray:
    rows = []
    busy_until: dict[int, float] = {}
    for number, line in enumerate(read_text(path).splitlines(), 1):
        text = line.split("#", 1)[0].split()
        if not text:
            continue
        where = f"{path}:{number}"
        try:
            if len(text) != 3:
                raise ValueError
            time_s, domain, repair_s = float(text[0]), int(text[1]), float(text[2])
        except ValueError:
            raise SpecError(f"{where}: {line.strip()!r}; expected 'time_s domain repair_s'"
                            ) from None
        if not (math.isfinite(time_s) and time_s >= 0 and domain >= 0
                and math.isfinite(repair_s) and repair_s > 0):
            raise SpecError(f"{where}: expected time_s >= 0, domain >= 0 and repair_s > 0")
        if time_s < busy_until.get(domain, -1.0):
            raise SpecError(f"{where}: domain {domain} fails at {time_s:g} s while still out "
                            f"of service until {busy_until[domain]:g} s")
        busy_until[domain] = time_s + repair_s
        rows.append((time_s, domain, repair_s))
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def trace_events(process: FailureProcess, n_domains: int, seed: int,
                 start_s: float) -> tuple[np.ndarray, ...]:
    """The events of a failure trace, checked against the machine's domains."""

    assert process.trace is not None
    rows = read_trace(process.trace)
    domain = rows[:, 1].astype(np.int64)
    if domain.size and domain.max() >= n_domains:
        raise SpecError(f"{process.trace}: domain {domain.max()}; the machine has "
                        f"{n_domains} failure domains (0..{n_domains - 1})")
    hit = job_uniforms(seed, HIT_STREAM, np.arange(domain.size))
    return _events(start_s + rows[:, 0], domain, hit, rows[:, 2], None)


class OutagePlan:
    """The outages of one run: built from the machine, drawn further when needed."""

    def __init__(self, process: FailureProcess, masks: np.ndarray, units: np.ndarray,
                 seed: int, start_s: float, horizon_s: float) -> None:
        self.process, self.masks, self.units = process, masks, units
        self.seed, self.start_s = seed, start_s
        self.first_horizon_s = self.horizon_s = max(horizon_s, 1.0)
        self.down = down_set(process, units.shape[0], seed)

    def initial(self, words: int) -> Outages:
        """The state's outages group for the start of the run."""
        return Outages(*self._events(), self.masks, self.units,
                       np.zeros(words, dtype=np.uint64), self.process.requeue,
                       self.process.drain, np.zeros(self.units.shape[0], dtype=np.bool_))

    def extended(self, group: Outages) -> Outages:
        """The group with the process drawn twice as far (the events so far unchanged)."""
        self.horizon_s *= 2
        if self.horizon_s > MAX_HORIZON_FACTOR * self.first_horizon_s:
            raise SimcoreError(
                f"jobs still waiting {self.horizon_s / 2:.3g} s after the first arrival: "
                "with these failures some job cannot finish (a requeued job restarts from "
                "the beginning); expected a longer unit_mtbf_s or on_failure: kill")
        time, domain, repair, hit = self._events()
        return group._replace(time=time, domain=domain, repair=repair, draw=hit)

    def _events(self) -> tuple[np.ndarray, ...]:
        if self.process.trace is not None:
            return trace_events(self.process, self.units.shape[0], self.seed, self.start_s)
        down = self.down
        if self.process.unit_mtbf_s is None:
            return (np.full(down.size, self.start_s), down, np.zeros(down.size, bool),
                    np.zeros(down.size))
        time, domain, repair, hit = draw(self.process, self.units, self.seed, self.start_s,
                                         self.horizon_s, down)
        return (np.concatenate([np.full(down.size, self.start_s), time]),
                np.concatenate([down, domain]), np.concatenate([np.zeros(down.size, bool),
                                                                repair]),
                np.concatenate([np.zeros(down.size), hit]))


@kernel
def apply_outages(st, jobs, t, freed):
    """Apply the outage events due by time t: a repaired domain's resources are free again;
    a failed domain's running jobs are hit (requeued or killed), then its resources are
    held as out of service. A draining failure (`o.drain`) hits no job: its unit, if
    `_drawn_busy`, is owed, and goes out of service when completions free units (`freed`
    units at t, given to the domains owed before the events at t). Stops at the sentinel
    of the events drawn so far."""
    o, ctr, occ = st.outages, st.ctr, st.run.occ
    down, masks, units = o.down, o.masks, o.units
    if ctr[DRAIN_OWED] > 0:
        _settle_drains(st, freed)
    pos = ctr[OUTAGE_POS]
    while pos < o.time.shape[0] and o.time[pos] <= t and o.domain[pos] >= 0:
        d = o.domain[pos]
        if o.drain and o.repair[pos] and o.owed[d]:  # never went out of service
            o.owed[d] = False
            ctr[DRAIN_OWED] -= units[d]
        elif o.drain and not o.repair[pos] and _drawn_busy(st, o.draw[pos]):
            o.owed[d] = True
            ctr[DRAIN_OWED] += units[d]
            ctr[FAILURES] += 1
        elif o.repair[pos]:
            for w in range(occ.shape[0]):
                occ[w] &= ~masks[d, w]
                down[w] &= ~masks[d, w]
            ctr[FREE_UNITS] += units[d]
            ctr[DOWN_UNITS] -= units[d]
        else:
            if not o.drain:
                _hit(st, jobs, masks[d], o.draw[pos], t, o.requeue)
            for w in range(occ.shape[0]):
                occ[w] |= masks[d, w]
                down[w] |= masks[d, w]
            ctr[FREE_UNITS] -= units[d]
            ctr[DOWN_UNITS] += units[d]
            ctr[FAILURES] += 1
        ctr[EPOCH] += 1
        pos += 1
    ctr[OUTAGE_POS] = pos


@kernel
def _drawn_busy(st, draw):
    """Whether a draining failure's unit is held by a running job: in-service unit
    floor(draw x units), counting the busy units not already owed to a drain first and
    then the free ones (so a drain of every unit takes every free unit at once)."""
    ctr, active, alloc = st.ctr, st.run.active, st.run.slot_alloc
    busy = -ctr[DRAIN_OWED]
    for i in range(ctr[N_ACTIVE]):
        busy += alloc[active[i]]
    return int(draw * (busy + ctr[FREE_UNITS])) < busy


@kernel
def _settle_drains(st, freed):
    """Take up to `freed` free units out of service for the domains owed them, in order."""
    o, ctr = st.outages, st.ctr
    for d in range(o.owed.shape[0]):
        if o.owed[d] and o.units[d] <= min(freed, ctr[FREE_UNITS]):
            o.owed[d] = False
            freed -= o.units[d]
            ctr[DRAIN_OWED] -= o.units[d]
            ctr[FREE_UNITS] -= o.units[d]
            ctr[DOWN_UNITS] += o.units[d]
            ctr[EPOCH] += 1


@kernel
def _hit(st, jobs, mask, draw, t, requeue):
    """Cut short every run holding a resource of `mask`; where units have no bits (an
    empty mask), the run holding the in-service unit number floor(draw x in-service units),
    the busy units counted first, running job by running job in job order."""
    ctr, active, held, alloc = st.ctr, st.run.active, st.run.held, st.run.slot_alloc
    slot_job = st.run.slot_job
    bits = False
    for w in range(mask.shape[0]):
        if mask[w]:
            bits = True
            break
    if not bits:
        busy = 0
        for i in range(ctr[N_ACTIVE]):
            busy += alloc[active[i]]
        unit = int(draw * (busy + ctr[FREE_UNITS]))
        for i in range(ctr[N_ACTIVE]):  # the run holding it, the running jobs in job order
            j = slot_job[active[i]]
            before = 0
            for k in range(ctr[N_ACTIVE]):
                if slot_job[active[k]] < j:
                    before += alloc[active[k]]
            if before <= unit < before + alloc[active[i]]:
                abort_run(st, jobs, i, t, requeue)
                return
        return
    i = 0
    while i < ctr[N_ACTIVE]:
        if intersects(held[active[i]], mask):
            abort_run(st, jobs, i, t, requeue)  # moves the last active slot to i
        else:
            i += 1


@kernel
def abort_run(st, jobs, i, t, requeue):
    """Cut short the run in the i-th active slot at time t: release its resources, count
    the work it did, and requeue the job at its arrival-order position or kill it."""
    ctr, out = st.ctr, st.out
    j = st.run.slot_job[st.run.active[i]]
    release(st, i)
    ctr[ABORTED] += 1
    out.hit[j] += 1
    if t > out.start_s[j]:
        st.acc[ABORTED_WORK] += jobs.request[j] * (t - out.start_s[j])
    if not requeue:
        out.start_s[j] = min(out.start_s[j], t)  # killed in its start delay: never ran
        out.end_s[j] = t
        out.killed[j] = True
        return
    enqueue(st, j, jobs.request[j])
    out.sched_s[j] = np.nan
    out.start_s[j] = np.nan
    out.end_s[j] = np.nan
    out.alloc[j] = 0
