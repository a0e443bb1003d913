"""Machines that fail (simcore.core.failures): hand-checked outages, the drawn process, a
plain-Python reference on flat machines, and invariants on a real trace."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.draws import job_uniforms
from simcore.base.errors import SimcoreError, SpecError
from simcore.core.failures import HIT_STREAM, FailureProcess, draw, trace_events
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference_failures import check_outages, flat_failure_schedule


def trace(tmp_path, rows, name="outages.txt"):
    path = tmp_path / name
    path.write_text("# time_s domain repair_s\n" + "".join(f"{r[0]} {r[1]} {r[2]}\n"
                                                          for r in rows))
    return str(path)


def machine(text, **options):
    return MachineSpec.parse(text, options=options)


def column(result, name):
    return result.jobs.column(name).to_numpy(zero_copy_only=False)


def two_pairs():
    """Two jobs of 2 units arriving at 0, running 100 s."""
    return Jobs.create([1, 2], [0.0, 0.0], [100.0, 100.0], [100.0, 100.0], [2, 2])


def test_a_failure_requeues_the_job_on_the_failed_unit(tmp_path):
    # mesh:4: job 1 takes units 0-1 and job 2 units 2-3 (Krevat's rule); unit 1 fails at
    # 30 s for 50 s: job 1 is requeued and waits (unit 0 alone cannot hold it) until the
    # repair at 80 s, then runs again from the start.
    spec = machine("mesh:4", failure_trace=trace(tmp_path, [(30, 1, 50)]))
    result = simulate(two_pairs(), spec, "fcfs")
    assert list(column(result, "start_s")) == [80.0, 0.0]
    assert list(column(result, "end_s")) == [180.0, 100.0]
    assert list(column(result, "failures_hit")) == [1, 0]
    assert list(column(result, "killed")) == [False, False]
    s = result.summary
    area = 180.0 * 4  # T x N
    assert (s["failures"], s["runs_cut_short"], s["killed_jobs"]) == (1, 1, 0)
    assert s["utilization"] == pytest.approx((400 + 2 * 30) / area)
    assert s["goodput"] == pytest.approx(400 / area)
    assert s["failed"] == pytest.approx(50 / area)
    assert s["unused"] == pytest.approx(2 * 80 / area)  # units 0-1 idle from 100 s to 180 s
    assert s["lost"] == pytest.approx(50 / area)  # unit 0 idle while job 1 waits
    assert s["resources_left_busy"] == 0


def test_a_killed_job_ends_at_the_failure(tmp_path):
    spec = machine("mesh:4", failure_trace=trace(tmp_path, [(30, 1, 50)]), on_failure="kill")
    result = simulate(two_pairs(), spec, "fcfs")
    assert list(column(result, "end_s")) == [30.0, 100.0]
    assert list(column(result, "killed")) == [True, False]
    s = result.summary
    area = 100.0 * 4
    assert s["killed_jobs"] == 1
    assert s["utilization"] == pytest.approx((200 + 2 * 30) / area)
    assert s["goodput"] == pytest.approx(200 / area)
    assert s["failed"] == pytest.approx(50 / area)
    assert s["unused"] == pytest.approx((50 + 2 * 20) / area)
    assert s["lost"] == pytest.approx(0.0, abs=1e-12)


def test_a_requeued_job_keeps_its_queue_position(tmp_path):
    # flat:2: job 1 (2 units) runs; jobs 2 and 3 (2 units each) wait. A failure at 10 s
    # hits job 1 (the only busy units): it goes back ahead of jobs 2 and 3 and runs first
    # when the unit is repaired at 20 s.
    jobs = Jobs.create([1, 2, 3], [0.0, 1.0, 2.0], [50.0] * 3, [50.0] * 3, [2, 2, 2])
    spec = machine("flat:2", failure_trace=trace(tmp_path, [(10, 0, 10)]))
    result = simulate(jobs, spec, "fcfs")
    assert list(column(result, "start_s")) == [20.0, 70.0, 120.0]


@pytest.mark.parametrize("seed", range(12))
def test_on_a_flat_machine_a_failure_hits_a_unit_drawn_from_the_in_service_ones(tmp_path,
                                                                                  seed):
    # flat:4, job 1 holds 1 unit and job 2 holds 2; one unit is free. The draw u of the
    # failure picks unit floor(4u): 0 belongs to job 1, 1-2 to job 2, 3 is idle.
    jobs = Jobs.create([1, 2], [0.0, 0.0], [100.0, 100.0], [100.0, 100.0], [1, 2])
    spec = machine("flat:4", failure_trace=trace(tmp_path, [(10, 3, 5)]))
    result = simulate(jobs, spec, "fcfs", seed=seed)
    unit = int(job_uniforms(seed, HIT_STREAM, np.arange(1))[0] * 4)
    expected = [[1, 0], [0, 1], [0, 1], [0, 0]][unit]
    assert list(column(result, "failures_hit")) == expected


def test_no_outages_leave_the_schedule_as_it_was(tmp_path, trace_excerpt):
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    empty = trace(tmp_path, [])
    for text, scheduler in (("torus:4x4x8", "backfill"), ("flat:128", "backfill"),
                            ("torus:4x4x8", "bm")):
        plain = machine(text)
        jobs = prepare(table, WorkloadSpec(first_jobs=1500), plain)
        a = simulate(jobs, plain, scheduler)
        b = simulate(jobs, machine(text, failure_trace=empty), scheduler)
        for name in a.jobs.column_names:
            assert a.jobs.column(name).equals(b.jobs.column(name)), (text, scheduler, name)
        assert b.summary["failed"] == 0.0 and b.summary["goodput"] == a.summary["utilization"]


def test_the_drawn_process_does_not_depend_on_how_far_it_is_drawn():
    process = FailureProcess(1e5, 500.0, None, True)
    units = np.array([1, 1, 4, 64])
    short = draw(process, units, seed=3, start_s=100.0, horizon_s=2e5)
    long = draw(process, units, seed=3, start_s=100.0, horizon_s=4e5)
    # the sentinel is last in time too (no repair after it), and what comes before it is
    # the start of the longer draw: a run extending the process has applied exactly that
    assert short[1][-1] == -1 and short[0][-1] == 100.0 + 2e5
    assert (short[0][:-1] < 100.0 + 2e5).all()
    for a, b in zip(short, long, strict=True):
        assert np.array_equal(a[:-1], b[: a.size - 1])
    assert not np.array_equal(draw(process, units, 4, 100.0, 2e5)[0], short[0])
    # a domain of k units is up for 1e5 / k s on average, then down for 500 s
    many = draw(process, units, seed=3, start_s=0.0, horizon_s=1e8)
    for d, k in enumerate(units):
        mine = many[1] == d
        assert np.all(np.diff(many[0][mine]) > 0)
        assert np.array_equal(many[2][mine], np.arange(mine.sum()) % 2 == 1)
        assert mine.sum() / 2 == pytest.approx(1e8 / (1e5 / k + 500), rel=0.1)


def test_failure_options_are_checked_and_keyed(tmp_path):
    path = trace(tmp_path, [(0, 0, 10)])
    with pytest.raises(SpecError, match="unit_mtbf_s and failure_trace both set"):
        machine("torus:4x4x8", unit_mtbf_s=1e6, failure_trace=path)
    with pytest.raises(SpecError, match=r"unit_mtbf_s=0; expected a finite number > 0"):
        machine("torus:4x4x8", unit_mtbf_s=0)
    bad = trace(tmp_path, [(0, 0, 10), (5, 0, 10)], "bad.txt")
    with pytest.raises(SpecError, match=r"bad.txt:3: domain 0 fails at 5 s while still out "
                                        r"of service until 10 s"):
        machine("torus:4x4x8", failure_trace=bad)
    (tmp_path / "words.txt").write_text("1 2\n")
    with pytest.raises(SpecError, match=r"words.txt:1: '1 2'; expected 'time_s domain"):
        machine("torus:4x4x8", failure_trace=str(tmp_path / "words.txt"))
    far = trace(tmp_path, [(0, 128, 10)], "far.txt")
    with pytest.raises(SpecError, match="domain 128; the machine has 128 failure domains"):
        simulate(two_pairs(), machine("torus:4x4x8", failure_trace=far), "fcfs")
    spec = machine("torus:4x4x8", unit_mtbf_s=1e6)
    assert str(spec) == "torus:4x4x8 unit_mtbf_s=1000000.0" and spec.random()
    assert MachineSpec.from_config(spec.to_config()) == spec
    assert not machine("torus:4x4x8").random()
    a, b = machine("torus:4x4x8", failure_trace=path).key(), machine(
        "torus:4x4x8", failure_trace=trace(tmp_path, [(0, 0, 10)], "same.txt")).key()
    assert a.split("#")[-1] == b.split("#")[-1]  # the content is keyed, not the name
    (tmp_path / "outages.txt").write_text("0 0 20\n")
    assert machine("torus:4x4x8", failure_trace=path).key() != a


def test_schedulers_that_plan_ahead_are_refused_where_units_fail():
    with pytest.raises(SpecError, match=r"scheduler conservative needs a machine whose units "
                                        r"never fail; machine flat:8 unit_mtbf_s=1000\.0 has"):
        simulate(two_pairs(), machine("flat:8", unit_mtbf_s=1e3), "conservative")


def test_a_job_that_cannot_finish_between_failures_is_an_error():
    jobs = Jobs.create([1], [0.0], [1e6], [1e6], [8])
    with pytest.raises(SimcoreError, match="some job cannot finish"):
        simulate(jobs, machine("flat:8", unit_mtbf_s=1e4, repair_s=10), "fcfs", seed=1)


@st.composite
def flat_cases(draw_):
    units = draw_(st.integers(1, 5))
    n = draw_(st.integers(1, 10))
    submit = sorted(draw_(st.lists(st.integers(0, 30), min_size=n, max_size=n)))
    run = draw_(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    over = draw_(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    size = draw_(st.lists(st.integers(1, units), min_size=n, max_size=n))
    rows, free_at = [], [0] * units
    for _ in range(draw_(st.integers(0, 6))):
        d = draw_(st.integers(0, units - 1))
        at = free_at[d] + draw_(st.integers(0, 40))
        length = draw_(st.integers(1, 30))
        rows.append((at, d, length))
        free_at[d] = at + length
    return units, submit, run, [r + o for r, o in zip(run, over, strict=True)], size, rows


@settings(max_examples=150, deadline=None)
@given(flat_cases(), st.booleans(), st.booleans(), st.integers(0, 3))
def test_flat_schedules_with_failures_match_the_reference(case, easy, requeue, seed):
    import tempfile
    from pathlib import Path

    units, submit, run, estimate, size, rows = case
    with tempfile.TemporaryDirectory() as tmp:
        path = trace(Path(tmp), sorted(rows))
        spec = machine(f"flat:{units}", failure_trace=path,
                       on_failure="requeue" if requeue else "kill")
        jobs = Jobs.create(np.arange(1, len(submit) + 1), submit, run, estimate, size)
        result = simulate(jobs, spec, PolicySpec("backfill" if easy else "fcfs"), seed=seed)
        process = FailureProcess.of(spec)
        events = trace_events(process, units, seed, float(jobs.submit_s[0]))
    start, end, killed, hits = flat_failure_schedule(
        jobs.submit_s, jobs.run_s, jobs.estimates("requested"), jobs.size, units, easy,
        list(zip(*events, strict=True)), requeue)
    assert np.array_equal(column(result, "start_s"), start, equal_nan=True)
    assert np.array_equal(column(result, "end_s"), end, equal_nan=True)
    assert list(column(result, "killed")) == list(killed)
    assert list(column(result, "failures_hit")) == list(hits)
    s = result.summary
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)


@pytest.mark.parametrize(("text", "scheduler", "on_failure"), [
    ("torus:4x4x8", "backfill", "requeue"),
    ("torus:4x4x8", "bm", "kill"),
    ("bgl:8x4x4", "backfill", "requeue"),
    ("mesh:8x8x2", "migration", "requeue"),
])
def test_invariants_with_drawn_failures_on_a_real_trace(trace_excerpt, text, scheduler,
                                                        on_failure):
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    spec = machine(text, unit_mtbf_s=2e6, repair_s=7200, on_failure=on_failure)
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, p_torus=1.0), spec, seed=2)
    result = simulate(jobs, spec, scheduler, seed=2)
    s = result.summary
    assert s["failures"] > 20 and s["runs_cut_short"] > 5
    struct, _, _ = spec.implementation.build(spec, jobs)
    masks, _ = spec.implementation.failure_domains(struct)
    horizon = 1e9  # far beyond the run: every event that can matter
    events = draw(FailureProcess.of(spec), np.ones(spec.units, dtype=np.int64), 2,
                  float(jobs.submit_s[0]), horizon)
    placed_again = s["runs_cut_short"] if on_failure == "requeue" else 0
    assert check_outages(result, masks, events[:3]) >= len(jobs) + placed_again
    killed = column(result, "killed")
    start, end = column(result, "start_s"), column(result, "end_s")
    submit, run = column(result, "submit_s"), column(result, "run_s")
    assert (start >= submit).all()
    assert np.array_equal(end[~killed], start[~killed] + run[~killed])
    assert (killed.sum() == s["killed_jobs"]) and (on_failure == "kill" or not killed.any())
    assert column(result, "failures_hit").sum() == s["runs_cut_short"]
    assert s["utilization"] + s["unused"] + s["lost"] + s["failed"] == pytest.approx(1)
    assert 0 < s["failed"] < 0.05 and s["goodput"] < s["utilization"] and s["lost"] > -1e-9
    assert s["resources_left_busy"] == 0
    assert math.isfinite(s["mean_wait_s"])
