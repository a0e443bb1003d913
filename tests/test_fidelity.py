"""Replay fidelity (`simcore.fidelity.compare`, `simcore fidelity`): every metric on a
hand-made log whose FCFS schedule is worked out by hand, the halves, the counts, the
figures (`simcore.report.fidelity_figures`), and the command on that log and on a trace
excerpt."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.arrays import arrow_table, numpy_array
from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.cli.main import main
from simcore.core.columns import AGREEMENT
from simcore.fidelity.compare import FIGURES, MONTH_S, RESIDUALS, compare
from simcore.fidelity.noise import PERTURBATIONS, SHAKE_S, noise_floor, ties_reversed
from simcore.jobs.cleaning import clean
from simcore.jobs.swf import parse_swf
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.report.fidelity_figures import (
    Compared,
    error_over_time,
    simulated_vs_recorded,
    wait_cdfs,
    write_fidelity_figures,
)
from simcore.simulate import simulate
from simcore.workload.spec import WorkloadSpec
from simcore.workload.transforms import prepare

FEB = 31 * 86400  # 2000-02-01 00:00 UTC, from UnixStartTime 946684800 (2000-01-01)
#: (job, submit, wait, run, processors, user, queue). On flat:4 under FCFS (queue order:
#: submit, then job id): 1 runs 0-100 on all 4; 2 and 3 start at 100; 4 is removed by
#: the cleaning (run -1); 3's wait is unknown (-1); 5 runs from Jan 31 23:00 to 1 min 40 s
#: past midnight on one processor, so 6 (all 4) starts then, 100 s after its submit; 7 and
#: 8 (one each) start when they arrive. Two queues, two users, two months, ties of submit
#: times (1 and 2, 7 and 8), zero waits recorded and simulated.
JOBS = (
    (1, 0, 0, 100, 4, 1, 1),
    (2, 0, 50, 100, 2, 2, 1),
    (3, 10, -1, 50, 2, 1, 2),
    (4, 20, 5, -1, 1, 2, 2),
    (5, FEB - 3600, 0, 3700, 1, 2, 2),
    (6, FEB, 1000, 100, 4, 1, 2),
    (7, FEB + 600, 4000, 10, 1, 2, 1),
    (8, FEB + 600, 0, 10, 1, 1, 1),
)
#: The simulated waits of the compared jobs 1, 2, 5, 6, 7, 8 (3's is 90, 4 is not run).
SIMULATED = {1: 0, 2: 100, 5: 0, 6: 100, 7: 0, 8: 0}
RECORDED = {1: 0, 2: 50, 5: 0, 6: 1000, 7: 4000, 8: 0}


def swf_text(jobs, header: str = "; UnixStartTime: 946684800\n; TimeZoneString: UTC\n"
             "; MaxProcs: 4\n") -> str:
    lines = [f"{j} {s} {w} {r} {p} -1 -1 {p} {max(r, 1)} -1 1 {u} -1 -1 {q} -1 -1 -1"
             for j, s, w, r, p, u, q in jobs]
    return header + "\n".join(lines) + "\n"


def log(text: str | None = None) -> pa.Table:
    return clean(parse_swf((text or swf_text(JOBS)).encode(), "hand.swf"))


@pytest.fixture(scope="module")
def schedule() -> pa.Table:
    return simulate(log(), "flat:4", "fcfs").jobs


def agreement(ids, ratio, rho, within_10_min, within_1_h, median):
    return {"jobs": len(ids), "mean_wait_ratio": ratio, "wait_rho": rho,
            "within_10_min": within_10_min, "within_1_h": within_1_h,
            "median_abs_error_s": median}


def pearson(a, b) -> float:
    """Spearman's rho of waits whose average ranks are worked out by hand below."""
    return float(np.corrcoef(a, b)[0, 1])


def close(found: dict, expected: dict) -> bool:
    return found.keys() == expected.keys() and all(
        (math.isnan(v) and math.isnan(found[k])) if isinstance(v, float) and math.isnan(v)
        else found[k] == pytest.approx(v, rel=1e-12) for k, v in expected.items())


