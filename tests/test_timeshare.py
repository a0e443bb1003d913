"""Time-sharing (Frachtenberg et al., FCS): the BSP job model, hand-checked schedules, FCS's
classification, the paper's scenarios, a plain-Python reference and real-trace invariants."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import SpecError
from simcore.cli.main import main
from simcore.jobs import bsp
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.schedulers.registry import BLOCK_COST, QUANTUM, SWITCH_COST_S
from simcore.simulate import simulate
from simcore.timeshare import fcs
from simcore.tools import frachtenberg2003
from simcore.workload import scenarios
from simcore.workload.sources import load_workload as resolve
from simcore.workload.transforms import WorkloadSpec, prepare
from tests import timeshare_reference as reference

TIME_SHARING = ("gang", "spin-block", "fcs")
W, C = 1e-3, 50e-6  # the building block: 1 ms compute, 50 us synchronisation
SPIN, BETA, Q = fcs.T_SPIN_S, BLOCK_COST.default, QUANTUM.default


def bsp_jobs(rows):
    """rows: (submit, run, size, pattern, even_s, odd_s, block, comm_s); ids 1..n."""
    columns = (np.array(c) for c in zip(*rows, strict=True))
    submit, run, size, pattern, even, odd, block, comm = columns
    return Jobs.create(np.arange(1, len(rows) + 1), submit, run, run, size,
                       bsp=bsp.BSPJobs(pattern, even, odd, block, comm))


def ends(result):
    return result.jobs.column("end_s").to_pylist()


# --- the job model ----------------------------------------------------------------------

def test_iteration_time_is_the_heaviest_block_plus_synchronisation():
    model = bsp.BSPJobs([bsp.RING, bsp.RING, bsp.NONE, bsp.BARRIER], [1e-3, 2e-3, 0.0, 1e-3],
                        [3e-3, 1e-3, 1.0, 5e-3], [4, 4, 4, 4], [5e-5, 5e-5, 0.0, 1e-4])
    size = np.array([8, 8, 8, 4])  # the last job is one block: its odd compute never runs
    assert model.iteration_s(size) == pytest.approx([3.05e-3, 2.05e-3, 1.0, 1.1e-3])
    # busy time of an isolated run: every process computes its own, then synchronises
    run = np.array([3.05, 2.05, 10.0, 1.1])  # 1000 iterations, 10 "iterations" of 1 s
    assert model.busy_s(size, run) == pytest.approx(
        [1000 * (4 * 1e-3 + 4 * 3e-3 + 8 * 5e-5), 1000 * (4 * 2e-3 + 4 * 1e-3 + 8 * 5e-5),
         10 * 4 * 1.0, 1000 * 4 * (1e-3 + 1e-4)])
    assert list(model.process_compute_s(0, 10)) == [1e-3] * 4 + [3e-3] * 4 + [1e-3] * 2


def test_jobs_refuse_an_impossible_model_naming_the_job():
    model = bsp.BSPJobs([bsp.RING], [0.0], [0.0], [0], [5e-5])
    with pytest.raises(SpecError, match=r"job 7: BSP model pattern 1, compute 0.0 / 0.0 s"):
        Jobs.create([7], [0.0], [1.0], [1.0], [4], bsp=model)


def test_a_table_carries_all_bsp_columns_or_none():
    table = resolve("fcs:scenario1")
    assert bsp.BSPJobs.from_table(table.drop_columns(list(bsp.COLUMNS))) is None
    with pytest.raises(SpecError, match=r"lacks \['bsp_comm_s'\]"):
        bsp.BSPJobs.from_table(table.drop_columns(["bsp_comm_s"]))


def test_random_model_is_per_job_and_follows_its_distributions():
    ids = np.arange(1, 5001)
    size = np.where(ids % 5 == 0, 1, 16)
    model = bsp.draw_random(ids, size, seed=3)
    again = bsp.draw_random(ids[::-1][:100], size[::-1][:100], seed=3)  # other jobs around
    assert np.array_equal(again.even_s, model.even_s[::-1][:100])
    assert (model.pattern[size == 1] == bsp.NONE).all()
    parallel = size > 1
    shares = np.bincount(model.pattern[parallel], minlength=3) / parallel.sum()
    assert shares == pytest.approx(bsp.RANDOM_PATTERN_P, abs=0.03)
    assert model.even_s.min() >= 1e-3 and model.even_s.max() <= 1.0
    assert np.median(model.even_s) == pytest.approx(math.sqrt(1e-3), rel=0.15)  # log-uniform
    imbalanced = model.block > 0
    assert imbalanced.mean() == pytest.approx(0.5, abs=0.03)
    assert np.allclose(model.odd_s[imbalanced], 2 * model.even_s[imbalanced])
    barrier = model.pattern == bsp.BARRIER
    assert np.allclose(model.comm_s[barrier], 50e-6 * np.ceil(np.log2(size[barrier])))


def test_granularity_range_bounds_the_drawn_compute_of_the_same_jobs():
    """The range rescales each job's one log-uniform draw: the default range gives the
    model's draws as they were, bit for bit; another bounds them and keeps each job's
    place in it."""
    lublin, machine = resolve("lublin:32", 400, 1), MachineSpec.parse("flat:32")
    default = prepare(lublin, WorkloadSpec(bsp_model="random"), machine, seed=1)
    assert default.bsp.even_s[:3].tolist() == [0.09072348280560537, 0.07136169462895983,
                                               0.7357124989582459]
    fine = prepare(lublin, WorkloadSpec(bsp_model="random", bsp_granularity_min_s=1e-4,
                                        bsp_granularity_max_s=1e-2), machine, seed=1)
    assert fine.bsp.even_s.min() >= 1e-4 and fine.bsp.even_s.max() <= 1e-2
    place = np.log(fine.bsp.even_s / 1e-4) / np.log(100)
    assert place == pytest.approx(np.log(default.bsp.even_s / 1e-3) / np.log(1000))
    assert np.array_equal(fine.bsp.pattern, default.bsp.pattern)
    assert np.array_equal(fine.run_s, default.run_s)
    # run keys hold the range only where it is set: keys stored before it existed stay
    assert "bsp_granularity_min_s" not in WorkloadSpec(bsp_model="random").identity()
    assert WorkloadSpec(bsp_model="random", bsp_granularity_min_s=1e-4).identity()[
        "bsp_granularity_min_s"] == 1e-4


@pytest.mark.parametrize(("settings", "message"), [
    ({"bsp_model": "random", "bsp_granularity_min_s": 0.1, "bsp_granularity_max_s": 0.01},
     r"bsp_granularity_min_s=0\.1 above bsp_granularity_max_s=0\.01; expected min <= max"),
    ({"bsp_granularity_max_s": 0.1}, r"bsp_granularity_max_s=0\.1 with bsp_model=None: no "
     r"random BSP model to draw granularities for; expected bsp_model: random"),
    ({"bsp_model": "random", "bsp_granularity_min_s": 0},
     r"bsp_granularity_min_s=0; expected a finite number > 0 \(s\)"),
])
def test_granularity_range_is_refused_precisely(settings, message):
    with pytest.raises(SpecError, match=f"^workload transform {message}$"):
        WorkloadSpec(**settings)


def test_bsp_model_transform_refuses_a_source_with_its_own():
    with pytest.raises(SpecError, match="carries its own BSP model"):
        prepare(resolve("fcs:scenario1"), WorkloadSpec(bsp_model="random"),
                MachineSpec.parse("flat:128"))


def test_copies_of_a_replicated_job_share_its_bsp_model():
    machine = MachineSpec.parse("flat:128")
    one = prepare(resolve("fcs:scenario2"), WorkloadSpec(), machine)
    three = prepare(resolve("fcs:scenario2"), WorkloadSpec(replication=3), machine)
    assert len(three) == 3 * len(one)
    original = dict(zip(one.job_id.tolist(), one.bsp.odd_s.tolist(), strict=True))
    stride = 10  # ids 1 and 2: copies are id + 10, id + 20
    for job_id, odd_s in zip(three.job_id.tolist(), three.bsp.odd_s.tolist(), strict=True):
        assert odd_s == original[job_id % stride]
    lublin = resolve("lublin:32", 20, 1)
    drawn = prepare(lublin, WorkloadSpec(bsp_model="random", replication=2),
                    MachineSpec.parse("flat:32"), seed=1)
    by_id = dict(zip(drawn.job_id.tolist(), drawn.bsp.even_s.tolist(), strict=True))
    stride = 10 ** len(str(int(lublin.column("job_number").to_numpy().max())))
    assert all(by_id[i + stride] == by_id[i] for i in by_id if i < stride)


def test_inserting_jobs_into_a_source_with_a_bsp_model_is_refused():
    with pytest.raises(SpecError, match=r"insert_per_h=5\.0: the source carries a BSP model"):
        prepare(resolve("fcs:scenario1"), WorkloadSpec(insert_per_h=5.0),
                MachineSpec.parse("flat:128"))


def test_time_sharing_needs_a_bsp_model():
    jobs = Jobs.create([1], [0.0], [1.0], [1.0], [2])
    with pytest.raises(SpecError, match="scheduler fcs needs each job's BSP model"):
        simulate(jobs, "flat:4", "fcs")


# --- hand-checked schedules ---------------------------------------------------------------

LONE = [
    (bsp.RING, W, W, 0, C),  # the building block
    (bsp.BARRIER, 3e-3, 3e-3, 0, 2e-4),
    (bsp.RING, W, 2 * W + C, 2, C),  # imbalanced: light processes wait every iteration
    (bsp.NONE, 0.0, 0.5, 2, 0.0),  # never synchronises, half its processes idle
]


@pytest.mark.parametrize("scheduler", ["fcfs", "backfill", *TIME_SHARING])
@pytest.mark.parametrize("model", LONE)
@pytest.mark.parametrize("size", [8, 5])
def test_a_lone_job_runs_in_its_isolated_time(scheduler, model, size):
    """Under every scheduler a job alone takes its isolated run time: exclusive, or the
    only process on each of its processors; with one row nothing is ever switched."""
    pattern, even, odd, block, comm = model
    result = simulate(bsp_jobs([(3.0, 7.3, size, pattern, even, odd, block, comm)]),
                      "flat:8", scheduler)
    assert result.jobs.column("start_s").to_pylist() == [3.0]
    assert ends(result)[0] == pytest.approx(10.3, rel=1e-9)
    assert result.summary.get("context_switches", 0) == 0


@pytest.mark.parametrize("scheduler", TIME_SHARING)
def test_jobs_side_by_side_in_one_row_run_in_isolated_time(scheduler):
    rows = [(0.0, 2.0, 4, bsp.RING, W, W, 0, C), (0.5, 1.0, 4, bsp.RING, W, W, 0, C)]
    result = simulate(bsp_jobs(rows), "flat:8", scheduler)
    assert ends(result) == pytest.approx([2.0, 1.5], rel=1e-9)


@pytest.mark.parametrize("matrix", ["strict", "alternate"])
def test_gang_alternates_slices_and_pays_each_switch(matrix):
    """Two 1 s jobs on the whole machine. Job 1's first slice switches nothing; every
    later slice switches every processor and loses c = SWITCH_COST_S of its 0.1 s. Job 1,
    after 0.1 + 9 x (0.1 - c), ends 0.03 s into its 11th slice (t = 2.03), job 2 having
    10 x (0.1 - c) done. Strict rows: job 1's row's slice then idles to 2.1, when job 2
    runs alone and unswitched. Alternate scheduling: job 2's processors are all idle in the
    active row, so it runs at once, on processors that paid this slice's switch: its 10 c
    left take 10 c / (1 - c / 0.1), and no 22nd slice starts."""
    c = SWITCH_COST_S
    assert c == pytest.approx(0.1 * 4 / 124)
    rows = [(0.0, 1.0, 4, bsp.RING, W, W, 0, C)] * 2
    result = simulate(bsp_jobs(rows), "flat:4", PolicySpec("gang", matrix=matrix))
    first_left = 1.0 - 0.1 - 9 * (0.1 - c)  # done at 1 - c / 0.1 of full speed
    assert first_left / (1 - c / 0.1) == pytest.approx(0.03)
    second_end = {"strict": 2.1 + 10 * c, "alternate": 2.03 + 10 * c / (1 - c / 0.1)}
    assert ends(result) == pytest.approx([2.03, second_end[matrix]], rel=1e-9)
    assert result.summary["context_switches"] == 4 * 20
    assert result.summary["time_slices"] == {"strict": 22, "alternate": 21}[matrix]
    stated = simulate(bsp_jobs(rows), "flat:4",
                      PolicySpec("gang", matrix=matrix, switch_cost_s=c))
    assert stated.jobs.equals(result.jobs)  # the default is the fitted cost, bit for bit
    free = simulate(bsp_jobs(rows), "flat:4",
                    PolicySpec("gang", matrix=matrix, switch_cost_s=0.0))
    assert ends(free) == pytest.approx([1.9, 2.0], rel=1e-9)  # no switch: plain alternation


def test_switch_cost_is_a_checked_parameter_of_the_slicing_schedulers():
    assert PolicySpec("fcs", switch_cost_s=0.01).params()["switch_cost_s"] == 0.01
    with pytest.raises(SpecError, match=r"switch_cost_s=-0\.001; expected a finite number "
                                        r">= 0 \(s\)"):
        PolicySpec("gang", switch_cost_s=-0.001)
    with pytest.raises(SpecError, match=r"\['switch_cost_s'\] do not apply"):
        PolicySpec("spin-block", switch_cost_s=0.0)


def matrix_rows(result):
    return result.jobs.column("matrix_row").to_pylist()


def test_gang_alternate_scheduling_fills_idle_cells():
    """mpl 3 on 4 processors, balanced 1 ms rings entering first fit at t = 0 (the free
    processors holding fewest processes first):

        row 0: J1 J1 J1 .       J1 0.2 s, J2 0.2 s, J3 0.15 s, J4 0.2 s
        row 1: J2 J3 J3 J2
        row 2: J4 .  .  J4

    In row 2's slice J3 (row 1) runs on processors 1-2, idle there; J1 (row 0, tried
    first) does not: its processor 0 is busy. c = SWITCH_COST_S, f = 1 - c / 0.1: a
    processor that switched this slice runs at f. Slices of 0.1 s from t = 0, rows 0, 1,
    2, 0, ...: S1 (row 0) switches nothing: J1 0.1. S2: J2, J3 0.1 - c. S3: J4 0.1 - c,
    J3 on unswitched processors ends at 0.2 + (0.05 + c). S4: J1 0.2 - c (processor 0
    switched). S5: J2 0.2 - 2c. S6: J4 0.2 - 2c. S7: J1 ends at 0.6 + c / f; J2 (its
    processors now idle) runs at f and ends at 0.6 + 3c / f, then J4 at 0.6 + 5c / f.
    Strict rows: J3 runs only in row 1's slices, S2 and S5 (switched): 0.4 + (0.05 + c) / f."""
    c = SWITCH_COST_S
    f = 1 - c / 0.1
    rows = [(0.0, run, size, bsp.RING, W, W, 0, C)
            for run, size in ((0.2, 3), (0.2, 2), (0.15, 2), (0.2, 2))]
    alternate = simulate(bsp_jobs(rows), "flat:4", PolicySpec("gang", mpl=3))
    assert ends(alternate) == pytest.approx(
        [0.6 + c / f, 0.6 + 3 * c / f, 0.25 + c, 0.6 + 5 * c / f], rel=1e-9)
    strict = simulate(bsp_jobs(rows), "flat:4", PolicySpec("gang", mpl=3, matrix="strict"))
    assert ends(strict)[2] == pytest.approx(0.4 + (0.05 + c) / f, rel=1e-9)


