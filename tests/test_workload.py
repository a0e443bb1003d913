"""Workload transforms and Aridor's shape synthesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcore.base.draws import STREAMS, job_uniforms
from simcore.base.errors import SpecError
from simcore.jobs.cleaning import clean
from simcore.jobs.swf import read_swf
from simcore.machines.spec import MachineSpec
from simcore.workload.shapes import fat_shapes, slim_shapes, synthesize
from simcore.workload.spec import transforms
from simcore.workload.transforms import WorkloadSpec, offered_load, prepare

BGL = (8, 4, 4)


def test_every_transform_default_is_already_canonical():
    """A spec skips converting the transforms left at their defaults: each default must be
    what converting it gives, value and type, so that 1 and 1.0 stay one run."""
    for name, f in transforms().items():
        converted = f.metadata["parameter"].convert(f.default)
        assert converted == f.default and type(converted) is type(f.default), name
    assert WorkloadSpec(runtime_scale=1) == WorkloadSpec() == WorkloadSpec(runtime_scale=1.0)
    assert type(WorkloadSpec(runtime_scale=2).runtime_scale) is float


@pytest.mark.parametrize(("size", "shape"), [(1, (1, 1, 1)), (6, (1, 1, 6)), (16, (1, 2, 8)),
                                             (27, (3, 3, 3)), (17, (1, 3, 6)), (8, (1, 1, 8)),
                                             (128, (4, 4, 8))])
def test_slim_shapes_of_the_paper(size, shape):
    assert tuple(slim_shapes(np.array([size]), BGL)[0]) == shape


@pytest.mark.parametrize(("size", "shape"), [(1, (2, 2, 2)), (8, (2, 2, 2)), (9, (2, 2, 3)),
                                             (16, (2, 2, 4)), (17, (2, 3, 3)), (27, (3, 3, 3))])
def test_fat_shapes(size, shape):
    assert tuple(fat_shapes(np.array([size]), BGL)[0]) == shape


def test_every_size_gets_the_smallest_volume_that_holds_it():
    sizes = np.arange(1, 129)
    for shapes, smallest in ((slim_shapes(sizes, BGL), 1), (fat_shapes(sizes, BGL), 2)):
        volume = shapes.prod(axis=1)
        assert (volume >= sizes).all() and (shapes.min(axis=1) >= smallest).all()
        assert (np.sort(shapes, axis=1) <= np.array([4, 4, 8])).all()
    exact = {a * b * c for a in range(1, 5) for b in range(1, 5) for c in range(1, 9)}
    assert (slim_shapes(sizes, BGL).prod(axis=1) == sizes).sum() == len(exact) == 38


def test_draws_are_per_job_and_reproducible():
    ids = np.arange(1, 5001)
    u = job_uniforms(7, 1, ids)
    assert np.array_equal(u, job_uniforms(7, 1, ids))
    assert np.array_equal(u[100:200], job_uniforms(7, 1, ids[100:200])), "subset-invariant"
    assert not np.array_equal(u, job_uniforms(8, 1, ids))
    assert not np.array_equal(u, job_uniforms(7, 2, ids))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / u.size)


def test_every_use_of_the_draws_has_a_stream_of_its_own():
    assert len(set(STREAMS.values())) == len(STREAMS)


def test_fat_and_torus_probabilities_nest():
    ids = np.arange(1, 4001)
    sizes = np.full(ids.size, 4)
    half, _ = synthesize(ids, sizes, BGL, 0.5, 0.0, seed=3)
    full, torus = synthesize(ids, sizes, BGL, 1.0, 0.5, seed=3)
    fat_half = (half == 2).all(axis=1)
    assert (full == 2).all()
    p = fat_half.mean()
    assert abs(p - 0.5) < 4 * np.sqrt(0.25 / ids.size)
    assert abs(torus.mean() - 0.5) < 4 * np.sqrt(0.25 / ids.size)
    more, _ = synthesize(ids, sizes, BGL, 0.7, 0.0, seed=3)
    assert ((more == 2).all(axis=1) >= fat_half).all(), "raising p_fat only adds fat jobs"


@given(sizes=st.lists(st.integers(1, 128), min_size=1, max_size=40),
       p_fat=st.sampled_from([0.0, 0.3, 1.0]))
def test_slim_jobs_sized_as_fat_differ_in_shape_only(sizes, p_fat):
    """With slim_as_fat every job, slim or fat, has its fat shape's volume: 6 units make a
    2x2x2 fat job and a 1x1x8 slim one (Aridor's Figure 8 compares shapes at equal sizes)."""
    ids, size = np.arange(1, len(sizes) + 1), np.array(sizes)
    shape, _ = synthesize(ids, size, BGL, p_fat, 0.0, seed=5, slim_as_fat=True)
    assert (shape.prod(axis=1) == fat_shapes(size, BGL).prod(axis=1)).all()
    slim, _ = synthesize(np.array([1]), np.array([6]), BGL, 0.0, 0.0, seed=5,
                         slim_as_fat=True)
    assert tuple(slim[0]) == (1, 1, 8)


def test_f_model_estimates(trace_excerpt):
    """estimate_factor f draws each requested time as run x U(1, f) after the run times
    are scaled: never below the run, spread over [1, f], the same for the same seed."""
    table = clean(read_swf(trace_excerpt("CTC-SP2-1996-3.1-cln")))
    flat = MachineSpec.parse("flat:512")
    spec = WorkloadSpec(first_jobs=3000, runtime_scale=1.5, estimate_factor=4.0)
    jobs = prepare(table, spec, flat, seed=2)
    ratio = jobs.requested_s / jobs.run_s
    assert ratio.min() >= 1.0 and ratio.max() <= 4.0
    assert abs(ratio.mean() - 2.5) < 0.1, "uniform over [1, 4]"
    assert (prepare(table, spec, flat, seed=2).requested_s == jobs.requested_s).all()
    assert not (prepare(table, spec, flat, seed=3).requested_s == jobs.requested_s).all()


def test_prepare_span_scaling_and_load(trace_excerpt):
    table = clean(read_swf(trace_excerpt("CTC-SP2-1996-3.1-cln")))
    bgl = MachineSpec.parse("bgl:8x4x4")
    spec = WorkloadSpec(first_jobs=5000, processors_per_unit=4, runtime_scale=1.5,
                        offered_load=0.6, p_fat=1.0, p_torus=1.0)
    jobs = prepare(table, spec, bgl, seed=11)
    assert len(jobs) == 5000
    assert jobs.shape.min() >= 2 and jobs.torus.all()
    assert np.array_equal(jobs.size, jobs.shape.prod(axis=1))
    assert offered_load(jobs.size, jobs.run_s, jobs.submit_s, 128) == pytest.approx(0.6)
    raw = prepare(table, WorkloadSpec(first_jobs=5000), MachineSpec.parse("flat:338"))
    assert np.allclose(np.sort(jobs.run_s), np.sort(raw.run_s * 1.5))
    assert raw.size.max() <= 338 and -(-raw.size.max() // 4) <= 85
    assert same(jobs, prepare(table, spec, bgl, seed=11))
    assert same(jobs, prepare(table, spec, bgl, seed=12)), "p_fat = p_torus = 1: no randomness"
    mixed = WorkloadSpec(first_jobs=5000, processors_per_unit=4, p_fat=0.5, p_torus=0.5)
    assert not same(prepare(table, mixed, bgl, 11), prepare(table, mixed, bgl, 12))


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in
               ("job_id", "submit_s", "run_s", "requested_s", "size", "shape", "torus"))


def test_prepare_rejects_empty_span(trace_excerpt):
    table = clean(read_swf(trace_excerpt("NASA-iPSC-1993-3.1-cln")))
    with pytest.raises(SpecError, match="holds no jobs"):
        prepare(table, WorkloadSpec(skip_jobs=10**6), MachineSpec.parse("flat:128"))
    with pytest.raises(SpecError, match="runtime_scale=0"):
        WorkloadSpec(runtime_scale=0)


def test_oversize_jobs_rejected_dropped_or_clamped(trace_excerpt):
    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln"))).slice(0, 2000)
    small = MachineSpec.parse("torus:2x2x4")
    with pytest.raises(SpecError, match=r"job \d+ needs \d+ units, machine torus:2x2x4 has 16 "
                                        r"\(\d+ such jobs\); expected workload transform"):
        prepare(table, WorkloadSpec(), small)
    dropped = prepare(table, WorkloadSpec(machine_fit="drop"), small)
    clamped = prepare(table, WorkloadSpec(machine_fit="clamp"), small)
    assert dropped.oversize_jobs == clamped.oversize_jobs > 0
    assert len(dropped) == 2000 - dropped.oversize_jobs and len(clamped) == 2000
    assert clamped.size.max() == 16 and dropped.size.max() <= 16


def test_shaped_jobs_keep_their_request(trace_excerpt):
    from simcore.simulate import simulate

    table = clean(read_swf(trace_excerpt("SDSC-SP2-1998-4.2-cln"))).slice(0, 300)
    bgl = MachineSpec.parse("bgl:8x4x4")
    jobs = prepare(table, WorkloadSpec(p_fat=1.0, p_torus=0.5), bgl, seed=4)
    assert (jobs.requested_units <= jobs.size).all() and (jobs.size >= 8).all()
    schedule = simulate(jobs, bgl, "fcfs").jobs
    assert schedule.column("requested_units").to_pylist() == jobs.requested_units.tolist()
    assert schedule.column("shape_a").to_numpy().min() >= 2
    assert schedule.column("torus").to_pylist() == jobs.torus.tolist()


def small_table(rows):
    """An SWF table of jobs (id, submit, run, processors), cleaned."""
    from simcore.jobs.swf import SWFHeader, from_columns

    rows = np.array(rows)
    columns = {"job_number": rows[:, 0], "submit_time": rows[:, 1], "run_time": rows[:, 2],
               "allocated_processors": rows[:, 3], "requested_time": rows[:, 2] * 2}
    return clean(from_columns(columns, SWFHeader(("; MaxProcs: 64",))))


def test_replication_copies_jobs_with_seeded_jitter():
    """Replication factor 3 of ids 7, 42, 130: copies are 1007, 2007, ... (10^3 is above
    every id), each arriving up to 60 s after its original, the same draws for the same
    seed, others for another; run times, requests and sizes are copied; the work multiple
    then scales every copy."""
    from simcore.base.draws import job_uniforms
    from simcore.workload.transforms import REPLICA_STREAM

    table = small_table([(7, 0, 100, 4), (42, 50, 10, 2), (130, 500, 30, 8)])
    flat = MachineSpec.parse("flat:16")
    spec = WorkloadSpec(replication=3, runtime_scale=2.0)
    jobs = prepare(table, spec, flat, seed=5)
    assert sorted(jobs.job_id.tolist()) == [7, 42, 130, 1007, 1042, 1130, 2007, 2042, 2130]
    by_id = dict(zip(jobs.job_id.tolist(), jobs.submit_s.tolist(), strict=True))
    copies = np.array([1007, 1042, 1130, 2007, 2042, 2130])
    delay = 60 * job_uniforms(5, REPLICA_STREAM, copies)
    original = np.array([0, 50, 500, 0, 50, 500])
    assert np.allclose([by_id[c] for c in copies.tolist()], original + delay)
    assert by_id[7] == 0 and by_id[42] == 50 and by_id[130] == 500
    size = dict(zip(jobs.job_id.tolist(), jobs.size.tolist(), strict=True))
    run = dict(zip(jobs.job_id.tolist(), jobs.run_s.tolist(), strict=True))
    assert (size[2042], run[2042], run[1130]) == (2, 20.0, 60.0)
    assert same(jobs, prepare(table, spec, flat, seed=5))
    assert not same(jobs, prepare(table, spec, flat, seed=6))
    assert spec.random() and not WorkloadSpec(replication=3, replication_jitter_s=0).random()
    still = prepare(table, WorkloadSpec(replication=2, replication_jitter_s=0), flat)
    assert sorted(still.submit_s.tolist()) == [0, 0, 50, 50, 500, 500]
    assert same(prepare(table, WorkloadSpec(), flat), prepare(table, WorkloadSpec(
        replication=1, replication_jitter_s=1000), flat, seed=9))
    with pytest.raises(SpecError, match="replication=0; expected an integer >= 1"):
        WorkloadSpec(replication=0)


def test_arrival_shaking_moves_each_arrival_within_bounds():
    """Input shaking by up to 30 s: each arrival moves by 30 (2u - 1) s, u drawn per job id
    from the seed (none below 0); run times and sizes stay; the same seed gives the same
    jobs, another seed others, and no shaking is the unshaken workload."""
    from simcore.base.draws import job_uniforms
    from simcore.workload.transforms import SHAKE_STREAM

    table = small_table([(7, 0, 100, 4), (42, 50, 10, 2), (130, 500, 30, 8)])
    flat = MachineSpec.parse("flat:16")
    spec = WorkloadSpec(arrival_shake_s=30)
    jobs = prepare(table, spec, flat, seed=5)
    ids = np.array([7, 42, 130])
    expected = np.maximum(np.array([0, 50, 500]) + 30 * (2 * job_uniforms(
        5, SHAKE_STREAM, ids) - 1), 0)
    by_id = dict(zip(jobs.job_id.tolist(), jobs.submit_s.tolist(), strict=True))
    assert np.allclose([by_id[i] for i in ids.tolist()], expected)
    assert np.all(np.diff(jobs.submit_s) >= 0), "still in arrival order"
    assert dict(zip(jobs.job_id.tolist(), jobs.run_s.tolist(), strict=True)) == {
        7: 100, 42: 10, 130: 30}
    assert spec.random() and not WorkloadSpec(arrival_shake_s=0).random()
    assert same(jobs, prepare(table, spec, flat, seed=5))
    assert not same(jobs, prepare(table, spec, flat, seed=6))
    assert same(prepare(table, WorkloadSpec(), flat), prepare(
        table, WorkloadSpec(arrival_shake_s=0), flat, seed=9))


def test_inserted_jobs_join_the_source_before_the_span():
    """10 jobs an hour over a source spanning 0..36,000 s insert 100 one-processor jobs of
    the given run time, ids above the source's, at the seeded uniform times; the span is
    then taken over the merged stream, so its first jobs include inserted ones."""
    from simcore.base.draws import job_uniforms
    from simcore.workload.transforms import INSERT_STREAM

    table = small_table([(7, 0, 100, 4), (42, 18_000, 10, 2), (130, 36_000, 30, 8)])
    flat = MachineSpec.parse("flat:16")
    jobs = prepare(table, WorkloadSpec(insert_per_h=10, insert_run_s=5), flat, seed=3)
    assert len(jobs) == 103
    added = jobs.job_id > 130
    assert sorted(jobs.job_id[added].tolist()) == list(range(131, 231))
    assert set(jobs.size[added].tolist()) == {1} and set(jobs.run_s[added].tolist()) == {5.0}
    expected = np.floor(job_uniforms(3, INSERT_STREAM, np.arange(131, 231)) * 36_001)
    assert sorted(jobs.submit_s[added].tolist()) == sorted(expected.tolist())
    assert np.all(np.diff(jobs.submit_s) >= 0)
    span = prepare(table, WorkloadSpec(insert_per_h=10, first_jobs=20), flat, seed=3)
    assert len(span) == 20 and 7 in span.job_id and 42 not in span.job_id
    assert not same(jobs, prepare(table, WorkloadSpec(insert_per_h=10, insert_run_s=5), flat,
                                  seed=4))
    assert WorkloadSpec(insert_per_h=10).random() and not WorkloadSpec().random()
