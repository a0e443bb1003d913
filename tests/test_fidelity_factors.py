"""Closing the replay gap (`simcore.fidelity.factors`, `.outages`, `.fit`): drains as the
failure machinery applies them, the priority order, outages inferred from a synthetic log,
a fit that never reads the scored half, and the configuration refused precisely."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.arrays import numpy_array
from simcore.base.errors import ConfigError, SimcoreError, SpecError
from simcore.fidelity.compare import compare, halves
from simcore.fidelity.factors import Model, head_starts, model_schedule
from simcore.fidelity.fit import ablation, loss
from simcore.fidelity.outages import drain_trace, infer_outages
from simcore.jobs.cleaning import clean
from simcore.jobs.jobs import Jobs
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.report.fidelity_factors import FactorsConfig, trace_factors
from simcore.schedules.segments import from_placements
from simcore.schedules.units import numbering
from simcore.simulate import simulate
from tests.excerpts import excerpt_path
from tests.test_fidelity import log, swf_text


def starts(result) -> dict[int, float]:
    table = result.jobs
    return dict(zip(numpy_array(table.column("job_id")).tolist(),
                    numpy_array(table.column("start_s")).tolist(), strict=True))


def drained(tmp_path, lines: str, jobs: Jobs, machine: str = "flat:4"):
    trace = tmp_path / "outages.txt"
    trace.write_text(lines)
    spec = MachineSpec.parse(machine, options={"failure_trace": str(trace),
                                               "on_failure": "drain"})
    return simulate(jobs, spec, PolicySpec("backfill"))


def test_a_drain_lets_running_jobs_finish_and_starts_nothing_on_its_units(tmp_path):
    """flat:4, every unit drained at 5 s for 100 s: jobs 0 and 1 (2 units each, running)
    go on to 50 and 10; job 2 (1 unit, at 6) waits for the repair at 105; the units are
    out of service from the ends of the jobs that held them: 2 x (105 - 10) + 2 x
    (105 - 50) unit-seconds of the 4 x 205 the run spans."""
    jobs = Jobs.create(np.arange(4), [0, 0, 6, 200], [50, 10, 5, 5], [50, 10, 5, 5],
                       [2, 2, 1, 1])
    result = drained(tmp_path, "".join(f"5 {u} 100\n" for u in range(4)), jobs)
    assert starts(result) == {0: 0.0, 1: 0.0, 2: 105.0, 3: 200.0}
    ended = dict(zip(*(numpy_array(result.jobs.column(c)).tolist()
                       for c in ("job_id", "end_s")), strict=True))
    assert ended[0] == 50.0 and ended[1] == 10.0
    assert result.summary["failed"] == pytest.approx((2 * 95 + 2 * 55) / (4 * 205))
    assert result.summary["failures"] == 4 and result.summary["runs_cut_short"] == 0


def test_a_repair_before_the_unit_comes_free_cancels_its_drain(tmp_path):
    """Unit 0 drains at 5 s for 10 s while job 0 holds all four units to 50 s: the repair
    at 15 s comes first, so nothing goes out of service and job 1 starts at 50 s."""
    jobs = Jobs.create(np.arange(2), [0, 6], [50, 5], [50, 5], [4, 4])
    result = drained(tmp_path, "5 0 10\n", jobs)
    assert starts(result) == {0: 0.0, 1: 50.0}
    assert result.summary["failed"] == 0.0


def test_a_drained_unit_is_busy_as_often_as_a_failing_one(tmp_path):
    """flat:4, job 0 holding 3 units to 60 s, unit 0 drained at 10 s for 1,000 s: the
    failing unit is busy with probability 3/4 (the failure's draw, per seed), and then a
    1-unit job arriving at 20 s still finds the free unit; else that unit is gone and the
    job waits for job 0's units."""
    jobs = Jobs.create(np.arange(2), [0, 20], [60, 5], [60, 5], [3, 1])
    trace = tmp_path / "outages.txt"
    trace.write_text("10 0 1000\n")
    spec = MachineSpec.parse("flat:4", options={"failure_trace": str(trace),
                                                "on_failure": "drain"})
    found = [starts(simulate(jobs, spec, PolicySpec("backfill"), seed))[1]
             for seed in range(200)]
    assert set(found) == {20.0, 60.0}
    assert 120 <= found.count(20.0) <= 180  # binomial(200, 3/4): mean 150, sd 6.1


def test_a_drain_is_refused_where_units_have_identity():
    with pytest.raises(SpecError, match="drain needs units without identity"):
        MachineSpec.parse("torus:2x2x2", options={"unit_mtbf_s": 1e6,
                                                  "on_failure": "drain"})


def test_a_drain_run_s_schedule_is_not_exported(tmp_path):
    jobs = Jobs.create(np.arange(4), [0, 0, 6, 200], [50, 10, 5, 5], [50, 10, 5, 5],
                       [2, 2, 1, 1])
    result = drained(tmp_path, "".join(f"5 {u} 100\n" for u in range(4)), jobs)
    with pytest.raises(SimcoreError, match="on_failure: drain"):
        from_placements(result, numbering(MachineSpec.parse("flat:4")))


def test_priority_backfill_without_head_starts_is_easy_job_for_job():
    jobs = Jobs.from_swf(clean(read_swf(excerpt_path("SDSC-SP2-1998-4.2-cln"))))
    assert starts(simulate(jobs, "flat:128", "priority-backfill")) == \
        starts(simulate(jobs, "flat:128", "backfill"))


def test_a_head_start_puts_a_later_job_first():
    """flat:4 held to 100 s by job 0; jobs 1 (at 10 s) and 2 (at 20 s) each need all four.
    In arrival order 1 runs first; with a head start of 15 s, 2 ranks at 5 s, before 1."""
    def jobs(priority):
        return Jobs.create(np.arange(3), [0, 10, 20], [100, 50, 50], [100, 50, 50],
                           [4, 4, 4], priority_s=priority)

    assert starts(simulate(jobs(None), "flat:4", "priority-backfill")) == \
        {0: 0.0, 1: 100.0, 2: 150.0}
    assert starts(simulate(jobs([0, 0, 15]), "flat:4", "priority-backfill")) == \
        {0: 0.0, 1: 150.0, 2: 100.0}
    assert starts(simulate(jobs([0, 0, 15]), "flat:4", "backfill")) == \
        {0: 0.0, 1: 100.0, 2: 150.0}


def synthetic_log(outage: tuple[float, float], processors: int = 1) -> pa.Table:
    """Jobs of `processors` each on a machine of 4, one every 100 s from 0 to 20,000 s,
    each running 50 s and starting when it arrives, except those arriving during
    `outage`, which start at its end (their waits say so)."""
    rows = []
    for k in range(200):
        submit = 100 * k
        start = outage[1] if outage[0] <= submit < outage[1] else submit
        rows.append((k + 1, submit, start - submit, 50, processors, 1 + k % 3, 1))
    return log(swf_text(rows))


def test_a_known_outage_is_inferred_from_a_synthetic_log():
    """Nothing starts from 5,000 s to 9,000 s while a job waits on an idle machine: the
    outage is [5,000, 9,000). Stretches shorter than the gap are not outages, and a fit
    cut off before the outage sees none."""
    table = synthetic_log((5000.0, 9000.0))
    assert infer_outages(table, 4, 3600).tolist() == [[5000.0, 9000.0]]
    assert infer_outages(table, 4, 5000).tolist() == []
    assert infer_outages(table, 4, 3600, until_s=8000).tolist() == []


@settings(max_examples=30, deadline=None)
@given(st.integers(20, 150), st.integers(20, 40), st.integers(1, 4))
def test_an_outage_is_inferred_wherever_it_lies(first, length, processors):
    """The synthetic outage anywhere in the log, of any length above the gap, and jobs
    of more processors (still fitting): inferred exactly."""
    lo, hi = 100.0 * first, 100.0 * (first + length)
    table = synthetic_log((lo, hi), processors)
    assert infer_outages(table, 4, 1900).tolist() == [[lo, hi]]


def test_inferred_outages_replay_as_drains(tmp_path):
    """The synthetic log replayed with its inferred outage drained starts every job where
    the log recorded it."""
    table = synthetic_log((5000.0, 9000.0))
    schedule = model_schedule(table, MachineSpec.parse("flat:4"), PolicySpec("backfill"),
                              Model(outage_gap_s=3600.0, outages_from_whole_log=True))
    assert compare(table, schedule).report["all"]["within_10_min"] == 1.0
    trace = drain_trace(np.array([[5000.0, 9000.0]]), 2, 100.0, tmp_path / "d.txt")
    assert trace.read_text().splitlines()[1:] == ["4900.0 0 4000.0", "4900.0 1 4000.0"]


def perturbed(table: pa.Table, seed: int) -> pa.Table:
    """`table` with every recorded wait of its second half replaced by a random one."""
    wait = numpy_array(table.column("wait_time")).copy()
    second = halves(table) == 2
    wait[second] = np.random.default_rng(seed).integers(0, 100_000, int(second.sum()))
    index = table.schema.get_field_index("wait_time")
    return table.set_column(index, table.schema.field(index),
                            pa.array(wait, table.schema.field(index).type))


def partitioned(table: pa.Table) -> pa.Table:
    """`table` with its jobs in partitions 1 and 2 by odd and even job number."""
    index = table.schema.get_field_index("partition")
    number = numpy_array(table.column("job_number"))
    return table.set_column(index, table.schema.field(index), pa.array(
        number % 2 + 1, table.schema.field(index).type))


@pytest.mark.parametrize("fixed", [Model(), Model(partitions=((1, 64), (2, 64)),
                                                  node_processors=2)])
def test_the_fit_never_reads_the_scored_half(fixed):
    """Every recorded wait of the second half perturbed: the same fitted models, the same
    first-half metrics, row for row (the diagnostics read the second half's starts, so
    only they may move); every factor in play, partitions and whole nodes too."""
    table = partitioned(clean(read_swf(excerpt_path("SDSC-SP2-1998-4.2-cln"))))
    grids = {"capacity": (1.0, 0.97), "outage_gap_h": (None, 0.5, 2),
             "queue_scale": (0, 1), "user_scale": (0, 1), "group_scale": (0, 2)}
    machine, policy = MachineSpec.parse("flat:128"), PolicySpec("backfill")
    before = ablation(table, machine, policy, grids, fixed, progress=lambda _: None)
    after = ablation(perturbed(table, 1), machine, policy, grids, fixed,
                     progress=lambda _: None)
    assert {"group priorities", "all factors"} <= {r.name for r in before}
    assert [r.name for r in before] == [r.name for r in after]
    for a, b in zip(before, after, strict=True):
        if not a.diagnostic:
            assert a.model == b.model and a.configs == b.configs
            assert a.halves["first_half"] == b.halves["first_half"]
    assert any(a.halves["second_half"] != b.halves["second_half"]
               for a, b in zip(before, after, strict=True))


def test_the_ablation_is_the_same_on_any_number_of_workers():
    table = clean(read_swf(excerpt_path("SDSC-SP2-1998-4.2-cln")))
    grids = {"capacity": (1.0, 0.97), "queue_scale": (0, 1)}
    machine, policy = MachineSpec.parse("flat:128"), PolicySpec("backfill")
    alone = ablation(table, machine, policy, grids, Model(), progress=lambda _: None)
    assert ablation(table, machine, policy, grids, Model(), progress=lambda _: None,
                    workers=2) == alone


def test_head_starts_come_from_the_first_half_alone():
    table = clean(read_swf(excerpt_path("SDSC-SP2-1998-4.2-cln")))
    heads = head_starts(table, 1.0)
    assert np.array_equal(heads, head_starts(perturbed(table, 2), 1.0))
    assert heads.min() == 0 and heads.max() > 0


def test_the_loss_is_zero_for_exact_agreement_and_inf_when_undefined():
    assert loss({"mean_wait_ratio": 1.0, "wait_rho": 1.0, "within_10_min": 1.0}) == 0.0
    assert loss({"mean_wait_ratio": math.nan, "wait_rho": 1.0, "within_10_min": 1.0}) \
        == math.inf
    assert loss({"mean_wait_ratio": math.e, "wait_rho": 0.5, "within_10_min": 0.25}) \
        == pytest.approx(2.25)


def test_a_job_outside_the_partitions_is_named():
    table = synthetic_log((5000.0, 9000.0))
    with pytest.raises(SpecError, match=r"job 1 is in partition -1 .*200 such jobs"):
        model_schedule(table, MachineSpec.parse("flat:4"), PolicySpec("backfill"),
                       Model(partitions=((1, 2), (2, 2))))


GOOD = {"policy": "EASY", "grids": {"capacity": [1.0, 0.9], "outage_gap_h": [None, 2]},
        "targets": {"traces": ["t"], "mean_wait_ratio": [0.9, 1.1], "wait_rho": 0.7,
                    "within_10_min": 0.6}}


@pytest.mark.parametrize("change, message", [
    ({"policy": "FCFS"}, "factors.policy: 'FCFS' is no policy"),
    ({"grids": {"capacity": [0.9, 1.0]}}, r"factors.grids.capacity: .*the first 1.0 \(off\)"),
    ({"grids": {"speed": [1]}}, "factors.grids: expected a mapping with some of"),
    ({"grids": {"queue_scale": [0, -1]}}, "factors.grids.queue_scale"),
    ({"grids": {"capacity": [1.0, 1.5]}}, r"factors.grids.capacity: .* and <= 1"),
    ({"targets": {**GOOD["targets"], "wait_rho": [0.9, 0.1]}}, "factors.targets.wait_rho"),
    ({"targets": {**GOOD["targets"], "traces": ["u"]}}, "factors.targets.traces"),
])
def test_a_bad_factors_configuration_names_its_key(change, message):
    with pytest.raises(ConfigError, match=message):
        FactorsConfig.read({**GOOD, **change}, "f.yaml:", {"EASY": None}, {"t": None})
    assert FactorsConfig.read(GOOD, "f.yaml:", {"EASY": None}, {"t": None}).targets[
        "wait_rho"] == (0.7, math.inf)


def test_a_trace_s_fixed_factors_are_read_and_checked():
    model, lacks = trace_factors({"partitions": {"1": 48, "2": 352}, "lacks": "x"}, "w")
    assert model == Model(partitions=((1, 48), (2, 352))) and lacks == "x"
    assert dataclasses.replace(model, partitions=()) == Model()
    with pytest.raises(ConfigError, match="w: expected a mapping"):
        trace_factors({"node_processors": 0}, "w")