def test_gang_row_packing_moves_a_job_down_to_its_free_processors():
    """mpl 3 on 4 processors, A and B on processors 0-1 and 2-3 of row 0, C on all of row
    1, D on processors 0-1 of row 2. A ends at 0.05 s: D moves down to row 0 (C cannot:
    B holds processors 2-3 there), into the active row, and runs at once (no processor
    switched in this first slice): D 0.05 at 0.1. The rotation is now rows 0 and 1:
    S2 (row 1): C 0.1 - c (processors 2-3 switched). S3: every processor switches: D
    0.15 - c, B 0.2 - c. S4: C 0.2 - 2c. S5: D 0.25 - 2c, B 0.3 - 2c. S6: C ends at 0.5 +
    2c / f; the empty active row then runs B and D at f, which end at 0.5 + 4c / f and
    0.5 + (0.05 + 4c) / f."""
    c = SWITCH_COST_S
    f = 1 - c / 0.1
    rows = [(0.0, run, size, bsp.RING, W, W, 0, C)
            for run, size in ((0.05, 2), (0.35, 2), (0.2, 4), (0.25, 2))]
    result = simulate(bsp_jobs(rows), "flat:4", PolicySpec("gang", mpl=3))
    assert matrix_rows(result) == [0, 0, 1, 0]
    assert ends(result) == pytest.approx(
        [0.05, 0.5 + (0.05 + 4 * c) / f, 0.5 + 2 * c / f, 0.5 + 4 * c / f], rel=1e-9)
    strict = simulate(bsp_jobs(rows), "flat:4", PolicySpec("gang", mpl=3, matrix="strict"))
    assert matrix_rows(strict) == [0, 0, 1, 2]


