"""Chu's synthetic workloads, submesh requests in workloads, the warm-up and Chu's run
statistics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simcore.base.errors import SpecError
from simcore.cli.main import main
from simcore.core.metrics import chu_statistics
from simcore.jobs.jobs import Jobs
from simcore.jobs.submeshes import rule_shapes
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.chu import mean_size, side_probabilities
from simcore.workload.synthetic import SyntheticSpec, synthesize
from simcore.workload.transforms import WorkloadSpec, declared_load, prepare


def sample(distribution="uniform", jobs=2000, seed=1, **params):
    return synthesize(SyntheticSpec.create("chu", {"distribution": distribution, "jobs": jobs,
                                                   **params}), seed)


def test_exact_mean_sizes_of_the_three_distributions():
    """E[w] = 16.5 (uniform), 0.4 x 2.5 + 0.2 x (6.5 + 12.5 + 24.5) = 9.7 (decreasing),
    0.2 x (8.5 + 20.5 + 26.5) + 0.4 x 30.5 = 23.3 (increasing); n = E[w]^2 for independent
    sides, E[w^2] = 33 x 65 / 6 = 357.5 for square uniform jobs."""
    assert mean_size("uniform", 32, False) == pytest.approx(16.5**2)
    assert mean_size("decreasing", 32, False) == pytest.approx(9.7**2)
    assert mean_size("increasing", 32, False) == pytest.approx(23.3**2)
    assert mean_size("uniform", 32, True) == pytest.approx(357.5)
    p = side_probabilities("decreasing", 32)
    assert [p[:4].sum(), p[4:8].sum(), p[8:16].sum(), p[16:].sum()] == \
        pytest.approx([0.4, 0.2, 0.2, 0.2])
    with pytest.raises(SpecError, match="side 20 with distribution increasing; expected a "
                                        "multiple of 8"):
        side_probabilities("increasing", 20)


@pytest.mark.parametrize("distribution", ["uniform", "decreasing", "increasing"])
def test_samples_follow_the_distributions(distribution):
    """40,000 jobs: interval shares, mean service and mean inter-arrival time within four
    standard errors; sides in 1..32; the requested size is w x h."""
    n = 40_000
    table = sample(distribution, jobs=n, load=0.5)
    w = table.column("mesh_width").to_numpy()
    h = table.column("mesh_height").to_numpy()
    assert w.min() >= 1 and max(w.max(), h.max()) <= 32
    assert (table.column("requested_processors").to_numpy() == w * h).all()
    p = side_probabilities(distribution, 32)
    for lo, hi in ((1, 4), (5, 8), (9, 16), (17, 24), (25, 28), (29, 32)):
        share = p[lo - 1:hi].sum()
        assert abs((w >= lo) & (w <= hi)).mean() - share <= 4 * math.sqrt(share / n)
    run = table.column("run_time").to_numpy()
    assert abs(run.mean() - 10.0) < 4 * 10.0 / math.sqrt(n)
    iatm = mean_size(distribution, 32, False) * 10.0 / (1024 * 0.5)
    gaps = np.diff(table.column("submit_time").to_numpy())
    assert abs(gaps.mean() - iatm) < 4 * iatm / math.sqrt(n)


def test_common_random_numbers_across_distributions_and_loads():
    """One seed: the same arrivals (up to the load's scale), service times and estimate
    noise whatever the distribution; sides from the same uniforms, so a larger side under
    one distribution is never a smaller one under another."""
    uniform = sample("uniform", load=0.5, estimate_cv=1.0)
    increasing = sample("increasing", load=0.5, estimate_cv=1.0)
    for column in ("run_time", "requested_time"):
        assert np.array_equal(uniform.column(column).to_numpy(),
                              increasing.column(column).to_numpy())
    ratio = mean_size("increasing", 32, False) / mean_size("uniform", 32, False)
    assert np.allclose(increasing.column("submit_time").to_numpy(),
                       uniform.column("submit_time").to_numpy() * ratio)
    a, b = uniform.column("mesh_width").to_numpy(), increasing.column("mesh_width").to_numpy()
    for k in range(1, 32):
        if (a == k).any() and (a == k + 1).any():
            assert b[a == k].max() <= b[a == k + 1].min()


def test_estimates_are_normal_around_the_run_time_truncated_at_zero():
    exact = sample(estimate_cv=0.0)
    assert np.array_equal(exact.column("requested_time").to_numpy(),
                          exact.column("run_time").to_numpy())
    n = 40_000
    noisy = sample(jobs=n, estimate_cv=1.0).column("requested_time").to_numpy()
    share = 0.15865525393145707  # Phi(-1): the thesis's "more than 16%" zeros at c = 1
    assert noisy.min() == 0.0
    assert abs((noisy == 0).mean() - share) < 4 * math.sqrt(share * (1 - share) / n)


def test_offered_load_of_a_model_sample_comes_from_its_exact_means():
    """The model's load 0.5 on 32 x 32 is exactly the declared load on 1024 processors;
    rescaling to 0.7 multiplies every gap by 0.5 / 0.7, whatever the sample's own mean
    size; on 2048 processors the same arrivals are load 0.25."""
    table = sample(jobs=500, load=0.5)
    assert declared_load(table, 1024) == pytest.approx(0.5)
    assert declared_load(table, 2048) == pytest.approx(0.25)
    machine = MachineSpec.parse("mesh:32x32", "bl")
    jobs = prepare(table, WorkloadSpec(offered_load=0.7), machine)
    submit = table.column("submit_time").to_numpy()
    assert np.allclose(jobs.submit_s - submit[0], (submit - submit[0]) * 0.5 / 0.7)
    flat = prepare(table, WorkloadSpec(offered_load=0.7), MachineSpec.parse("flat:2048"))
    assert np.allclose(flat.submit_s - submit[0], (submit - submit[0]) * 0.25 / 0.7)
    assert declared_load(synthesize(SyntheticSpec.create("lublin", {
        "max_procs": 64, "jobs": 10}), 1), 64) is None


def test_submesh_requests_travel_with_the_workload():
    """On a submesh allocator jobs ask for the workload's w x h (size w h); elsewhere the
    columns are ignored and jobs ask for w h processors."""
    table = sample(jobs=50)
    w = table.column("mesh_width").to_numpy()
    h = table.column("mesh_height").to_numpy()
    jobs = prepare(table, WorkloadSpec(), MachineSpec.parse("mesh:32x32", "as"))
    assert np.array_equal(jobs.shape, np.column_stack([w, h, np.ones_like(w)]))
    assert np.array_equal(jobs.size, w * h) and not jobs.torus.any()
    flat = prepare(table, WorkloadSpec(), MachineSpec.parse("flat:1024"))
    assert flat.shape is None and np.array_equal(flat.size, w * h)
    broken = table.drop_columns(["mesh_height"])
    with pytest.raises(SpecError, match="has column mesh_width but not mesh_height"):
        prepare(broken, WorkloadSpec(), MachineSpec.parse("mesh:32x32", "as"))


def test_copies_of_a_job_ask_for_its_submesh():
    """With the replication transform every copy keeps its original's w x h; the offered
    load then comes from the replicated sample, not the model's declared means."""
    table = sample(jobs=50)
    sides = dict(zip(table.column("job_number").to_pylist(), zip(
        table.column("mesh_width").to_pylist(), table.column("mesh_height").to_pylist(),
        strict=True), strict=True))
    machine = MachineSpec.parse("mesh:32x32", "bl")
    jobs = prepare(table, WorkloadSpec(replication=3, offered_load=0.5), machine, seed=2)
    assert len(jobs) == 150 and len(set(jobs.job_id.tolist())) == 150
    assert [tuple(s[:2]) for s in jobs.shape.tolist()] == [
        sides[int(j) % 100] for j in jobs.job_id]  # copies: id + c x 100
    span = jobs.submit_s.max() - jobs.submit_s.min()
    assert (jobs.size * jobs.run_s).sum() / (1024 * span) == pytest.approx(0.5)


def test_inserted_jobs_ask_for_one_processor():
    """Jobs the insertion transform adds to a workload with submesh columns ask for 1 x 1."""
    table = sample(jobs=50)
    spec = WorkloadSpec(insert_per_h=200, insert_run_s=5.0)
    jobs = prepare(table, spec, MachineSpec.parse("mesh:32x32", "bl"), seed=1)
    added = jobs.job_id > 50
    assert added.sum() == len(jobs) - 50 > 0
    assert (jobs.shape[added] == 1).all() and (jobs.run_s[added] == 5.0).all()


def test_shape_rules_for_jobs_without_requests():
    """squarest: an exact factorisation closest to square when one fits, else the least
    area that fits; square: the smallest k x k."""
    w, h = rule_shapes(np.array([12, 7, 37, 1, 1024, 31]), 32, 32)
    assert list(zip(w.tolist(), h.tolist(), strict=True)) == \
        [(4, 3), (7, 1), (19, 2), (1, 1), (32, 32), (31, 1)]
    w, h = rule_shapes(np.array([12, 16, 17]), 32, 32, "square")
    assert w.tolist() == h.tolist() == [4, 4, 5]
    w, h = rule_shapes(np.array([9]), 8, 2)
    assert (w[0], h[0]) == (5, 2)  # 9 fits no 8 x 2 factorisation: 10 processors
    with pytest.raises(SpecError, match="size 17: no square submesh of a 4x8 mesh holds it"):
        rule_shapes(np.array([17]), 4, 8, "square")


def test_a_trace_gets_shapes_by_the_rule(trace_excerpt):
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf

    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    machine = MachineSpec.parse("mesh:16x8", "bl")
    jobs = prepare(table, WorkloadSpec(first_jobs=300), machine)
    expected = rule_shapes(jobs.requested_units, 16, 8)
    assert np.array_equal(jobs.shape[:, 0], expected[0])
    assert np.array_equal(jobs.size, expected[0] * expected[1])
    square = prepare(table, WorkloadSpec(first_jobs=300, mesh_shape="square"),
                     MachineSpec.parse("mesh:16x16", "bl"))
    assert (square.shape[:, 0] == square.shape[:, 1]).all()
    assert simulate(jobs, machine, "scan-all").summary["jobs"] == 300


def test_warm_up_jobs_are_simulated_but_not_measured():
    """flat:2. Job 1 (2 units, 0-10) delays job 2 (arrives 1, starts 10); job 3 arrives at
    20. With one warm-up job the statistics are those of jobs 2 and 3: responses 19 and 5."""
    jobs = Jobs.create([1, 2, 3], [0, 1, 20], [10, 10, 5], [10, 10, 5], [2, 2, 1],
                       warmup_jobs=1)
    s = simulate(jobs, "flat:2", "fcfs").summary
    assert (s["mean_response_s"], s["measured_jobs"], s["mean_wait_s"]) == (12.0, 2, 4.5)
    assert s["sd_response_s"] == pytest.approx(math.sqrt(2 * 7.0**2))
    with pytest.raises(SpecError, match="warmup_jobs=3 with 3 jobs"):
        Jobs.create([1, 2, 3], [0, 1, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1], warmup_jobs=3)
    with pytest.raises(SpecError, match="warmup_jobs=9 leaves none of the 3 jobs"):
        prepare(sample(jobs=3), WorkloadSpec(warmup_jobs=9), MachineSpec.parse("flat:1024"))


def test_chu_statistics_by_hand():
    """N = 8, window [2, 6] (from the second job's arrival to the last). Job 1 holds 4 units
    0-5 (3 s in the window), job 2 (2 units) waits 2-3 and holds 3-7 (3 s), job 3 (8 units)
    waits 6-7 (0 s: the window ends at 6). Busy: (4 x 3 + 2 x 3) / (8 x 4) = 0.5625; queue:
    1 / 4; in system: (3 + 4 + 0) / 4. The scheduler runs at 2 (job 2 arrives: it is the
    queue), 5 (job 1 ends: none waits) and 6 (job 3 arrives: it is the queue): 2 / 3 jobs
    scanned. Without warm-up the quarters are 1 < s <= 2: job 2, 2 < s <= 4: job 1,
    6 < s <= 8: job 3."""
    submit, sched, end = np.array([0., 2., 6.]), np.array([0., 3., 7.]), np.array([5., 7., 9.])
    size = np.array([4, 2, 8])
    out = chu_statistics(submit, sched, end, size, size, 8, warmup=1)
    assert out["busy_fraction"] == pytest.approx(0.5625)
    assert out["mean_queue_length"] == pytest.approx(0.25)
    assert out["mean_jobs_in_system"] == pytest.approx(1.75)
    assert out["mean_scanned_queue"] == pytest.approx(2 / 3)
    assert out["measured_jobs"] == 2 and out["sd_response_s"] == pytest.approx(
        np.std([5.0, 3.0], ddof=1))
    out = chu_statistics(submit, sched, end, size, size, 8, warmup=0)
    assert (out["mean_response_s_q1"], out["mean_response_s_q2"], out["mean_response_s_q4"]) \
        == (5.0, 5.0, 3.0)
    assert math.isnan(out["mean_response_s_q3"]) and math.isnan(out["sd_response_s_q1"])


def test_the_command_line_of_the_issue(capsys):
    code = main(["run", "--workload", "chu:uniform", "--jobs", "3000", "--seed", "1",
                 "--offered-load", "0.7", "--warmup-jobs", "1000", "--machine", "mesh:32x32",
                 "--allocator", "bl", "--scheduler", "mq", "--param", "queues=32",
                 "--param", "scan=down", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mean_response_s"] > 10.0 and report["measured_jobs"] == 2000
    assert report["workload"]["warmup_jobs"] == 1000
    assert report["policy"] == {"scheduler": "mq", "queues": 32, "scan": "down",
                                            "criterion": "processors", "blocking": False,
                                            "start_delay_s": 0.0, "wtl": None}


def test_queue_readings_obey_littles_law():
    """Chu's 3.6 jobs (SA, load 0.5) cannot be a time average of the waiting queue if our
    waits are right: over a long stationary run the time averages equal arrival rate x mean
    wait (waiting queue) and x mean response (jobs in system), Little's law, computed here
    from the jobs alone. The queue a scan walks is a different count, between the two: an
    arrival sees the time-averaged queue (Poisson arrivals see time averages) and adds
    itself."""
    machine = MachineSpec.parse("mesh:32x32", "as")
    jobs = prepare(sample(jobs=20_000), WorkloadSpec(offered_load=0.5, warmup_jobs=1000),
                   machine, seed=1)
    result = simulate(jobs, machine, PolicySpec.from_params("scan-all", {"wtl": 500}))
    table, summary = result.jobs, result.summary
    submit = table["submit_s"].to_numpy()
    rate = (submit.size - 1001) / (submit.max() - np.sort(submit)[1000])
    measured = slice(1000, None)
    wait = (table["sched_s"].to_numpy() - submit)[measured].mean()
    response = (table["end_s"].to_numpy() - submit)[measured].mean()
    assert summary["mean_queue_length"] == pytest.approx(rate * wait, rel=0.02)
    assert summary["mean_jobs_in_system"] == pytest.approx(rate * response, rel=0.02)
    assert summary["mean_queue_length"] < summary["mean_scanned_queue"] \
        < summary["mean_jobs_in_system"]