def test_the_hand_made_schedule_is_the_one_worked_out(schedule):
    waits = dict(zip(numpy_array(schedule.column("job_id")).tolist(),
                     numpy_array(schedule.column("wait_s")).tolist(), strict=True))
    assert waits == {**SIMULATED, 3: 90}


def test_every_job_is_counted_once(schedule):
    counts = compare(log(), schedule).report["counts"]
    assert counts == {"log_jobs": 8, "cleaning_removed": {
        "nonpositive_runtime": 1, "nonpositive_size": 0, "negative_submit": 0, "oversize": 0},
        "unknown_wait": 1, "not_simulated": 0, "compared": 6}


def test_every_metric_over_all_jobs(schedule):
    # recorded waits 0 50 0 1000 4000 0, simulated 0 100 0 100 0 0 (jobs 1 2 5 6 7 8);
    # start errors 0 +50 0 -900 -4000 0. Ratio: 200 / 5050. Within 600 s: four of six;
    # within 3600 s: five. Median of |error| 0 0 0 50 900 4000: 25. Average ranks:
    # recorded (three 0s share 2) 2 4 2 5 6 2; simulated (four 0s share 2.5, two 100s 5.5)
    # 2.5 5.5 2.5 5.5 2.5 2.5.
    found = compare(log(), schedule).report["all"]
    assert list(found) == [c.name for c in AGREEMENT]  # as docs/outputs.md has them
    assert close(found, agreement(RECORDED, 200 / 5050, pearson(
        [2, 4, 2, 5, 6, 2], [2.5, 5.5, 2.5, 5.5, 2.5, 2.5]), 4 / 6, 5 / 6, 25.0))


def test_the_halves_split_the_cleaned_log_by_job_count(schedule):
    # Cleaned, in queue order: 1 2 3 5 6 7 8; the first 7 // 2 = 3 are the first half,
    # which holds jobs of January only (of two compared), the second half the rest, 5 of
    # January among them: halves are not months.
    report = compare(log(), schedule).report
    # first: recorded 0 50, simulated 0 100, errors 0 50
    assert close(report["first_half"], agreement([1, 2], 2.0, 1.0, 1.0, 1.0, 25.0))
    # second (5 6 7 8): recorded 0 1000 4000 0 (ranks 1.5 3 4 1.5), simulated 0 100 0 0
    # (ranks 2 4 2 2), errors 0 -900 -4000 0 (median of 0 0 900 4000: 450)
    assert close(report["second_half"], agreement([5, 6, 7, 8], 100 / 5000, pearson(
        [1.5, 3, 4, 1.5], [2, 4, 2, 2]), 2 / 4, 3 / 4, 450.0))
    half = compare(log(), schedule).residuals.column("half").to_pylist()
    assert half == [1, 1, 1, 2, 2, 2, 2]  # jobs 1 2 3 5 6 7 8, in file order