def test_spin_block_balanced_pair_blocks_every_iteration():
    """Two balanced jobs on each processor: each computes, spins T_spin, blocks (cost
    beta) and waits out the other's burst: an iteration every 2 (w + T_spin + beta)."""
    rows = [(0.0, 1.05, 4, bsp.RING, W, W, 0, C)] * 2
    iterations = 1.05 / (W + C)
    result = simulate(bsp_jobs(rows), "flat:4", "spin-block")
    assert ends(result) == pytest.approx([iterations * 2 * (W + SPIN + BETA)] * 2, rel=1e-9)


def test_spin_block_complementing_pair_packs_light_into_heavy():
    """Scenario 2's shape on 4 processors: each processor has one job's light process
    (w) and the other's heavy one (2w + c): a round is both bursts."""
    heavy = 2 * W + C
    rows = [(0.0, 2.1, 4, bsp.RING, W, heavy, 2, C), (0.0, 2.1, 4, bsp.RING, heavy, W, 2, C)]
    iterations = 2.1 / (heavy + C)
    result = simulate(bsp_jobs(rows), "flat:4", "spin-block")
    expected = iterations * (W + heavy + 2 * (SPIN + BETA))
    assert ends(result) == pytest.approx([expected] * 2, rel=1e-9)


def test_processes_that_never_wait_share_fairly_and_delay_a_woken_one():
    """Three such jobs on one machine share it equally: a third each. With a synchronising
    job instead of one of them: it asks for less than a third (cpu = w + T_spin + beta per
    iteration), so each hog gets half of the rest, (1 - r cpu) / 2; woken when its
    partner's message arrives, it waits for a computing hog to end its quantum: half a
    quantum with probability the hogs' share, (1 - r cpu) Q / 2 in all. Its iteration is
    then c + w + beta + that delay, so r solves (cpu Q / 2) r^2 - (c + w + beta + Q / 2) r
    + 1 = 0. Before the wake-up rule a woken process waited for both hogs' whole quanta."""
    hog = (0.0, 1.0, 2, bsp.NONE, 1.0, 1.0, 0, 0.0)
    result = simulate(bsp_jobs([hog] * 3), "flat:2", "spin-block")
    assert ends(result) == pytest.approx([3.0] * 3, rel=1e-9)
    sync = (0.0, 0.105, 2, bsp.RING, W, W, 0, C)  # 100 iterations
    result = simulate(bsp_jobs([hog, hog, sync]), "flat:2", "spin-block")
    cpu = W + SPIN + BETA
    a, b = cpu * Q / 2, C + W + BETA + Q / 2
    rate = (b - math.sqrt(b * b - 4 * a)) / (2 * a)
    assert rate * cpu < 1 / 3  # its demand is below the fair share
    assert ends(result)[2] == pytest.approx(100 / rate, rel=1e-9)
    done = 100 / rate * (1 - rate * cpu) / 2  # each hog's work by then; then they halve it
    assert ends(result)[0] == pytest.approx(100 / rate + 2 * (1.0 - done), rel=1e-9)


