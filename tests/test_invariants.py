"""Invariants of every scheduler on real trace spans and on generated workloads."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference import (
    check_capacity,
    check_exclusive,
    check_reservations,
    check_timing,
    conservative_schedule,
    flat_schedule,
)

SPAN = 3000  # jobs per trace span: enough contention at c = 1.2, quick to replay


@functools.cache
def trace_span(path: str, machine: str, runtime_scale: float) -> Jobs:
    table = clean(read_swf(path))
    return prepare(table, WorkloadSpec(first_jobs=SPAN, runtime_scale=runtime_scale),
                   MachineSpec.parse(machine), seed=1)


CASES = [
    ("torus:4x4x8", "fcfs", {}),
    ("torus:4x4x8", "backfill", {"estimates": "actual"}),
    ("torus:4x4x8", "backfill", {"estimates": "actual", "start_delay_s": 1.0}),
    ("torus:4x4x8", "backfill", {"reservation": False}),
    ("torus:4x4x8", "migration", {}),
    ("torus:4x4x8", "migration", {"fn_tor": 0.0, "fn_max": 1.0}),
    ("torus:4x4x8", "bm", {"start_delay_s": 1.0}),
    ("mesh:4x4x8", "bm", {}),
    ("flat:128", "fcfs", {}),
    ("flat:128", "backfill", {"estimates": "actual"}),
    ("flat:128", "conservative", {"estimates": "actual", "start_delay_s": 1.0}),
    ("flat:128", "conservative", {}),
    ("flat:128", "cplant", {}),
    ("torus:4x4x8", "cplant-backfill", {"estimates": "actual"}),
]


@pytest.mark.parametrize("trace", ["NASA-iPSC-1993-3.1-cln", "SDSC-SP2-1998-4.2-cln"])
@pytest.mark.parametrize(("machine", "scheduler", "params"), CASES)
def test_real_trace_invariants(trace, machine, scheduler, params, trace_excerpt):
    jobs = trace_span(str(trace_excerpt(trace)), machine, 1.2)
    policy = PolicySpec.from_params(scheduler, params)
    result = simulate(jobs, machine, policy)
    units = MachineSpec.parse(machine).units
    check_timing(result)
    check_capacity(result, units)
    assert check_exclusive(result) >= len(jobs)
    alloc = result.jobs.column("alloc_size").to_numpy()
    assert (alloc >= jobs.size).all()
    if scheduler in ("backfill", "conservative") and params.get("estimates") == "actual":
        assert check_reservations(result) > 0, "the span should block some head jobs"
    if scheduler in ("fcfs", "backfill", "cplant") and machine.startswith("flat"):
        estimates = jobs.estimates(policy.params().get("estimates", "requested"))
        expected = flat_schedule(jobs.submit_s, jobs.run_s, estimates, jobs.size, units,
                                 easy=scheduler == "backfill", cplant=scheduler == "cplant")
        assert np.array_equal(result.jobs.column("sched_s").to_numpy(), expected)
    if scheduler in ("migration", "bm"):
        s = result.summary
        assert s["migrations_successful"] <= s["migrations_attempted"]


def test_deterministic_across_runs(trace_excerpt):
    jobs = trace_span(str(trace_excerpt("SDSC-SP2-1998-4.2-cln")), "torus:4x4x8", 1.2)
    first = simulate(jobs, "torus:4x4x8", "bm")
    again = simulate(jobs, "torus:4x4x8", "bm")
    assert first.jobs.equals(again.jobs)
    assert np.array_equal(first.migration_times_s, again.migration_times_s)
    same = [a == b or (np.isnan(a) and np.isnan(b)) if isinstance(a, float) else a == b
            for a, b in zip(first.summary.values(), again.summary.values(), strict=True)]
    assert all(same)


def test_a_placement_log_grows_as_the_run_fills_it(monkeypatch, trace_excerpt):
    """A log that starts with no room to speak of grows between events (and a decision
    that overfills it makes the run again): the log comes out whole and the same."""
    jobs = trace_span(str(trace_excerpt("SDSC-SP2-1998-4.2-cln")), "torus:4x4x8", 1.2)
    roomy = simulate(jobs, "torus:4x4x8", "bm").placements
    assert roomy.time_s.shape[0] > len(jobs), "the span should make B+M move jobs"
    monkeypatch.setattr("simcore.simulate.LOG_WORDS_PER_JOB", 0)
    result = simulate(jobs, "torus:4x4x8", "bm")
    log = result.placements
    assert np.array_equal(log.time_s, roomy.time_s)
    assert np.array_equal(log.masks, roomy.masks)
    assert check_exclusive(result) == roomy.time_s.shape[0]
    burst = Jobs.create(np.arange(1, 129), np.zeros(128), np.full(128, 10.0),
                        np.full(128, 10.0), np.ones(128, dtype=np.int64))
    at_once = simulate(burst, "torus:4x4x8", "fcfs").placements  # 128 starts, 384 words
    assert at_once.code.shape[0] == 3 * 128
    assert at_once.masks.sum(axis=0).tolist() == [2**64 - 1, 2**64 - 1]


def test_a_node_level_log_costs_words_per_placement_not_the_machine():
    """A run on a torus of 65,536 nodes logs each single-node placement in three words
    (its one run), not a 1,024-word bitset."""
    n = 2_000
    jobs = Jobs.create(np.arange(1, n + 1), np.arange(float(n)), np.full(n, 10.0),
                       np.full(n, 10.0), np.ones(n, dtype=np.int64))
    log = simulate(jobs, "torus:64x32x32", "fcfs").placements
    assert log.code.shape[0] == 3 * n
    assert log.nbytes == n * (8 + 8 + 8 + 24) + 8


def test_a_placement_log_above_the_memory_limit_is_refused(monkeypatch):
    """A log that would pass the memory limit is refused before it is allocated, in one
    line naming its size."""
    from simcore.base.errors import SpecError

    monkeypatch.setattr("simcore.machines.contract.MEMORY_LIMIT_BYTES", 2**20)
    n = 70_000
    jobs = Jobs.create(np.arange(1, n + 1), np.arange(float(n)), np.full(n, 10.0),
                       np.full(n, 10.0), np.ones(n, dtype=np.int64))
    with pytest.raises(SpecError, match=r"the placement log of machine flat:64 "
                                        r"\(140,002 placements\) would take 5\.3 MiB"):
        simulate(jobs, "flat:64", "fcfs")


small_workloads = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 50), min_size=n, max_size=n),    # submit
    st.lists(st.integers(0, 60), min_size=n, max_size=n),    # run
    st.lists(st.integers(0, 30), min_size=n, max_size=n),    # estimate error
    st.lists(st.integers(1, 12), min_size=n, max_size=n),    # size
))


def make_jobs(case):
    submit, run, error, size = (np.array(v) for v in case)
    return Jobs.create(np.arange(1, len(submit) + 1), submit, run, run + error, size)


@settings(max_examples=150, deadline=None)
@given(case=small_workloads, easy=st.booleans(), delay=st.sampled_from([0.0, 1.0]))
def test_flat_matches_reference(case, easy, delay):
    jobs = make_jobs(case)
    policy = PolicySpec("backfill" if easy else "fcfs", start_delay_s=delay)
    result = simulate(jobs, "flat:12", policy)
    expected = flat_schedule(jobs.submit_s, jobs.run_s, jobs.estimates("requested"),
                             jobs.size, 12, easy, delay)
    assert np.array_equal(result.jobs.column("sched_s").to_numpy(), expected)


@settings(max_examples=150, deadline=None)
@given(case=small_workloads, easy=st.booleans(), delay=st.sampled_from([0.0, 1.0]))
def test_cplant_order_matches_reference(case, easy, delay):
    """Cplant's queue order on a flat machine; with backfilling the schedule is the same
    (a job behind a blocked front job is at least as large)."""
    jobs = make_jobs(case)
    policy = PolicySpec("cplant-backfill" if easy else "cplant", start_delay_s=delay)
    result = simulate(jobs, "flat:12", policy)
    expected = flat_schedule(jobs.submit_s, jobs.run_s, jobs.estimates("requested"),
                             jobs.size, 12, easy, delay, cplant=True)
    assert np.array_equal(result.jobs.column("sched_s").to_numpy(), expected)
    same = simulate(jobs, "flat:12", PolicySpec("cplant", start_delay_s=delay))
    assert np.array_equal(same.jobs.column("sched_s").to_numpy(), expected)


@settings(max_examples=120, deadline=None)
@given(case=small_workloads,
       machine=st.sampled_from(["torus:2x2x3", "mesh:3x4", "torus:12"]),
       scheduler=st.sampled_from(["fcfs", "backfill", "migration", "bm", "cplant",
                                  "cplant-backfill"]))
def test_partitioned_invariants_on_generated_workloads(case, machine, scheduler):
    jobs = make_jobs(case)
    policy = PolicySpec.from_params(
        scheduler, {"estimates": "actual"}
        if scheduler in ("backfill", "bm", "cplant-backfill") else {})
    result = simulate(jobs, machine, policy)
    check_timing(result)
    check_capacity(result, 12)
    check_exclusive(result)
    if scheduler == "backfill":  # (in Cplant's order a smaller arrival overtakes the front)
        check_reservations(result)
    if scheduler == "cplant-backfill":  # behind a blocked front job only larger jobs wait,
        # and the front job would have grown into any box they fit
        plain = simulate(jobs, machine, PolicySpec("cplant", estimates="actual"))
        assert np.array_equal(result.jobs.column("sched_s").to_numpy(),
                              plain.jobs.column("sched_s").to_numpy())


@settings(max_examples=300, deadline=None)
@given(case=small_workloads, delay=st.sampled_from([0.0, 1.0]),
       overrun=st.booleans())
def test_conservative_matches_reference(case, delay, overrun):
    """Estimates exact or too long (never a reservation moved later: every job starts by
    its first reservation), or also too short (overruns: equal counts of delayed moves)."""
    submit, run, error, size = (np.array(v) for v in case)
    run = np.maximum(run, 1)  # zero-length jobs take no capacity in the plan
    estimate = run + error - (30 if overrun else 0)
    jobs = Jobs.create(np.arange(1, len(submit) + 1), submit, run,
                       np.where(estimate > 0, estimate, -1), size)
    result = simulate(jobs, "flat:12", PolicySpec("conservative", start_delay_s=delay))
    expected, first, delayed = conservative_schedule(
        jobs.submit_s, jobs.run_s, jobs.estimates("requested"), jobs.size, 12, delay)
    assert np.array_equal(result.jobs.column("sched_s").to_numpy(), expected)
    assert np.array_equal(result.jobs.column("reserved_s").to_numpy(zero_copy_only=False),
                          first)
    assert result.summary["reservations_delayed"] == delayed
    if not overrun:
        check_reservations(result)
        assert delayed == 0


def test_conservative_matches_reference_on_a_real_span(trace_excerpt):
    """SDSC-SP2, whose requested times are sometimes exceeded: overruns included."""
    jobs = trace_span(str(trace_excerpt("SDSC-SP2-1998-4.2-cln")), "flat:128", 1.2)
    jobs = Jobs.create(jobs.job_id[:1000], jobs.submit_s[:1000], jobs.run_s[:1000],
                       jobs.requested_s[:1000], jobs.size[:1000])
    result = simulate(jobs, "flat:128", PolicySpec("conservative", start_delay_s=1.0))
    expected, _, delayed = conservative_schedule(
        jobs.submit_s, jobs.run_s, jobs.estimates("requested"), jobs.size, 128, 1.0)
    assert np.array_equal(result.jobs.column("sched_s").to_numpy(), expected)
    assert result.summary["reservations_delayed"] == delayed > 0