def test_every_metric_by_month_queue_user_and_size(schedule):
    report = compare(log(), schedule).report
    assert report["month_origin"] == "calendar months in UTC from UnixStartTime 946684800"
    assert report["by_month"].keys() == {"2000-01", "2000-02"}
    # January (1 2 5): recorded 0 50 0, simulated 0 100 0, both ranked 1.5 3 1.5
    assert close(report["by_month"]["2000-01"], agreement([1, 2, 5], 2.0, 1.0, 1, 1, 0.0))
    # February (6 7 8): recorded 1000 4000 0 (ranks 2 3 1), simulated 100 0 0 (3 1.5 1.5)
    assert close(report["by_month"]["2000-02"], agreement(
        [6, 7, 8], 0.02, pearson([2, 3, 1], [3, 1.5, 1.5]), 1 / 3, 2 / 3, 900.0))
    # queue 1 (1 2 7 8): recorded 0 50 4000 0 (ranks 1.5 3 4 1.5), simulated 0 100 0 0
    # (2 4 2 2), errors 0 50 -4000 0; queue 2 (5 6): recorded 0 1000, simulated 0 100
    assert close(report["by_queue"]["1"], agreement(
        [1, 2, 7, 8], 100 / 4050, pearson([1.5, 3, 4, 1.5], [2, 4, 2, 2]), 3 / 4, 3 / 4,
        25.0))
    assert close(report["by_queue"]["2"], agreement([5, 6], 0.1, 1.0, 0.5, 1.0, 450.0))
    # user 1 (1 6 8): recorded 0 1000 0, simulated 0 100 0; user 2 (2 5 7): recorded
    # 50 0 4000 (ranks 2 1 3), simulated 100 0 0 (3 1.5 1.5), errors 50 0 -4000
    assert close(report["by_user"]["1"], agreement([1, 6, 8], 0.1, 1.0, 2 / 3, 1.0, 0.0))
    assert close(report["by_user"]["2"], agreement(
        [2, 5, 7], 100 / 4050, pearson([2, 1, 3], [3, 1.5, 1.5]), 2 / 3, 2 / 3, 50.0))
    # sizes 1 (5 7 8: simulated waits all 0, so no rho), 2 (job 2 alone), 3-4 (1 6)
    assert list(report["by_size"]) == ["1", "2", "3-4"]
    assert close(report["by_size"]["1"], agreement([5, 7, 8], 0.0, math.nan, 2 / 3, 2 / 3,
                                                   0.0))
    assert close(report["by_size"]["2"], agreement([2], 2.0, math.nan, 1.0, 1.0, 50.0))
    assert close(report["by_size"]["3-4"], agreement([1, 6], 0.1, 1.0, 0.5, 1.0, 450.0))


def test_the_residuals_hold_every_job_of_the_cleaned_log(schedule):
    residuals = compare(log(), schedule).residuals
    assert residuals.column_names == [c.name for c in RESIDUALS]  # as docs/outputs.md has
    rows = {r["job_id"]: r for r in residuals.to_pylist()}
    assert list(rows) == [1, 2, 3, 5, 6, 7, 8]
    assert rows[6] == {"job_id": 6, "submit_s": FEB, "size": 4, "queue": 2, "user": 1,
                       "month": "2000-02", "half": 2, "recorded_wait_s": 1000.0,
                       "simulated_wait_s": 100.0, "start_error_s": -900.0}
    assert (rows[3]["recorded_wait_s"], rows[3]["simulated_wait_s"],
            rows[3]["start_error_s"]) == (None, 90.0, None)


def test_a_job_the_schedule_lacks_is_counted_and_an_unknown_one_refused(schedule):
    ids = numpy_array(schedule.column("job_id"))
    report = compare(log(), schedule.filter(pa.array(ids != 7))).report
    assert (report["counts"]["not_simulated"], report["counts"]["compared"]) == (1, 5)
    assert report["all"]["jobs"] == 5
    stranger = schedule.set_column(0, "job_id", pa.array(np.where(ids == 7, 99, ids)))
    with pytest.raises(SpecError, match="schedule's job 99 is not in the log"):
        compare(log(), stranger)
    with pytest.raises(SpecError, match="not cleaned"):
        compare(parse_swf(swf_text(JOBS).encode()), schedule)


def test_a_negative_recorded_wait_other_than_unknown_is_refused(schedule):
    garbled = log(swf_text([(j, s, -5 if j in (2, 6) else w, *rest)
                            for j, s, w, *rest in JOBS]))
    with pytest.raises(SpecError, match=r"^fidelity: job 2 of the log recorded a wait of -5 s "
                       r"\(field 3; 2 such jobs\); expected 0 or more, or -1 for unknown$"):
        compare(garbled, schedule)