def test_fcs_serves_f_processes_first_in_their_slot_or_always():
    """Scenario 3: job 3's light processes (F) share their processors with two jobs that
    never wait (DC). Served first only in job 3's slot, job 3 runs at full speed a third
    of the time; served first in every slot, it runs at full speed throughout."""
    result = simulate(resolve_scenario("scenario3"), "flat:128", "fcs")
    classes = result.jobs.select(["fcs_class_even", "fcs_class_odd"]).to_pylist()
    assert classes[2] == {"fcs_class_even": "DC", "fcs_class_odd": "F"}
    always = simulate(resolve_scenario("scenario3"), "flat:128",
                      PolicySpec("fcs", f_priority="always"))
    assert ends(always)[2] < ends(result)[2] - 40  # priority in every slot: job 3 flies


# --- FCS's classification ----------------------------------------------------------------

def decision_tree(cls, cslots, tslots, g, cpu):
    """Figure 1 / Algorithm 2, as the paper writes it."""
    if cslots < 20:
        return cls
    if tslots % 32768 == 0 or g < 2e-3:
        return fcs.CS
    if g < 1.0 and cpu < 0.85 * 2e-3:
        return fcs.F
    return fcs.DC


@pytest.mark.parametrize(("cslots", "tslots", "g", "cpu", "expected"), [
    (19, 40, 10.0, 10.0, fcs.CS),  # too young to be evaluated: stays
    (20, 40, 1.9e-3, 1.0e-3, fcs.CS),  # fine-grained
    (20, 40, 2.1e-3, 1.0e-3, fcs.F),  # synchronises often but waits: frustrated
    (20, 40, 2.1e-3, 1.8e-3, fcs.DC),  # computes most of its granularity
    (20, 40, 1.5, 1.0e-3, fcs.DC),  # coarse
    (20, 40, math.inf, math.inf, fcs.DC),  # never synchronises
    (20, 32768, 0.5, 1.0e-3, fcs.CS),  # age expired: back to CS
])
def test_constructed_processes_land_in_the_decision_trees_class(cslots, tslots, g, cpu,
                                                                expected):
    assert fcs.classify(fcs.CS, cslots, tslots, g, cpu) == expected


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([fcs.CS, fcs.F, fcs.DC]), st.integers(0, 40), st.integers(1, 70000),
       st.floats(0, 3, allow_nan=False), st.floats(0, 3e-3, allow_nan=False))
def test_classify_is_the_decision_tree(cls, cslots, tslots, g, cpu):
    assert fcs.classify(cls, cslots, tslots, g, cpu) == decision_tree(cls, cslots, tslots, g,
                                                                      cpu)


def test_classes_are_measured_while_coscheduled_and_kept_per_group():
    """A job of 1 ms light and 2.05 ms heavy processes, gang-scheduled at first: g = 2.1 ms
    for both, so after 20 of its slots the light ones are F and the heavy ones DC."""
    jobs = bsp_jobs([(0.0, 20.0, 8, bsp.RING, W, 2 * W + C, 2, C),
                     (0.0, 20.0, 8, bsp.RING, 2 * W + C, W, 2, C)])
    result = simulate(jobs, "flat:8", "fcs")
    assert result.jobs.column("fcs_class_even").to_pylist() == ["F", "DC"]
    assert result.jobs.column("fcs_class_odd").to_pylist() == ["DC", "F"]


# --- the paper's scenarios ----------------------------------------------------------------

