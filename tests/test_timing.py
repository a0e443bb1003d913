"""What a sweep cost, from the files its jobs leave: the per-experiment report and the
time and memory a shard asks of Slurm."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from simcore.base import patterns
from simcore.sweep.experiments import plan
from simcore.sweep.timing import PHASES, format_report, shard_request, timing_report
from tests.conftest import ROOT

CONFIG = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())
BENCH_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def measure(root: Path, shard, wall_s: float, rss_mb: float, **timing) -> None:
    """Write what Snakemake's benchmark and the shard's timing file would hold."""
    job = patterns.SHARD_JOB.format(dataset=shard.dataset, **shard.names)
    bench = root / patterns.BENCHMARK.format(rule="simulate_shard", job=job)
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(BENCH_HEADER + f"{wall_s}\t0:00:10\t{rss_mb}\t1\t1\t1\t0\t0\t50\t9\n")
    own = root / patterns.SHARD_TIMING.format(dataset=shard.dataset, **shard.names)
    own.write_text(json.dumps(timing))


def phases(*seconds: float) -> dict[str, float]:
    return dict(zip(PHASES, seconds, strict=True))


def test_report_per_experiment_and_what_was_not_measured(tmp_path):
    shards = plan(CONFIG)
    small = [s for s in shards if s.experiment == "small"]
    measure(tmp_path, small[0], 10.0, 300, simulated=4, batches_s=6.5, workers=2,
            **phases(0.5, 0.5, 0.0, 2.0, 0.5, 2.0))
    measure(tmp_path, small[1], 5.0, 300, simulated=2, batches_s=5.0, workers=1,
            **phases(0.0, 0.5, 1.0, 2.0, 0.5, 1.0))
    other = tmp_path / patterns.BENCHMARK.format(rule="tables", job="torus-sweep-test")
    other.parent.mkdir(parents=True)
    other.write_text(BENCH_HEADER + "2.5\t0:00:02\t100\t1\t1\t1\t0\t0\t50\t2\n")
    report = timing_report(shards, tmp_path)
    rows = {row["experiment"]: row for row in report["experiments"]}
    assert rows["small"]["measured"] == 2 and rows["small"]["shards"] == len(small)
    assert rows["small"]["simulated"] == 6 and rows["small"]["wall_s"] == 15.0
    assert rows["small"]["in_simulate_s"] == 4.0 and rows["small"]["store_s"] == 3.0
    # 10.5 s in the phases of 10 x 2 + 5 x 1 core-seconds held, 4 of them simulating
    assert abs(rows["small"]["other_share"] - (1 - 10.5 / 25)) < 1e-12
    assert rows["small"]["per_simulate"] == 25 / 4
    assert rows["shapes"]["measured"] == 0 and rows["shapes"]["other_share"] is None
    assert report["rules"] == {"tables": {"jobs": 1, "wall_s": 2.5}}
    header, small_row, shapes_row, *_ = format_report(report).splitlines()
    assert header.split()[-8:] == ["simulate", "s", "fidelity", "s", "store", "s", "other",
                                   "core/sim"]
    assert small_row.split()[-10:] == ["15.0", "25.0", "0.5", "1.0", "1.0", "4.0", "1.0",
                                       "3.0", "58%", "6.2x"]
    assert "not measured yet" in shapes_row


def test_nothing_measured_says_so(tmp_path):
    text = format_report(timing_report(plan(CONFIG), tmp_path))
    assert text.count("not measured yet") == 3  # both experiments and the other rules


def test_a_shard_asks_for_what_it_measured(tmp_path):
    shard = plan(CONFIG)[0]  # 4 runs
    unmeasured = shard_request(tmp_path, shard, threads=2)
    assert unmeasured == {"runtime": 60, "mem_mb": 250 + 750 * 3}
    measure(tmp_path, shard, 30.0, 900.0, simulated=2, batches_s=120.0, workers=2,
            **phases(1.0, 1.0, 0.5, 100.0, 1.0, 10.0))
    # 60 s per run x 4 runs over 2 workers + 60 s start, doubled: 6 min; 300 MB per
    # process measured over 3 processes, doubled, for 2 workers and the shard: 1800 MB
    assert shard_request(tmp_path, shard, threads=2) == {"runtime": 6, "mem_mb": 1800}
    assert shard_request(tmp_path, shard, threads=2, attempt=2)["runtime"] == 12


def test_columns_stay_aligned_under_a_long_experiment_name(tmp_path, capsys):
    """`simcore plan` and `simcore plan --timing`: every number ends under its header."""
    from simcore.cli.main import main

    config = {**CONFIG, "experiments": {**CONFIG["experiments"]}}
    config["experiments"]["an-experiment-named-at-length-for-a-study"] = (
        config["experiments"].pop("small"))
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(config))
    for timing in ([], ["--timing", "--benchmarks-root", str(tmp_path)]):
        assert main(["plan", "--configfile", str(tmp_path / "long.yaml"), "--results",
                     str(tmp_path), *timing]) == 0
        lines = capsys.readouterr().out.splitlines()
        header = next(line for line in lines if "experiment" in line and "shards" in line)
        rows = [line for line in lines if line.lstrip().startswith(("an-experiment", "shapes"))]
        assert len(rows) == 2
        for row in rows:
            assert row[header.index("shards") + len("shards") - 1] != " "
            assert row[header.index("shards") + len("shards")] == " "


def test_a_timing_file_without_phases_still_gives_requests_and_batches(tmp_path):
    """A file written before phases were measured: its `simulation_s` (the seconds of its
    batches) still sizes requests; the report shows its phases as unknown."""
    shard = plan(CONFIG)[0]
    measure(tmp_path, shard, 30.0, 900.0, simulated=2, simulation_s=120.0, workers=2)
    assert shard_request(tmp_path, shard, threads=2) == {"runtime": 6, "mem_mb": 1800}
    row = timing_report([shard], tmp_path)["experiments"][0]
    assert row["measured"] == 1 and row["other_share"] is None
    assert all(row[name] is None for name in PHASES)
    assert format_report({"experiments": [row], "rules": {}}).splitlines()[1].split()[-8:] == (
        ["-"] * 8)


def test_a_negative_phase_is_no_measurement(tmp_path):
    shard = plan(CONFIG)[0]
    measure(tmp_path, shard, 30.0, 900.0, simulated=2, batches_s=12.0, workers=2,
            **phases(1.0, -1.0, 0.5, 10.0, 1.0, 1.0))
    assert timing_report([shard], tmp_path)["experiments"][0]["measured"] == 0
