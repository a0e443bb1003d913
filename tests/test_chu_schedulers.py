"""Chu's queue disciplines and Das Sharma and Pradhan's priority scheduling: hand-checked
schedules, a plain-Python reference (tests/reference_queues.py), and the equivalences the
thesis states (WTL = 0 is FCFS, MQ with one queue is Scan All, priority without
reservations and MAX_PRI is Scan All without a waiting-time limit)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.jobs.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.synthetic import SyntheticSpec, synthesize
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference import check_exclusive, check_timing
from tests.reference_queues import queue_schedule


def flat_jobs(rows):
    """rows: (submit, run, size); ids 1..n, estimates the run times."""
    rows = np.array(rows, dtype=float)
    return Jobs.create(np.arange(1, len(rows) + 1), rows[:, 0], rows[:, 1], rows[:, 1],
                       rows[:, 2].astype(int))


def starts(result):
    return dict(zip(result.jobs.column("job_id").to_pylist(),
                    result.jobs.column("start_s").to_pylist(), strict=True))


#: flat:4. Job 1 (3 units) and job 2 (1) start at once; job 3 wants all 4 units; job 4 (2)
#: queues behind it; job 5 (1 unit, 1 s) arrives at 12, after job 1 ended at 10.
ROWS = [(0, 10, 3), (0.5, 30, 1), (1, 10, 4), (2, 10, 2), (12, 1, 1)]


def test_fcfs_immediate_fit_and_scan_all_by_hand():
    """FCFS: job 3 starts when job 2 leaves at 30.5, then 4 and 5 at 40.5. Immediate Fit:
    at 12 job 5 fits (3 units free since 10) and the head, job 3, has waited 11 s with no
    limit, so 5 starts at once; with WTL = 10 the head has exceeded it and 5 queues as in
    FCFS. Scan All: at 10 job 1's completion starts job 4 past job 3 (which does not fit),
    at 12 job 5 starts as in IF; with WTL = 5 job 3 (waiting 9 s at 10) stops that pass."""
    jobs = flat_jobs(ROWS)
    fcfs = {1: 0, 2: 0.5, 3: 30.5, 4: 40.5, 5: 40.5}
    assert starts(simulate(jobs, "flat:4", "fcfs")) == fcfs
    assert starts(simulate(jobs, "flat:4", "immediate-fit")) == {**fcfs, 5: 12}
    assert starts(simulate(jobs, "flat:4", PolicySpec("immediate-fit", wtl=10))) == fcfs
    assert starts(simulate(jobs, "flat:4", "scan-all")) == {**fcfs, 4: 10, 5: 12}
    assert starts(simulate(jobs, "flat:4", PolicySpec("scan-all", wtl=5))) == fcfs


def test_job_ordered_queues_by_hand():
    """flat:4, job 1 (4 units) runs 0-10; jobs 2 (3 units, 5 s), 3 (1 unit, 20 s) and 4
    (2 units, 1 s) wait. At 10: Smallest Job First starts 3 (1) then 4 (2) and blocks at 2
    (3 > 1 free), which starts when 4 ends at 11; Largest Job First starts 2 (3) and blocks
    at 4 (2 > 1 free) until 2 ends at 15; SJF (by estimate) starts 4 (1 s) and blocks at 2
    (3 > 2 free) until 11; Smallest Service Demand (4: 2 unit-s, 2: 15, 3: 20) likewise."""
    jobs = flat_jobs([(0, 10, 4), (1, 5, 3), (2, 20, 1), (3, 1, 2)])
    assert starts(simulate(jobs, "flat:4", "smallest-jf")) == {1: 0, 2: 11, 3: 10, 4: 10}
    assert starts(simulate(jobs, "flat:4", "largest-jf")) == {1: 0, 2: 10, 3: 15, 4: 15}
    assert starts(simulate(jobs, "flat:4", PolicySpec("sjf", estimates="actual"))) == \
        {1: 0, 2: 11, 3: 11, 4: 10}
    assert starts(simulate(jobs, "flat:4", PolicySpec("smallest-sdjf",
                                                      estimates="actual"))) == \
        {1: 0, 2: 11, 3: 11, 4: 10}
    # the Scan All form of SJF goes past job 2 at 10 and starts job 3 too
    assert starts(simulate(jobs, "flat:4", PolicySpec("sjf", estimates="actual",
                                                      scan_all=True))) == \
        {1: 0, 2: 11, 3: 10, 4: 10}


def test_multiple_queues_scan_down_serves_large_jobs_first():
    """flat:8, Q = 2 by processors: sizes 1-4 go to queue 2 and 5-8 to queue 1 with
    ScanDown (the reverse with ScanUp). Job 1 (8 units) runs 0-10; jobs 2 (2 units), 3 (6)
    and 4 (2) wait. At 10 ScanDown starts 3 first (6), then 2 (2), and 4 waits; ScanUp
    starts 2 and 4, then 3 does not fit."""
    jobs = flat_jobs([(0, 10, 8), (1, 10, 2), (2, 10, 6), (3, 10, 2)])
    down = PolicySpec("mq", queues=2, scan="down")
    up = PolicySpec("mq", queues=2, scan="up")
    assert starts(simulate(jobs, "flat:8", down)) == {1: 0, 2: 10, 3: 10, 4: 20}
    assert starts(simulate(jobs, "flat:8", up)) == {1: 0, 2: 10, 3: 20, 4: 10}


@st.composite
def flat_workloads(draw):
    n = draw(st.integers(1, 25))
    units = draw(st.integers(2, 8))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0]), min_size=n, max_size=n))
    runs = draw(st.lists(st.sampled_from([0.5, 1.0, 3.0, 7.0, 12.0]), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(1, units), min_size=n, max_size=n))
    return np.cumsum(gaps), np.array(runs), np.array(sizes), units


DISCIPLINES = [
    ("immediate-fit", {}), ("immediate-fit", {"wtl": 3.0}), ("scan-all", {}),
    ("scan-all", {"wtl": 2.0}), ("mq", {"queues": 3}), ("mq", {"queues": 4, "scan": "up"}),
    ("mq", {"queues": 2, "blocking": True}), ("mq", {"queues": 3, "wtl": 4.0}),
    ("smallest-jf", {}), ("largest-jf", {"scan_all": True}),
    ("sjf", {"estimates": "actual"}), ("smallest-sdjf", {"estimates": "actual",
                                                         "scan_all": True, "wtl": 5.0}),
]


@pytest.mark.parametrize(("scheduler", "params"), DISCIPLINES)
@settings(max_examples=60, deadline=None)
@given(case=flat_workloads())
def test_disciplines_match_the_reference(scheduler, params, case):
    submit, run, size, units = case
    jobs = Jobs.create(np.arange(len(submit)), submit, run, run, size)
    result = simulate(jobs, f"flat:{units}", PolicySpec.from_params(scheduler, params))
    reference = {k: v for k, v in params.items() if k != "estimates"}
    expected = queue_schedule(submit, run, size, run, units, scheduler, **reference)
    assert result.jobs.column("sched_s").to_pylist() == expected


def chu_jobs(machine, distribution="uniform", jobs=300, load=0.6, seed=1, cv=0.0):
    table = synthesize(SyntheticSpec.create("chu", {"distribution": distribution,
                                                    "jobs": jobs, "side": 8,
                                                    "estimate_cv": cv}), seed)
    return prepare(table, WorkloadSpec(offered_load=load), machine, seed)


@pytest.mark.parametrize("allocator", ["bl", "ff", "bdi"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(1, 10_000), load=st.sampled_from([0.4, 0.7, 1.0]))
def test_the_thesis_equivalences(allocator, seed, load):
    """WTL = 0 makes IF and SA FCFS; MQ with one queue is SA; priority scheduling without
    reservations and MAX_PRI is SA without a limit (Chu, section 5.4)."""
    machine = MachineSpec.parse("mesh:8x8", allocator)
    jobs = chu_jobs(machine, load=load, seed=seed)

    def sched(policy):
        return simulate(jobs, machine, policy).jobs.column("sched_s").to_pylist()

    fcfs = sched(PolicySpec("fcfs"))
    assert sched(PolicySpec("immediate-fit", wtl=0.0)) == fcfs
    assert sched(PolicySpec("scan-all", wtl=0.0)) == fcfs
    scan_all = sched(PolicySpec("scan-all"))
    assert sched(PolicySpec("mq", queues=1)) == scan_all
    assert sched(PolicySpec("priority", reserve=False)) == scan_all
    assert sched(PolicySpec("scan-all", wtl=30.0)) == sched(PolicySpec("mq", queues=1,
                                                                       wtl=30.0))


def test_priority_reserves_the_submesh_with_the_fewest_free_processors():
    """mesh:4x4 with BL. Job 1 (2x4) gets <0,0,1,3> for 10 s, job 2 (2x2) <2,0,3,1> for
    20 s. Job 3 (2x4) arrives at 0.5 and finds no free submesh; of its positions,
    <0,0,1,3> holds 0 free processors, <1,0,2,3> 2 and <2,0,3,3> 4: it reserves the first
    and gets it when job 1 ends at 10. Job 4 (2x2) arrives at 1 and takes the free
    <2,2,3,3>."""
    shapes = np.array([[2, 4, 1], [2, 2, 1], [2, 4, 1], [2, 2, 1]])
    jobs = Jobs.create([1, 2, 3, 4], [0, 0, 0.5, 1], [10, 20, 5, 5], [10, 20, 5, 5],
                       shapes[:, :2].prod(axis=1), shape=shapes, torus=np.zeros(4, bool))
    result = simulate(jobs, MachineSpec.parse("mesh:4x4", "bl"), "priority")
    assert starts(result) == {1: 0, 2: 0, 3: 10, 4: 1}
    assert result.jobs.column("reserved_s").to_pylist()[2] == 0.5
    assert check_exclusive(result) == 4
    cells = {int(j): sorted(int(u) for u in np.flatnonzero(
        np.unpackbits(m.view(np.uint8), bitorder="little")))
        for j, m in zip(result.placements.job_id, result.placements.masks, strict=True)}
    assert cells[3] == cells[1] == list(range(8))  # columns 0 and 1: units 0-7
    assert cells[4] == [10, 11, 14, 15]  # <2,2,3,3>


def test_priority_max_pri_stops_later_jobs_overtaking():
    """mesh:4x1 (a line), no reservations. Job 1 (2 nodes) runs 0-10; job 2 (4 nodes)
    waits for it; jobs 3-6 (1 node, 3 s) arrive at 2, 3, 4, 5. Without MAX_PRI they pass
    job 2: 3 and 4 at once, 5 when 3 ends at 5, 6 when 4 ends at 6; job 2 starts at 10.
    MAX_PRI = 1: after 3 and 4 went ahead, job 2 has counted 2 > 1: 5 and 6 wait behind it
    until it ends at 20. MAX_PRI = 2: job 5 may still go at 5 (a third), then 6 waits."""
    shapes = np.array([[2, 1, 1], [4, 1, 1]] + [[1, 1, 1]] * 4)
    submit, run = [0, 1, 2, 3, 4, 5], [10, 10, 3, 3, 3, 3]
    jobs = Jobs.create(range(1, 7), submit, run, run, shapes[:, 0], shape=shapes,
                       torus=np.zeros(6, bool))
    machine = MachineSpec.parse("mesh:4x1", "ff")
    free_for_all = {1: 0, 2: 10, 3: 2, 4: 3, 5: 5, 6: 6}
    assert starts(simulate(jobs, machine, PolicySpec("priority", reserve=False))) == \
        free_for_all
    assert starts(simulate(jobs, machine, PolicySpec("priority", reserve=False, max_pri=1))) \
        == {**free_for_all, 5: 20, 6: 20}
    assert starts(simulate(jobs, machine, PolicySpec("priority", reserve=False, max_pri=2))) \
        == {**free_for_all, 6: 20}


#: Priority scheduling needs an allocator that finds every free submesh (not 2DBS, FS).
PAIRS = [(s, a) for s in ("immediate-fit", "scan-all", "mq", "smallest-jf", "sjf", "priority")
         for a in ("2dbs", "fs", "bf", "as", "bl", "bfl1", "eet-sb", "eet-sc", "bdi")
         if not (s == "priority" and a in ("2dbs", "fs"))]


@pytest.mark.parametrize(("scheduler", "allocator"), PAIRS)
def test_invariants_on_long_runs(scheduler, allocator):
    """2000 of Chu's jobs at load 0.7 on mesh:16x16: no processor held twice, nothing starts
    before it arrives, every placement a w x h (or h x w) submesh inside the mesh, for 2DBS
    the aligned 2^k block holding it."""
    machine = MachineSpec.parse("mesh:16x16", allocator)
    table = synthesize(SyntheticSpec.create("chu", {"distribution": "decreasing", "jobs": 2000,
                                                    "side": 16, "estimate_cv": 0.5}), 3)
    jobs = prepare(table, WorkloadSpec(offered_load=0.7), machine, 3)
    result = simulate(jobs, machine, scheduler)
    check_timing(result)
    assert check_exclusive(result) == len(jobs)
    index = {int(j): i for i, j in enumerate(jobs.job_id)}
    for job, mask in zip(result.placements.job_id, result.placements.masks, strict=True):
        bits = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        x, y = bits // 16, bits % 16
        w, h = x.max() - x.min() + 1, y.max() - y.min() + 1
        assert w * h == bits.size  # a solid rectangle
        want = tuple(jobs.shape[index[int(job)], :2])
        if allocator == "2dbs":
            assert w == h and w >= max(want) and x.min() % w == 0 and y.min() % w == 0
            assert w == 1 << (int(max(want)) - 1).bit_length()
        else:
            assert (w, h) in (want, want[::-1])


@pytest.mark.parametrize(("scheduler", "allocator"), [
    ("scan-all", "bl"), ("mq", "bdi"), ("immediate-fit", "ff"), ("fcfs", "2dbs"),
    ("priority", "bl"), ("sjf", "eet-sc"),
])
def test_real_trace_invariants(scheduler, allocator, trace_excerpt):
    """SDSC-SP2's first 2,000 jobs on a 16 x 8 mesh (its 128 nodes; 16 x 16 for 2DBS, which
    needs a square power-of-two mesh), each job the squarest rectangle for its size,
    runtimes scaled by 1.2: no unit held twice, nothing starts before it arrives, capacity
    utilized + unused + lost = 1."""
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf
    from tests.reference import check_capacity

    dims = "16x16" if allocator == "2dbs" else "16x8"
    machine = MachineSpec.parse(f"mesh:{dims}", allocator)
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    jobs = prepare(table, WorkloadSpec(first_jobs=2000, runtime_scale=1.2), machine)
    result = simulate(jobs, machine, scheduler)
    check_timing(result)
    check_capacity(result, machine.units)
    assert check_exclusive(result) == len(jobs)