@functools.cache
def resolve_scenario(name):
    return prepare(resolve(f"fcs:{name}"), WorkloadSpec(), MachineSpec.parse("flat:128"))


def test_scenarios_are_the_papers_jobs():
    for name, isolated in (("scenario1", [60, 60]), ("scenario2", [120, 120]),
                           ("scenario3", [60, 60, 180]), ("scenario4", [120, 120, 60])):
        jobs = resolve_scenario(name)
        assert list(jobs.run_s) == isolated and set(jobs.size) == {128}
        assert (jobs.submit_s == 0).all()
        iterations = jobs.run_s / jobs.bsp.iteration_s(jobs.size)
        sync = jobs.bsp.synchronising(jobs.size)
        assert iterations[sync] == pytest.approx(60 / 1.05e-3)  # one iteration k x 1.05 ms


#: Termination times of every job (s), as this model gives them (docs/timesharing.md).
EXPECTED = {
    ("scenario1", "fcfs"): [60.0, 120.0], ("scenario1", "gang"): [123.9, 123.99],
    ("scenario1", "spin-block"): [131.54, 131.54], ("scenario1", "fcs"): [123.9, 124.0],
    ("scenario2", "fcfs"): [120.0, 240.0], ("scenario2", "gang"): [247.9, 247.99],
    ("scenario2", "spin-block"): [191.54, 191.54], ("scenario2", "fcs"): [192.45, 192.45],
    ("scenario3", "fcfs"): [60.0, 120.0, 300.0], ("scenario3", "gang"): [185.8, 186.0, 305.99],
    ("scenario3", "spin-block"): [148.7, 148.7, 250.15],
    ("scenario3", "fcs"): [160.92, 160.93, 232.81],
    ("scenario4", "fcfs"): [120.0, 240.0, 300.0],
    ("scenario4", "gang"): [309.89, 309.99, 186.0],
    ("scenario4", "spin-block"): [257.31, 257.31, 165.94],
    ("scenario4", "fcs"): [256.38, 256.39, 186.0],
}


#: Gang scheduling with strict rows: the rest of the slice in which a job ends idles. With
#: alternate scheduling (EXPECTED) the next job's processors are all idle then, so it runs
#: at once, at the speed the slice's switch leaves, and moves down into the active row: a
#: last job ends up to c / (1 - c / 0.1) = 3.3 ms earlier, and scenario 3's job 2, whose
#: slot comes next, waits for job 3's first: 0.1 s later.
STRICT_GANG = {"scenario1": [123.9, 124.0], "scenario2": [247.9, 248.0],
               "scenario3": [185.8, 185.9, 306.0], "scenario4": [309.89, 310.0, 186.0]}


@pytest.mark.parametrize(("name", "scheduler"), sorted(EXPECTED))
def test_scenario_termination_times(name, scheduler):
    result = simulate(resolve_scenario(name), "flat:128", scheduler)
    assert ends(result) == pytest.approx(EXPECTED[name, scheduler], abs=0.006)


@pytest.mark.parametrize("name", sorted(STRICT_GANG))
def test_strict_gang_scenario_termination_times(name):
    result = simulate(resolve_scenario(name), "flat:128", PolicySpec("gang", matrix="strict"))
    assert ends(result) == pytest.approx(STRICT_GANG[name], abs=0.006)


def test_fitted_costs_fit_the_runs_they_were_fitted_to():
    """The switch cost from scenario 1 under gang scheduling (turnaround 124 s); the
    quantum and the block cost by least squares over the spin-block terminations of
    scenarios 2 and 3 (193, 194; 144, 142, 244 s): moving either raises the squared error."""
    paper = scenarios.PAPER
    assert max(EXPECTED["scenario1", "gang"]) == pytest.approx(paper["scenario1"]["gang"][2],
                                                               abs=0.1)

    def squared_error(quantum_s, block_cost_s):
        policy = PolicySpec.from_params("spin-block", {"quantum_s": quantum_s,
                                                       "block_cost_s": block_cost_s})
        error = 0.0
        for name in ("scenario2", "scenario3"):
            got = ends(simulate(resolve_scenario(name), "flat:128", policy))
            error += float(np.sum(np.subtract(got, paper[name]["spin-block"][:len(got)]) ** 2))
        return error

    fitted = squared_error(Q, BETA)
    assert fitted < 120  # about 5 s per termination
    for moved in ((Q * 0.95, BETA), (Q * 1.05, BETA), (Q, BETA * 0.5), (Q, BETA * 1.5)):
        assert squared_error(*moved) > fitted


def test_scenario_4_under_spin_block_moves_smoothly_with_job_3s_granularity():
    """Job 3 computing g per iteration for g from 0.5 to 2 ms: no job's end jumps (at
    most 10 s between neighbouring g), and job 3 ends earlier the coarser it is. When a
    process completed one iteration per round, all three jobs ended together at g = 1.05 ms
    (equal iteration counts) and job 3 moved by 95 s between 1.05 and 2 ms."""
    scenario = resolve_scenario("scenario4")
    model = scenario.bsp
    previous = None
    for g in (0.5e-3, 0.8e-3, 1.0e-3, 1.05e-3, 1.1e-3, 1.5e-3, 2.0e-3):
        rows = [(0.0, float(scenario.run_s[i]), 128, int(model.pattern[i]),
                 float(model.even_s[i]), float(model.odd_s[i]), int(model.block[i]),
                 float(model.comm_s[i])) for i in range(2)]
        rows.append((0.0, 60.0, 128, bsp.RING, g, g, 0, float(model.comm_s[2])))
        got = ends(simulate(bsp_jobs(rows), "flat:128", "spin-block"))
        if previous is not None:
            assert max(abs(a - b) for a, b in zip(got, previous, strict=True)) <= 10
            assert got[2] < previous[2]
        previous = got


