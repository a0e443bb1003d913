"""A simulated schedule against a log's recorded starts, per job.

A job's recorded start is its submit time plus its recorded wait (SWF fields 2 and 3); its
start error is the simulated start minus the recorded one. `compare` reports, over a set
of jobs (`agreement`):

- `mean_wait_ratio`: the simulated mean wait over the recorded mean wait;
- `wait_rho`: Spearman's rho of the recorded and simulated waits, on average ranks (tied
  waits, such as the many waits of 0, share the mean of their ranks);
- `within_10_min`, `within_1_h`: the share of jobs whose start error is at most 600 s or
  3,600 s either way;
- `median_abs_error_s`: the median absolute start error.

A value that does not exist is NaN (null in JSON): a ratio over a recorded mean of 0, a
rho where either side's waits are all equal, anything over no jobs.

It reports them over all compared jobs, over each half of the log (`HALVES`), and by size
class (powers of two, `simcore.jobs.describe.size_classes`), month of submission, queue
(field 15) and user (field 12), -1 standing for the log's unknown queue or user.

Every job of the log is counted once, under the first of: removed by a cleaning rule (per
rule), unknown recorded wait (-1), not in the simulated schedule, compared.
"""

from __future__ import annotations

import math
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array, arrow_table, numpy_array
from simcore.base.errors import SpecError
from simcore.core.columns import FIDELITY_SETS, HALVES, Column, fidelity_name
from simcore.jobs.cleaning import cleaning_report
from simcore.jobs.describe import size_class_label, size_classes
from simcore.jobs.swf import MISSING, SWFHeader, header_of, job_size

#: Start errors within these many seconds count as agreeing (`within_10_min`, `within_1_h`).
WITHIN_S = {"within_10_min": 600.0, "within_1_h": 3600.0}
#: The files `simcore fidelity --out DIR` writes: the residuals and the report of one
#: trace, and the report of a configuration (`--config`, `simcore.report.fidelity`).
RESIDUALS_FILE, REPORT_FILE, REPORT_MD = "residuals.parquet", "fidelity.json", "fidelity.md"
#: The figures it draws there (`simcore.report.fidelity_figures`), each as <name>.png and .svg.
FIGURES = ("simulated-vs-recorded-wait", "wait-cdfs", "start-error-over-time")
#: The length of a month where the log's header gives no start date: a mean Gregorian month.
MONTH_S = 365.2425 * 86400 / 12
#: The per-job residuals (`Fidelity.residuals`), one row per job of the cleaned log.
RESIDUALS = (
    Column("job_id", int, None, "the job's number (SWF field 1)"),
    Column("submit_s", float, "s", "its submit time in the log (field 2)"),
    Column("size", int, "procs", "processors: allocated (field 5), else requested (field 8)"),
    Column("queue", int, None, "its queue (field 15; -1: unknown)"),
    Column("user", int, None, "its user (field 12; -1: unknown)"),
    Column("month", str, None, "its month of submission: YYYY-MM in the header's time "
           "zone, or +k, months of 30.44 days from submit time 0 without UnixStartTime"),
    Column("half", int, None, "1 or 2: in the first or the second half of the cleaned log "
           "by job count (queue order: submit time, then job number)"),
    Column("recorded_wait_s", float, "s", "the wait the log recorded (field 3); null where "
           "unknown (-1)"),
    Column("simulated_wait_s", float, "s", "the simulated wait; null for a job not "
           "simulated"),
    Column("start_error_s", float, "s", "simulated start - recorded start (submit + "
           "recorded wait); null where either is unknown"),
)


@dataclass(frozen=True)
class Fidelity:
    """What `compare` found: `report`, a JSON-ready mapping (counts, the metrics over all
    compared jobs, per half and per group), and `residuals`, one row per job of the
    cleaned log (job_id, submit_s, size, queue, user, month, half, recorded_wait_s,
    simulated_wait_s, start_error_s; the waits and the error null where unknown)."""

    report: dict[str, object]
    residuals: pa.Table