def test_months_follow_the_header_zone_or_count_from_submit_time_0(schedule):
    pacific = swf_text(JOBS, "; UnixStartTime: 946684800\n; TimeZoneString: US/Pacific\n")
    # midnight UTC on Feb 1 and the 10 minutes after are still January 31 in California
    assert set(compare(log(pacific), schedule).residuals.column("month").to_pylist()) == {
        "1999-12", "2000-01"}  # job 1 at midnight UTC is 4 pm on Dec 31 there
    months = compare(log(swf_text(JOBS, "")), schedule)
    assert months.residuals.column("month").to_pylist() == [
        "+0", "+0", "+0", "+1", "+1", "+1", "+1"]  # 5 arrives after MONTH_S
    assert FEB - 3600 > MONTH_S and "no UnixStartTime" in months.report["month_origin"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**5)), min_size=1,
                max_size=30))
def test_a_schedule_equal_to_the_recorded_one_agrees_entirely(jobs):
    table = log(swf_text([(i + 1, s, w, 10, 1, 1, 1) for i, (s, w) in enumerate(jobs)], ""))
    submit = numpy_array(table.column("submit_time"))
    same = arrow_table({"job_id": numpy_array(table.column("job_number")),
                        "submit_s": submit,
                        "start_s": submit + numpy_array(table.column("wait_time"))})
    found = compare(table, same).report["all"]
    waits = [w for _, w in jobs]
    assert found["within_10_min"] == found["within_1_h"] == 1.0
    assert found["median_abs_error_s"] == 0.0
    if sum(waits):
        assert found["mean_wait_ratio"] == 1.0
    else:
        assert math.isnan(found["mean_wait_ratio"])
    if len(set(waits)) > 1:
        assert found["wait_rho"] == pytest.approx(1.0, rel=1e-12)
    else:
        assert math.isnan(found["wait_rho"])


def test_ties_reversed_queues_equal_submit_times_the_other_way():
    jobs = prepare(log(), WorkloadSpec(), MachineSpec.parse("flat:4"))
    relabelled, job_number = ties_reversed(jobs)
    assert job_number.tolist() == [2, 1, 3, 5, 6, 8, 7]  # ties at 0 and at FEB + 600
    assert relabelled.job_id.tolist() == list(range(7))
    assert relabelled.run_s.tolist() == [100, 100, 50, 3700, 100, 10, 10]
    assert relabelled.size.tolist() == [2, 4, 2, 1, 4, 1, 1]


def floor_of(seed: int = 0) -> dict:
    machine, policy = MachineSpec.parse("flat:4"), PolicySpec.from_params("fcfs")
    jobs = prepare(log(), WorkloadSpec(), machine)
    return noise_floor(log(), jobs, machine, policy, simulate(jobs, machine, policy).jobs, seed)


def test_the_noise_floor_of_reversed_ties_is_worked_out_by_hand():
    # Reversed, job 2 (2 processors) runs 0-100 first, so 1 (all 4) starts at 100 and 3
    # (behind it) at 200; the rest start as in the replay (7 and 8 both start on arrival).
    # Over the jobs compared with the log (3's recorded wait is unknown), 1 2 5 6 7 8, the
    # waits: replay 0 100 0 100 0 0, reversed 100 0 0 100 0 0; start errors +100 -100 and 0
    # four times. Average ranks: replay 2.5 5.5 2.5 5.5 2.5 2.5, reversed 5.5 2.5 2.5 5.5
    # 2.5 2.5: centred -1 2 -1 2 -1 -1 and 2 -1 -1 2 -1 -1, so rho = 3 / 12.
    floor = floor_of()
    assert list(floor) == list(PERTURBATIONS)
    reversed_ties = floor["ties_reversed"]
    assert close(reversed_ties["all"], agreement(range(6), 1.0, 0.25, 1.0, 1.0, 0.0))
    # first half (1 2): replay 0 100, reversed 100 0
    assert close(reversed_ties["first_half"], agreement(range(2), 1.0, -1.0, 1.0, 1.0,
                                                        100.0))
    assert close(reversed_ties["second_half"], agreement(range(4), 1.0, 1.0, 1.0, 1.0, 0.0))