def test_scenario_classes_are_the_papers():
    classes = {}
    for name in scenarios.SCENARIOS:
        table = simulate(resolve_scenario(name), "flat:128", "fcs").jobs
        classes[name] = list(zip(table.column("fcs_class_even").to_pylist(),
                                 table.column("fcs_class_odd").to_pylist(), strict=True))
    assert classes == {
        "scenario1": [("CS", "CS")] * 2,
        "scenario2": [("F", "DC"), ("DC", "F")],  # F,F,F,F,DC,DC,DC,DC,... and reversed
        "scenario3": [("DC", "DC"), ("DC", "DC"), ("DC", "F")],  # job 3's fast nodes: F
        "scenario4": [("F", "DC"), ("DC", "F"), ("CS", "CS")],
    }


def test_scenario_table_beside_the_paper():
    text = frachtenberg2003.table("scenario2", {"fcs": [191.2, 191.2]})
    assert "| fcs | 191 (197) | 191 (197) | 191 (197) | 191 (197) |" in text


def test_cli_runs_a_scenario_on_its_own_machine(capsys):
    assert main(["run", "--workload", "fcs:scenario2", "--scheduler", "fcs", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["machine"] == "flat:128"
    assert report["turnaround_s"] == pytest.approx(192.45, abs=0.006)
    assert report["mean_response_s"] == pytest.approx(192.45, abs=0.006)
    assert report["termination_s"] == pytest.approx({"1": 192.45, "2": 192.45}, abs=0.006)
    assert main(["run", "--workload", "fcs:scenario2", "--jobs", "3", "--scheduler",
                 "fcs"]) == 2
    assert "model fcs has its own jobs" in capsys.readouterr().err


# --- the engine against the plain-Python reference ------------------------------------------

COMPUTES = (0.7e-3, 1.3e-3, 3.1e-3, 17e-3, 0.23)  # none near the thresholds' sums
JOB = st.tuples(
    st.integers(0, 40), st.integers(1, 60), st.integers(1, 4),
    st.sampled_from([bsp.NONE, bsp.RING, bsp.BARRIER]), st.sampled_from(COMPUTES),
    st.sampled_from(COMPUTES), st.integers(0, 2), st.sampled_from([0.0, 37e-6, 90e-6]))


MATRICES = st.sampled_from(["alternate", "strict"])  # gang's matrix (others ignore it)


@settings(max_examples=60, deadline=None)
@given(st.lists(JOB, min_size=1, max_size=5), st.sampled_from(TIME_SHARING),
       st.integers(1, 3), st.sampled_from(["fcfs", "easy"]),
       st.sampled_from(["slot", "always"]), st.sampled_from([0.05, 0.1]), MATRICES)
def test_engine_agrees_with_the_reference(rows, scheduler, mpl, queue, priority, slice_s,
                                          matrix):
    """Submits on a 0.0531 s grid and runs in multiples of 0.0913 s keep events off slice
    boundaries (where rounding could send a completion either side)."""
    compare_with_reference(rows, scheduler, mpl, queue, priority, slice_s, matrix)


@settings(max_examples=12, deadline=None)
@given(st.lists(JOB, min_size=2, max_size=3), st.sampled_from(["gang", "fcs"]),
       st.integers(2, 3), st.sampled_from(["slot", "always"]), MATRICES)
def test_engine_agrees_with_the_reference_over_long_runs(rows, scheduler, mpl, priority,
                                                         matrix):
    """Runs of 10 to 30 s with 50 ms slices: jobs live through hundreds of slots, FCS
    re-classifies them while whole rotations are skipped."""
    rows = [(a, 110 + 5 * r, *rest) for a, r, *rest in rows]
    compare_with_reference(rows, scheduler, mpl, "easy", priority, 0.05, matrix)


def compare_with_reference(rows, scheduler, mpl, queue, priority, slice_s, matrix):
    processors = 4
    rows = [(0.0531 * a, 0.0913 * r, min(s, processors), p, e, o, b, c)
            for a, r, s, p, e, o, b, c in rows]
    jobs = bsp_jobs(rows)
    params = {"mpl": mpl, "queue": queue}
    if scheduler != "spin-block":
        params["time_slice_s"] = slice_s
    if scheduler == "fcs":
        params["f_priority"] = priority
    if scheduler == "gang":
        params["matrix"] = matrix
    policy = PolicySpec.from_params(scheduler, params)
    result = simulate(jobs, f"flat:{processors}", policy)
    model = jobs.bsp
    ref_jobs = [reference.Job(float(jobs.submit_s[i]), float(jobs.run_s[i]), int(jobs.size[i]),
                              bool(model.synchronising(jobs.size)[i]), float(model.even_s[i]),
                              float(model.odd_s[i]), int(model.block[i]),
                              float(model.comm_s[i]), float(jobs.run_s[i]) * mpl)
                for i in range(len(jobs))]
    done, unused = reference.simulate(
        ref_jobs, processors, scheduler, mpl, queue == "easy", params.get("time_slice_s", 0.1),
        SPIN, priority == "always", SWITCH_COST_S, Q, BETA,
        {"cslots_min": fcs.CSLOTS_MIN, "tslots_max": fcs.TSLOTS_MAX, "cs": fcs.CS_THRESH_S,
         "dc": fcs.DC_THRESH_S, "f": fcs.F_THRESH_S}, params.get("matrix") == "alternate")
    assert result.jobs.column("start_s").to_pylist() == pytest.approx(
        [j.start for j in done], rel=1e-9, abs=1e-9)
    assert ends(result) == pytest.approx([j.end for j in done], rel=1e-7)
    span = max(j.end for j in done) - min(j.submit for j in done)
    assert result.summary["unused"] == pytest.approx(unused / (span * processors), abs=1e-7)
    if scheduler == "fcs":
        even = result.jobs.column("fcs_class_even").to_pylist()
        assert even == [fcs_name(j.cls[0]) for j in done]


def fcs_name(cls):
    return ("CS", "F", "DC")[cls]


# --- invariants on a real trace -----------------------------------------------------------

@functools.cache
def trace_jobs(path):
    """SDSC-SP2's first 300 jobs with run times scaled to a hundredth (hours become
    minutes) and arrivals to an offered load of 1.1, BSP models drawn, on the
    128-processor machine."""
    return prepare(clean(read_swf(path)), WorkloadSpec(first_jobs=300, runtime_scale=0.01,
                                                       offered_load=1.1, bsp_model="random"),
                   MachineSpec.parse("flat:128"), seed=5)


@pytest.mark.parametrize("scheduler", TIME_SHARING)
@pytest.mark.parametrize("params", [{}, {"queue": "fcfs", "mpl": 2}])
def test_real_trace_invariants(scheduler, params, trace_excerpt):
    jobs = trace_jobs(str(trace_excerpt("SDSC-SP2-1998-4.2-cln")))
    policy = PolicySpec.from_params(scheduler, params)
    result = simulate(jobs, "flat:128", policy)
    table = result.jobs
    start, end = table.column("start_s").to_numpy(), table.column("end_s").to_numpy()
    assert (start >= jobs.submit_s).all()
    assert (end - start >= jobs.run_s * (1 - 1e-9)).all()  # never faster than dedicated
    s = result.summary
    assert s["mean_wait_s"] > 0 and (end - start > 1.5 * jobs.run_s).mean() > 0.1  # contended
    assert s["utilization"] + s["unused"] + s["lost"] == pytest.approx(1, abs=1e-12)
    assert 0 < s["utilization"] <= 1 and s["unused"] >= 0 and s["lost"] >= -1e-12
    assert s["resources_left_busy"] == 0
    mpl = policy.mpl
    for t in np.unique(start):  # jobs in the matrix at t fit its mpl rows
        inside = (start <= t) & (end > t)
        assert jobs.size[inside].sum() <= mpl * 128
    if params.get("queue") == "fcfs":
        assert (np.diff(start) >= 0).all()  # first come, first served
    again = simulate(jobs, "flat:128", policy)
    assert again.jobs.equals(table)
    assert json.dumps(again.summary, sort_keys=True) == json.dumps(s, sort_keys=True)


def test_time_sharing_results_fit_the_store(tmp_path):
    from simcore.sweep.store import SUMMARY_SCHEMA, summary_table

    result = simulate(resolve_scenario("scenario2"), "flat:128", "fcs")
    row = summary_table([result.summary])
    assert row.schema == SUMMARY_SCHEMA
    assert row.column("context_switches").to_pylist() == [result.summary["context_switches"]]
    assert row.column("utilization")[0].as_py() <= 1


# --- tables and figures of a load sweep ---------------------------------------------------

def sweep_rows():
    """Store rows of two policies over offered loads 0.5..0.9 (and a trace run without
    any): fcfs saturates at an accepted load of 0.7, fcs keeps rising to 0.87."""
    import polars as pl

    from simcore.sweep.store import summary_table

    accepted = {"fcfs": (0.5, 0.6, 0.7, 0.7, 0.7), "fcs": (0.5, 0.6, 0.7, 0.8, 0.87)}
    rows = []
    for policy, values in accepted.items():
        for load, value in zip((0.5, 0.6, 0.7, 0.8, 0.9), values, strict=True):
            for seed in (1, 2):
                rows.append({"run_key": f"{policy}-{load}-{seed}", "seed": seed,
                             "scheduler": policy, "machine_spec": "flat:32",
                             "runtime_scale": 1.0, "offered_load": load,
                             "accepted_load": value + 0.01 * (seed - 1.5),
                             "mean_response_s": 100 * load, "median_response_s": 10 * load,
                             "mean_bsld": 5 * load, "median_bsld": 1 + load,
                             "utilization": value, "unused": 0.1, "lost": 0.9 - value})
    rows.append({"run_key": "trace", "seed": 1, "scheduler": "fcs", "machine_spec": "flat:32",
                 "runtime_scale": 1.0, "accepted_load": 0.3, "utilization": 0.3,
                 "mean_response_s": 50.0})
    table = pl.from_arrow(summary_table(rows))
    names = [("fcs-study", "lublin", "flat", row["scheduler"]) for row in rows]
    names[-1] = ("trace-run", "sdsc", "flat", "fcs")
    partitions = pl.DataFrame(names, schema=["experiment", "workload", "machine", "policy"],
                              orient="row")
    return partitions.hstack(table)


def test_saturation_is_where_accepted_load_stops_rising():
    """fcfs's mean accepted load is min(offered, 0.7): its knee is at 0.7 exactly; fcs's
    rises by 0.1, 0.1, then 0.07 per 0.1: no knee where the slope falls below half."""
    from simcore.report.tables import aggregate

    table = aggregate(sweep_rows())["saturation"]
    assert table.select("policy", "n", "saturation_load", "at_offered_load",
                        "max_accepted_load", "max_offered_load").rows() == [
        ("fcfs", 10, pytest.approx(0.7), pytest.approx(0.7), pytest.approx(0.7), 0.9),
        ("fcs", 10, None, None, pytest.approx(0.87), 0.9)]
    wait = aggregate(sweep_rows())["wait_slowdown"]
    row = wait.filter((wait["policy"] == "fcs") & (wait["offered_load"] == 0.8)).row(0,
                                                                                     named=True)
    assert row["accepted_load_mean"] == pytest.approx(0.8)
    response = aggregate(sweep_rows())["response"]
    row = response.filter((response["policy"] == "fcs")
                          & (response["offered_load"] == 0.8)).row(0, named=True)
    assert row["median_response_s_mean"] == pytest.approx(8.0)


#: Mean accepted loads of EASY over offered loads 0.5-1.2, a finite workload's curve that
#: keeps creeping upward past its knee (the frachtenberg2003 experiment, seeds 1-3).
CREEPING = ((0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.1, 1.2),
            (0.481, 0.571, 0.656, 0.697, 0.735, 0.776, 0.810, 0.832, 0.856, 0.866, 0.884))


def test_the_knee_does_not_jump_with_its_threshold_or_the_data():
    """A rule taking the first step that rises by less than a threshold times the offered
    step puts this curve's saturation at offered 0.9 with a threshold of 0.441 and at 1.0
    with 0.439 (the step from 0.9 rises by 0.44 of it). The knee has no such threshold:
    it stays within 0.005 of 0.876 when every point moves by up to 0.001, and the
    threshold only says whether there is a knee, which holds for any threshold near 0.5."""
    import numpy as np

    from simcore.report import tables

    offered, accepted = CREEPING
    at, level, ratio = tables.knee(offered, accepted)
    assert at == pytest.approx(0.876, abs=0.002) and level == pytest.approx(0.81, abs=0.005)
    assert ratio < tables.SATURATION_SLOPE - 0.001, "a knee, whichever the threshold"
    rng = np.random.default_rng(1)
    for _ in range(20):
        moved = np.asarray(accepted) + rng.uniform(-0.001, 0.001, len(accepted))
        assert tables.knee(offered, moved)[0] == pytest.approx(at, abs=0.005)
    assert tables.knee(offered[:3], accepted[:3]) is None, "three loads cannot show a knee"


def test_reproduction_query_of_a_saturation_load():
    from simcore.base.errors import ConfigError
    from simcore.report.reproduction import evaluate

    runs = sweep_rows()
    fcfs = {"experiment": "fcs-study", "policy": "fcfs"}
    query = {"saturation": "saturation_load", "where": fcfs}
    assert evaluate(runs, query) == pytest.approx(0.7)
    assert evaluate(runs, {**query, "saturation": "at_offered_load"}) == pytest.approx(0.7)
    assert evaluate(runs, {**query, "where": {**fcfs, "policy": "fcs"}}) is None  # no stop
    with pytest.raises(ConfigError, match="one configuration swept over offered load, found 2"):
        evaluate(runs, {**query, "where": {"experiment": "fcs-study"}})


def test_response_vs_load_figure(tmp_path):
    from simcore.report.plots import write_figures
    from simcore.report.tables import aggregate
    from simcore.sweep.store import write_table

    for name, table in aggregate(sweep_rows()).items():
        write_table(table.to_arrow(), tmp_path / "tables" / f"{name}.parquet")
    paths = write_figures(tmp_path / "tables", tmp_path / "figures")
    names = {f"{p.parent.name}/{p.name}" for p in paths}
    assert {"fcs-study/response-vs-load.png", "fcs-study/response-vs-load.svg"} <= names
    assert "trace-run/response-vs-load.png" not in names  # one load: no curve to draw


def test_carried_vs_load_marks_the_knee():
    """The figure draws each curve and a bar at its knee: fcfs's at (0.7, 0.7); fcs has
    none (it does not saturate within the sweep)."""
    import matplotlib
    import polars as pl

    from simcore.report.plots import STYLE, carried_vs_load
    from simcore.report.tables import aggregate

    rows = aggregate(sweep_rows())["wait_slowdown"].filter(
        pl.col("experiment") == "fcs-study")
    with matplotlib.style.context(STYLE, after_reset=True):
        fig = carried_vs_load("fcs-study", rows)
    lines = fig.axes[0].get_lines()
    bars = [line for line in lines if line.get_marker() == "|"]
    assert len(bars) == 1
    assert (bars[0].get_xdata()[0], bars[0].get_ydata()[0]) == (
        pytest.approx(0.7), pytest.approx(0.7))
    curves = [line for line in lines if len(line.get_xdata()) == 5]
    assert len(curves) == 2, "one curve per policy"
    assert fig.axes[0].get_ylabel().startswith("carried load")
    assert carried_vs_load("fcs-study", rows.filter(pl.col("offered_load") < 0.75)) is None


@pytest.mark.parametrize("scheduler", TIME_SHARING)
def test_each_job_records_its_matrix_row_and_processors(scheduler):
    """A job's processes hold `size` distinct processors of one matrix row; two jobs
    resident at once in one row hold different processors (the row's cells). Gang with
    strict rows: row packing would move jobs, so that their recorded row is their last."""
    from simcore.core.placements import PlacementLog

    machine = MachineSpec.parse("flat:32")
    jobs = prepare(resolve("lublin:32", 60, 1), WorkloadSpec(bsp_model="random"), machine,
                   seed=1)
    params = {"mpl": 3, **({"matrix": "strict"} if scheduler == "gang" else {})}
    table = simulate(jobs, machine, PolicySpec.from_params(scheduler, params)).jobs
    log = PlacementLog.from_job_columns(table, 1)  # one entry per job, in the table's order
    assert log.job_id.tolist() == table.column("job_id").to_pylist()
    procs = log.bits()[:, :32]
    assert procs.sum(axis=1).tolist() == table.column("size").to_pylist()
    row = table.column("matrix_row").to_numpy()
    assert set(row.tolist()) <= {0, 1, 2} and len(set(row.tolist())) > 1
    start, end = (table.column(c).to_numpy() for c in ("start_s", "end_s"))
    for a in range(len(row)):
        for b in range(a + 1, len(row)):
            if row[a] == row[b] and start[a] < end[b] and start[b] < end[a]:
                assert not (procs[a] & procs[b]).any(), (a, b)


def test_sensitivity_experiment_sweeps_switch_cost_only_where_it_is_paid():
    """frachtenberg2003-sensitivity: 4 switch costs x 9 granularity ranges x 3 seeds for
    gang and FCS; EASY and spin-block, which pay no switch, run each range once per
    seed."""
    from simcore.schedulers.registry import SWITCH_COST_S
    from simcore.sweep.planning import load_plan

    shards = {s.policy: s for s in load_plan("config/papers.yaml")
              if s.experiment == "frachtenberg2003-sensitivity"}
    assert {policy: len(s.runs) for policy, s in shards.items()} == {
        "easy": 27, "gang": 108, "spin-block": 27, "fcs": 108}
    costs = {dict(run.policy).get("switch_cost_s", SWITCH_COST_S) for run in shards["fcs"].runs}
    assert costs == {0.0, 0.001, SWITCH_COST_S, 0.01}
    assert not any(run.policy for run in shards["easy"].runs)
    assert {run.transforms.offered_load for s in shards.values() for run in s.runs} == {0.8}
