"""The Leung et al. (2002) analogues: the Table 1 stream and machine, their summaries and
figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from simcore.machines.curves.orderings import read_ordering_file
from simcore.report.plots import locality_vs_work_multiple, table1_makespans, write_figure
from simcore.tools import leung2002 as study
from simcore.workload import cplant_stream


def test_stream_is_built_as_the_paper_describes():
    jobs = study.table1_stream(seed=1)
    sizes = jobs.size.tolist()
    assert {s: sizes.count(s) for s in (2, 5, 25, 30)} == {2: 91, 5: 33, 25: 31, 30: 33}
    assert sizes[:4] == [30, 25, 30, 25] and sum(sizes[:4]) == 110  # fills 128 processors
    assert sizes[-1] in (2, 5), "the last job submitted is small"
    assert np.array_equal(jobs.submit_s, 60.0 * np.arange(188))
    base = 36.0 * jobs.size
    assert (np.abs(jobs.run_s / base - 1) <= 0.05).all() and jobs.run_s.std() > 0
    assert np.array_equal(jobs.requested_s, base * 1.05)
    assert np.array_equal(jobs.run_s, study.table1_stream(seed=1).run_s)
    assert not np.array_equal(jobs.run_s, study.table1_stream(seed=2).run_s)


def test_evenly_spreads_each_list():
    assert cplant_stream.evenly([1, 1], [0, 0, 0, 0]) == [0, 1, 0, 0, 1, 0]
    small = cplant_stream.stream_sizes()[4:]
    large_at = [i for i, s in enumerate(small) if s >= 25]
    assert max(np.diff(large_at)) <= 4 and len(large_at) == 60


def test_switch_hilbert_keeps_each_switch_together(tmp_path):
    """torus:4x8x4: index = slot + 4 column + 32 row. Every switch's four processors are
    consecutive, and consecutive switches are neighbours on the torus: the 8x8 curve
    restricted to four rows leaves them once, from column 0 to column 7, which the torus
    joins."""
    order = read_ordering_file(str(study.switch_hilbert(tmp_path / "c.txt")), 128)
    switches = order.reshape(32, 4) // 4
    assert (switches == switches[:, :1]).all()
    column, row = switches[:, 0] % 8, switches[:, 0] // 8
    assert sorted(switches[:, 0].tolist()) == list(range(32))
    step = np.abs(np.diff(column))
    assert (np.minimum(step, 8 - step) + np.abs(np.diff(row)) == 1).all()
    assert (step == 7).sum() == 1
    assert (order.reshape(32, 4) % 4 == np.arange(4)).all()


def test_the_papers_config_runs_table1_on_the_committed_switch_curve(tmp_path):
    """Experiment leung2002-table1 reads the curve from the repository: it must be the one
    `switch_hilbert` builds, on the machine the stream's model names, with the stream of
    `table1_stream` (the study and the sweep run one stream)."""
    from simcore.sweep.planning import load_plan
    from simcore.workload.sources import load_workload
    from simcore.workload.transforms import WorkloadSpec, prepare

    shards = [s for s in load_plan("config/papers.yaml") if s.experiment == "leung2002-table1"]
    assert len(shards) == 12 and {len(s.runs) for s in shards} == {10}
    curves = {s.machine_spec.ordering for s in shards} - {"row-major"}
    assert len(curves) == 1
    committed = Path(curves.pop()).read_text()
    assert committed == study.switch_hilbert(tmp_path / "c.txt").read_text()
    assert {str(s.machine_spec.head) for s in shards} == {cplant_stream.MACHINE}
    jobs = prepare(load_workload("cplant-stream:0.05", seed=3), WorkloadSpec(),
                   shards[0].machine_spec, 3)
    reference = study.table1_stream(3)
    for column in ("submit_s", "run_s", "requested_s", "size"):
        assert np.array_equal(getattr(jobs, column), getattr(reference, column)), column


def test_table1_without_dilation_is_one_schedule(tmp_path):
    """Only counts matter to the scheduler, so without dilation all six strategies give
    the same makespan; with it, each strategy's runs are stretched by where they land."""
    runs = study.table1([0.0, 1.0], [1, 2], tmp_path)
    assert runs.height == 2 * 6 * 2
    plain = runs.filter(pl.col("dilation") == 0.0)
    assert plain.group_by("seed").agg(pl.col("makespan_s").n_unique())["makespan_s"].max() == 1
    dilated = runs.filter(pl.col("dilation") == 1.0)
    assert dilated["makespan_s"].min() > plain["makespan_s"].min()
    summary = study.summarize_table1(runs)
    assert summary["strategy"].to_list()[:6] == list(study.STRATEGIES)
    assert summary["paper_makespan_s"].to_list()[0] == 5 * 3600 + 46 * 60 + 31
    text = study.markdown_table1(summary)
    assert "| Free List (no curve) |" in text and "curve helps: no" in text