def test_the_noise_floor_of_shaken_arrivals_moves_starts_by_the_shake_alone():
    # On this log every start is an arrival or the end of a job that started on arrival:
    # a shake of at most 1 s moves each start and each arrival by at most 1 s (7 and 8 may
    # swap places in the queue: both start on arrival), so each wait by at most 2 s, and
    # the mean of the replay's waits over the jobs compared (not 3) is 200 / 6 s.
    floor = floor_of(seed=0)
    shaken = floor["arrivals_shaken"]["all"]
    assert shaken["jobs"] == 6 and shaken["within_10_min"] == 1.0
    assert 0 < shaken["median_abs_error_s"] <= SHAKE_S
    assert shaken["mean_wait_ratio"] == pytest.approx(1.0, abs=2 * SHAKE_S / (200 / 6))
    assert floor_of(seed=0) == floor
    other = floor_of(seed=1)
    assert other["arrivals_shaken"] != floor["arrivals_shaken"]
    assert other["ties_reversed"] == floor["ties_reversed"]  # draws nothing


def test_the_command_prints_writes_and_refuses(tmp_path, capsys, schedule):
    trace = tmp_path / "hand.swf"
    trace.write_text(swf_text(JOBS))
    out = tmp_path / "out"
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "fcfs",
                 "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json_text(compare(log(), schedule).report))
    assert {k: printed[k] for k in expected} == expected
    assert printed["policy"].startswith("fcfs") and printed["machine"] == "flat:4"
    assert printed["noise_floor"] == json.loads(json_text(floor_of(seed=0)))
    assert json.loads((out / "fidelity.json").read_text()) == printed
    residuals = pq.read_table(out / "residuals.parquet")
    assert residuals.equals(compare(log(), schedule).residuals)
    again = tmp_path / "again"  # drawn again from the residuals alone: the same bytes
    again.mkdir()
    drawn = write_fidelity_figures(residuals, again, "hand.swf", "flat:4", printed["policy"])
    assert [p.name for p in drawn] == [f"{n}.{e}" for n in FIGURES for e in ("png", "svg")]
    for path in drawn:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "fcfs"]) == 0
    text = capsys.readouterr().out
    assert "8 jobs in the log; cleaning removed 1 (nonpositive_runtime 1); unknown wait 1;" \
        " not simulated 0; compared 6" in text
    rows = {" ".join(line.split()[:2]): line.split()[2:] for line in text.splitlines()}
    # rho of the second half: Pearson of ranks 1.5 3 4 1.5 and 2 4 2 2, 1 / sqrt(13.5)
    assert rows["second half"] == ["4", "0.02", "0.27", "50.0%", "75.0%", "450", "s"]
    assert rows["size 1"] == ["3", "0.00", "-", "66.7%", "66.7%", "0", "s"]  # no rho
    assert "queue 2" in text and "month 2000-02" in text and "users: 2" in text
    assert [line.split() for line in text.splitlines() if "ties reversed, all" in line] == [
        ["ties", "reversed,", "all", "6", "1.00", "0.25", "100.0%", "100.0%", "0", "s"]]
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "fcfs",
                 "--seed", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["noise_floor"] == json.loads(
        json_text(floor_of(seed=2)))
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "fcfs",
                 "--seed", "x"]) == 2
    assert "--seed" in capsys.readouterr().err
    assert main(["fidelity", str(trace), "--machine", "flat:2", "--scheduler", "fcfs",
                 "--out", str(trace)]) == 2
    assert capsys.readouterr().err == (f"simcore: error: --out {trace}: is a file; expected "
                                       "a directory\n")
    assert main(["fidelity", str(trace), "--machine", "flat:2", "--scheduler", "fcfs"]) == 2
    assert capsys.readouterr().err == (
        "simcore: error: --machine flat:2: job 1 needs 4 processors, the machine has 2 (2 "
        "such jobs); expected a machine of at least 4 units, or --cleaning '{\"oversize\": "
        "\"drop\", \"max_procs\": 2}'\n")
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "gang"]) == 2
    assert capsys.readouterr().err == (
        "simcore: error: --scheduler gang: time-shares the machine, and its jobs need a BSP "
        "model that no log records; expected a space-sharing scheduler\n")