def compare(log: pa.Table, schedule: pa.Table, reference: pa.Table | None = None
            ) -> Fidelity:
    """Compare the simulated `schedule` (a run's per-job table: job_id, submit_s, start_s)
    with the recorded starts of `log`, an SWF table cleaned by `simcore.jobs.cleaning.clean`
    (whose counts it reports). The schedule may leave jobs of the log out (counted); a job
    it holds that the log does not is an error, and so is a recorded wait below 0 other
    than -1 (unknown). A simulated wait is the schedule's own
    (start_s - submit_s, so a run whose arrivals were moved keeps its waits); the start
    error is the simulated start against the recorded one. With `reference`, another
    schedule of the log, its starts and waits stand in for the recorded ones, over the
    same jobs (a job whose recorded wait is unknown, or that it lacks, counts as an
    unknown wait): one replay against another, the noise floor (`simcore.fidelity.noise`).

    The halves: the log's jobs after cleaning in queue order (submit time, then job id),
    the first n // 2 of them the first half and the rest the second. Halves of equal job
    counts, fixed by the log and its cleaning alone (the same for every policy simulated,
    whatever its starts), give a fit on the first half as many jobs to learn from as the
    second holds to score it on; halves of the submit span would put far fewer jobs in
    one half where the arrival rate changes over a log."""
    report = cleaning_report(log)
    if report is None:
        raise SpecError("fidelity: the log is not cleaned; expected a table from "
                        "simcore.jobs.cleaning.clean, whose removed jobs are counted")
    job_id, submit, half, recorded, known, simulated_wait, ran, error = _matched(
        log, schedule, reference)
    compared = known & ran
    month, months, month_origin = _months(submit, header_of(log))
    size = job_size(log)
    queue, user = numpy_array(log.column("queue")), numpy_array(log.column("user_id"))
    residuals = arrow_table({
        "job_id": job_id, "submit_s": submit, "size": size,
        "queue": queue, "user": user,
        "month": pa.array([months[k] for k in month], pa.string()), "half": half,
        "recorded_wait_s": arrow_array(np.where(known, recorded, np.nan), null=~known),
        "simulated_wait_s": arrow_array(simulated_wait, null=~ran),
        "start_error_s": arrow_array(error, null=~compared),
    })
    waits = (recorded[compared], simulated_wait[compared], error[compared])
    rules = report["rules"]
    counts = {
        "log_jobs": report["jobs_in"],
        "cleaning_removed": {rule: entry["removed"] for rule, entry in rules.items()},
        "unknown_wait": int(np.count_nonzero(~known)),
        "not_simulated": int(np.count_nonzero(known & ~ran)),
        "compared": int(np.count_nonzero(compared)),
    }
    groups = {
        "by_size": _grouped(size_classes(size[compared]), waits, size_class_label),
        "by_month": _grouped(month[compared], waits, months.__getitem__),
        "by_queue": _grouped(queue[compared], waits, str),
        "by_user": _grouped(user[compared], waits, str),
    }
    return Fidelity({"counts": counts, "all": _agreement(*waits),
                     **_halves(waits, half[compared]),
                     "month_origin": month_origin, **groups}, residuals)


def run_metrics(log: pa.Table, schedule: pa.Table) -> dict[str, float | int]:
    """`compare`'s metrics of the simulated `schedule` over every compared job and each
    half, as the run columns of `simcore.core.columns.fidelity_metrics` (NaN: undefined);
    neither the counts nor the groups, which only the command reports."""
    _, _, half, recorded, known, simulated_wait, ran, error = _matched(log, schedule)
    compared = known & ran
    waits = (recorded[compared], simulated_wait[compared], error[compared])
    sets = {"": _agreement(*waits), **_halves(waits, half[compared])}
    return {fidelity_name(metric, jobs): value for jobs in FIDELITY_SETS
            for metric, value in sets[jobs].items()}


def _matched(log: pa.Table, schedule: pa.Table, reference: pa.Table | None = None
             ) -> tuple[np.ndarray, ...]:
    """Per job of `log`: its number, submit time, half (1 or 2, `compare`), recorded wait
    (`reference`'s where given), whether that is known, simulated wait, whether it was
    simulated, start error (NaN unless both are known)."""
    job_id = numpy_array(log.column("job_number"))
    submit = numpy_array(log.column("submit_time"))
    half = halves(log)
    recorded = numpy_array(log.column("wait_time")).astype(np.float64)
    known = recorded != MISSING
    negative = np.flatnonzero(known & (recorded < 0))
    if negative.size:
        raise SpecError(f"fidelity: job {job_id[negative[0]]} of the log recorded a wait of "
                        f"{recorded[negative[0]]:g} s (field 3; {negative.size} such jobs); "
                        "expected 0 or more, or -1 for unknown")
    recorded_start = submit + recorded
    if reference is not None:
        recorded_start, recorded = _simulated(job_id, reference)
        known &= ~np.isnan(recorded_start)
    simulated_start, simulated_wait = _simulated(job_id, schedule)
    ran = ~np.isnan(simulated_start)
    error = np.where(known & ran, simulated_start - recorded_start, np.nan)
    return job_id, submit, half, recorded, known, simulated_wait, ran, error