def fake_summary(means):
    return pl.DataFrame({"dilation": [1.0] * 6, "strategy": list(study.STRATEGIES),
                         "makespan_mean_s": [float(m) for m in means]})


@pytest.mark.parametrize(("means", "expected"), [
    ([6, 5, 4, 3, 2, 1], [True, True, True, True]),
    ([6, 5, 4, 1, 2, 3], [True, True, True, False]),
    ([6, 5, 4, 4.5, 2, 1], [True, False, False, False]),
    ([5, 6, 4, 3, 2, 1], [True, False, False, False]),
    ([4, 5, 6, 3, 2, 1], [False, False, False, False]),
])
def test_paper_findings(means, expected):
    assert list(study.paper_order_holds(fake_summary(means), 1.0).values()) == expected


def test_hms_round_trip():
    assert study.hms(20791) == "5:46:31" and study.seconds("5:46:31") == 20791
    assert study.hms(59.6) == "0:01:00"


def test_figure1_rows_and_figures(tmp_path):
    rows = []
    for ordering in ("row-major", "hilbert"):
        for allocator in ("free-list", "best-fit"):
            for scale in (0.5, 1.0):
                for seed in (1, 2):
                    rows.append({
                        "experiment": "leung2002", "workload": "ross", "policy": "cplant",
                        "machine_spec": f"mesh:8x8x5 allocator={allocator} "
                                        f"ordering={ordering}",
                        "runtime_scale": scale, "replication": 1, "seed": seed,
                        "bcube_ratio_mean": 2.0 + seed, "span_ring_mean": 10.0 * scale,
                        "span_linear_mean": 1.0, "bbox_volume_mean": 1.0,
                        "components_mean": 1.0, "mean_hops_mean": 1.0, "utilization": 0.5})
    rows.append({**rows[0], "experiment": "other"})
    reduced = study.figure1_rows(pl.DataFrame(rows))
    assert reduced.height == 8 and reduced["runs"].to_list() == [2] * 8
    assert reduced["bcube_ratio_mean"].to_list() == [3.5] * 8
    assert set(zip(reduced["ordering"], reduced["allocator"], strict=True)) == {
        ("row-major", "free-list"), ("row-major", "best-fit"), ("hilbert", "free-list"),
        ("hilbert", "best-fit")}
    first = write_figure(lambda: locality_vs_work_multiple(reduced), tmp_path / "a", "f1")
    again = write_figure(lambda: locality_vs_work_multiple(reduced), tmp_path / "b", "f1")
    assert [p.name for p in first] == ["f1.png", "f1.svg"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    summary = study.summarize_table1(pl.DataFrame({
        "dilation": [0.0] * 12, "strategy": list(study.STRATEGIES) * 2, "seed": [1] * 6 + [2] * 6,
        "makespan_s": [100.0] * 6 + [110.0] * 6, "mean_hops": [1.0] * 12, "span": [1.0] * 12}))
    assert summary["makespan_std_s"].to_list() == [pytest.approx(np.sqrt(50))] * 6
    assert write_figure(lambda: table1_makespans(summary), tmp_path, "t1")[0].exists()
    assert write_figure(lambda: locality_vs_work_multiple(reduced.clear()), tmp_path, "x") == []


def test_command_line(tmp_path, capsys):
    from simcore.cli.main import main

    assert main(["leung2002", "table1", "--dilation", "0.5", "--seeds", "2", "--json",
                 "--out", str(tmp_path / "t1")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["strategy"] for r in rows] == list(study.STRATEGIES)
    assert {p.name for p in (tmp_path / "t1").iterdir()} == {
        "table1.md", "table1.csv", "table1.png", "table1.svg", "cplant-switch-hilbert.txt"}
    (tmp_path / "empty").mkdir()  # a store with no shard (a missing one is refused apart)
    assert main(["leung2002", "figure1", "--store", str(tmp_path / "empty"),
                 "--out", str(tmp_path / "f1")]) == 2
    assert "no runs of experiment leung2002" in capsys.readouterr().err