def test_the_command_on_a_trace_excerpt_counts_every_job(trace_excerpt, capsys):
    assert main(["fidelity", str(trace_excerpt("CTC-SP2-1996-3.1-cln")), "--machine",
                 "flat:338", "--scheduler", "backfill", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    counts = report["counts"]
    assert counts["log_jobs"] == (sum(counts["cleaning_removed"].values())
                                  + counts["unknown_wait"] + counts["not_simulated"]
                                  + counts["compared"])
    assert report["first_half"]["jobs"] + report["second_half"]["jobs"] == counts["compared"]
    for group in ("by_size", "by_month", "by_queue", "by_user"):
        assert sum(v["jobs"] for v in report[group].values()) == counts["compared"]
        for values in (report["all"], *report[group].values()):
            assert 0 <= values["within_10_min"] <= values["within_1_h"] <= 1
            assert values["wait_rho"] is None or -1 <= values["wait_rho"] <= 1
            assert values["median_abs_error_s"] >= 0


def texts(fig) -> list[str]:
    return [fig.get_suptitle(), *(t.get_text() for ax in fig.axes for t in ax.texts)]


def test_the_figures_draw_the_compared_jobs_and_say_how_many(schedule):
    compared = Compared(compare(log(), schedule).residuals)
    count = "6 jobs compared; 1 of the cleaned log left out (unknown recorded wait or not " \
        "simulated)"
    hexagons = simulated_vs_recorded(compared, "hand.swf on flat:4, fcfs")
    assert " ".join(hexagons.get_suptitle().split()).endswith(  # lines wrapped to fit
        "hand.swf on flat:4, fcfs " + count)
    assert hexagons.axes[0].collections[0].get_array().sum() == 6
    cdfs = wait_cdfs(compared, "")
    at_zero = {line.get_label().split()[0]: line.get_ydata()[0]
               for line in cdfs.axes[0].get_lines()}
    assert at_zero == {"recorded": 3 / 6, "simulated": 4 / 6}  # waits of 0 at x = 1
    per_bin = error_over_time(compared, "").axes[1]
    assert per_bin.get_ylabel() == "jobs per day"  # the log spans 31 days
    assert sum(per_bin.patches[0].get_data().values) == 6
    assert [line.get_xdata()[0] for line in per_bin.get_lines()] == [(FEB - 3600) / 86400]
    with pytest.raises(SpecError, match=r"^residuals: no column half \(1 lacking\); "
                       "expected the columns of simcore.fidelity.compare.RESIDUALS$"):
        Compared(compare(log(), schedule).residuals.drop_columns(["half"]))


def test_the_figures_of_one_job_and_of_none(tmp_path, capsys):
    one = compare(log(swf_text([(1, 0, 0, 10, 1, 1, 1)])),
                  simulate(log(swf_text([(1, 0, 0, 10, 1, 1, 1)])), "flat:4", "fcfs").jobs)
    for draw in (simulated_vs_recorded, wait_cdfs, error_over_time):
        assert draw(Compared(one.residuals), "").get_suptitle().endswith("\n1 job compared")
    trace = tmp_path / "unknown.swf"
    trace.write_text(swf_text([(1, 0, -1, 10, 1, 1, 1), (2, 5, -1, 10, 1, 1, 1)]))
    out = tmp_path / "out"
    assert main(["fidelity", str(trace), "--machine", "flat:4", "--scheduler", "fcfs",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.endswith(
        "  residuals.parquet, fidelity.json and the figures simulated-vs-recorded-wait, "
        f"wait-cdfs, start-error-over-time (.png, .svg) written to {out}\n")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["fidelity.json", "residuals.parquet",
         *(f"{n}.{e}" for n in FIGURES for e in ("png", "svg"))])
    none = Compared(pq.read_table(out / "residuals.parquet"))
    for draw in (simulated_vs_recorded, wait_cdfs, error_over_time):
        fig = draw(none, "")
        assert texts(fig)[-1] == ("no job compared: all 2 jobs of the cleaned log have an "
                                  "unknown recorded wait or were not simulated")
        assert not any(ax.get_visible() and ax.axison for ax in fig.axes)