def halves(log: pa.Table) -> np.ndarray:
    """Each job's half of the log, 1 or 2 (`compare`): the first n // 2 jobs in queue order
    (submit time, then job number) and the rest."""
    order = np.lexsort((numpy_array(log.column("job_number")),
                        numpy_array(log.column("submit_time"))))
    half = np.empty(len(order), dtype=np.int64)
    half[order] = np.where(np.arange(len(order)) < len(order) // 2, 1, 2)
    return half


def _halves(waits: tuple[np.ndarray, ...], half: np.ndarray) -> dict[str, dict]:
    """`_agreement` of the compared jobs of each of HALVES, `half` giving each one's."""
    return {name: _agreement(*(w[half == k] for w in waits))
            for k, name in enumerate(HALVES, start=1)}


def _simulated(job_id: np.ndarray, schedule: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Each log job's simulated start and wait, NaN for a job the schedule lacks."""
    ids = numpy_array(schedule.column("job_id"))
    position = np.argsort(job_id, kind="stable")
    found = np.searchsorted(job_id, ids, sorter=position).clip(max=len(job_id) - 1)
    where = position[found]
    missing = np.flatnonzero(job_id[where] != ids)
    if missing.size:
        raise SpecError(f"fidelity: the schedule's job {ids[missing[0]]} is not in the log "
                        f"({missing.size} such jobs); expected a schedule of the log's jobs")
    start = np.full(len(job_id), np.nan)
    wait = np.full(len(job_id), np.nan)
    start[where] = numpy_array(schedule.column("start_s"))
    wait[where] = start[where] - numpy_array(schedule.column("submit_s"))
    return start, wait


def _agreement(recorded: np.ndarray, simulated: np.ndarray, error: np.ndarray
               ) -> dict[str, float | int]:
    """The metrics of the module docstring over jobs of these recorded and simulated
    waits and start errors."""
    n = len(recorded)
    if n == 0:
        return {"jobs": 0, "mean_wait_ratio": math.nan, "wait_rho": math.nan,
                **dict.fromkeys(WITHIN_S, math.nan), "median_abs_error_s": math.nan}
    recorded_mean = float(recorded.mean())
    absolute = np.abs(error)
    return {
        "jobs": n,
        "mean_wait_ratio": float(simulated.mean()) / recorded_mean if recorded_mean > 0
        else math.nan,
        "wait_rho": _spearman(recorded, simulated),
        **{name: float(np.count_nonzero(absolute <= s)) / n for name, s in WITHIN_S.items()},
        "median_abs_error_s": float(np.median(absolute)),
    }


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson's correlation of the average ranks; NaN where either side
    is constant."""
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    spread = math.sqrt(float((ra * ra).sum()) * float((rb * rb).sum()))
    return float((ra * rb).sum()) / spread if spread > 0 else math.nan


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    _, first, count = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(first + (count + 1) / 2, count)
    return ranks


def _grouped(keys: np.ndarray, waits: tuple[np.ndarray, ...],
             label: Callable[[int], str]) -> dict[str, dict]:
    """`_agreement` of the jobs of each key, in key order, under `label(key)`."""
    return {label(key): _agreement(*(w[keys == key] for w in waits))
            for key in np.unique(keys)}


def _months(submit: np.ndarray, header: SWFHeader) -> tuple[np.ndarray, list[str], str]:
    """Each job's month of submission (an index into the labels, in time order), the
    months' labels and what they count from. With the header's UnixStartTime: calendar
    months (YYYY-MM) in its TimeZoneString (UTC where it names no zone this system knows);
    without: months of MONTH_S from submit time 0 (+0, +1, ...)."""
    start = header.get_int("UnixStartTime")
    if start is None or len(submit) == 0:
        month = np.floor(submit / MONTH_S).astype(np.int64)
        first = int(month.min()) if len(month) else 0
        last = int(month.max()) if len(month) else 0
        return (month - first, [f"{k:+d}" for k in range(first, last + 1)],
                f"months of {MONTH_S:.0f} s from submit time 0 (no UnixStartTime in the header)")
    name = header.get("TimeZoneString") or ""
    try:
        zone = zoneinfo.ZoneInfo(name) if name else UTC
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone, name = UTC, ""
    moment = start + submit
    first = datetime.fromtimestamp(float(moment.min()), zone)
    last = datetime.fromtimestamp(float(moment.max()), zone)
    months = [(y, m) for y in range(first.year, last.year + 1) for m in range(1, 13)
              if (first.year, first.month) <= (y, m) <= (last.year, last.month)]
    bounds = np.array([datetime(y, m, 1, tzinfo=zone).timestamp() for y, m in months])
    return (np.searchsorted(bounds, moment, side="right") - 1,
            [f"{y}-{m:02d}" for y, m in months],
            f"calendar months in {name or 'UTC'} from UnixStartTime {start}")
