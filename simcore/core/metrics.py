"""Per-job and per-run metrics (Krevat 2003, section 4.2).

Per job: wait = start - submit, response = end - submit, bounded slowdown =
max(response, tau) / max(run, tau) with tau = 10 s.

Per run, over T = max(end) - min(submit) and N machine units:
- utilization (capacity utilized, eq. 4.1) = sum(s_j * run_j) / (T N), s_j the requested
  size: units added by rounding a size up or growing a job count as lost, not utilized
  (on wired machines a job requests its shape, so s_j is the shape's volume). A job with a
  BSP model (`simcore.jobs.bsp`) counts the processor time its processes compute or
  synchronise in an isolated run instead of s_j * run_j: their waits for the slowest
  process (load imbalance) are lost capacity, which time-sharing may recover;
- accepted load = sum(s_j * run_j) / (T N), the work done in the units of the offered
  load (equal to the utilization for jobs without a BSP model);
- unused capacity (eq. 4.2) = integral of max(0, f(t) - q(t)) dt / (T N), f free units and
  q units requested by waiting jobs (integrated by the engine);
- lost capacity (eq. 4.3) = 1 - utilized - unused - failed.

On machines that fail (`simcore.core.failures`), failed capacity = integral of the units out of
service dt / (T N); units out of service are not free (f excludes them); utilized counts
the work of every run, including runs a failure cut short (requested units x the time they
ran), and goodput only the work of the jobs that completed. Without failures, failed = 0
and goodput = utilized.

With a warm-up (`WorkloadSpec.warmup_jobs` = k), the job statistics (wait, response,
bounded slowdown) cover the measured jobs k+1..n only. Chu's statistics (1995) are over
the measurement window [arrival of job k+1, last arrival], while jobs keep arriving:
- busy fraction (his utilization, Def. 3.2 averaged over time) = integral of the units
  held by running jobs / (N x window), units added by rounding included;
- mean queue length = integral of the number of waiting jobs / window;
- mean jobs in system = integral of the number of jobs waiting or running / window;
- mean scanned queue = the jobs in the waiting queue at each invocation of the scheduler
  (every arrival and every departure in the window; an arriving job and the jobs this
  invocation starts included), averaged over invocations: what a scan of the whole queue
  (Scan All) walks each time;
and the mean and standard deviation of response times, also per quarter of the machine
by requested size (1..N/4, N/4+1..N/2, N/2+1..3N/4, 3N/4+1..N units; Chu's 1-256, ...,
769-1024 on 32 x 32).
"""

from __future__ import annotations

import numpy as np

TAU_S = 10.0


def bounded_slowdown(response_s: np.ndarray, run_s: np.ndarray) -> np.ndarray:
    return np.maximum(response_s, TAU_S) / np.maximum(run_s, TAU_S)


def span_s(submit_s: np.ndarray, end_s: np.ndarray) -> float:
    """T = max(end) - min(submit): the makespan the capacity is measured over."""
    return float(end_s.max() - submit_s.min())


def capacity(busy: np.ndarray, submit_s: np.ndarray, end_s: np.ndarray, units: int,
             unused_area: float, cut_short_work: float = 0.0, failed_area: float = 0.0
             ) -> tuple[float, float, float, float, float]:
    """(utilized, unused, lost, failed, goodput) fractions of the capacity T x N (NaN when
    T = 0). `busy` is the unit-seconds of each job's completed run (s_j x run_j, or its BSP
    busy time; 0 for a job a failure killed), `cut_short_work` the unit-seconds of runs
    failures cut short (utilized, not goodput), `failed_area` the unit-seconds out of
    service."""
    span = span_s(submit_s, end_s)
    if span <= 0:
        return (float("nan"),) * 5
    useful = float(busy.sum()) / (span * units)
    utilized = useful + cut_short_work / (span * units)
    unused = unused_area / (span * units)
    failed = failed_area / (span * units)
    lost = 1.0 - utilized - unused - failed
    return (utilized, unused, 0.0 if abs(lost) < 1e-12 else lost,  # not -1e-16 by rounding
            failed, useful)


def summarize(values: np.ndarray, name: str) -> dict[str, float]:
    """mean, median and 95th percentile of a per-job metric."""
    return {
        f"mean_{name}": float(values.mean()),
        f"median_{name}": float(np.median(values)),
        f"p95_{name}": float(np.percentile(values, 95)),
    }


def mean_interval(times: np.ndarray) -> float:
    """Mean time between consecutive events (NaN for fewer than two)."""
    return float(np.diff(times).mean()) if times.size > 1 else float("nan")


def sd(values: np.ndarray) -> float:
    """Sample standard deviation (n - 1); NaN below two values."""
    return float(values.std(ddof=1)) if values.size > 1 else float("nan")


def chu_statistics(submit_s: np.ndarray, sched_s: np.ndarray, end_s: np.ndarray,
                   request: np.ndarray, alloc: np.ndarray, units: int,
                   warmup: int) -> dict[str, float]:
    """Chu's run statistics (see the module docstring): response SD, busy fraction and mean
    queue length over the measurement window, response mean and SD per size quarter."""
    response = (end_s - submit_s)[warmup:]
    begin, finish = submit_s[warmup], submit_s.max()
    window = finish - begin
    out = {"sd_response_s": sd(response), "measured_jobs": int(response.size),
           "busy_fraction": float("nan"), "mean_queue_length": float("nan"),
           "mean_jobs_in_system": float("nan"), "mean_scanned_queue": float("nan")}
    if window > 0:
        held = _overlap(sched_s, end_s, begin, finish)
        out["busy_fraction"] = float((alloc * held).sum()) / (units * window)
        out["mean_queue_length"] = float(_overlap(submit_s, sched_s, begin, finish).sum()) / window
        out["mean_jobs_in_system"] = float(_overlap(submit_s, end_s, begin, finish).sum()) / window
        out["mean_scanned_queue"] = _scanned_queue(submit_s, sched_s, end_s, begin, finish)
    quarter = np.clip(-(-4 * request[warmup:] // units), 1, 4)
    for q in range(1, 5):
        part = response[quarter == q]
        out[f"mean_response_s_q{q}"] = float(part.mean()) if part.size else float("nan")
        out[f"sd_response_s_q{q}"] = sd(part)
    return out


def _overlap(from_s: np.ndarray, until_s: np.ndarray, begin: float, finish: float
             ) -> np.ndarray:
    """How long each interval [from, until) lies inside [begin, finish]."""
    return np.clip(np.minimum(until_s, finish) - np.maximum(from_s, begin), 0.0, None)


def _scanned_queue(submit_s: np.ndarray, sched_s: np.ndarray, end_s: np.ndarray,
                   begin: float, finish: float) -> float:
    """Mean over the arrivals and departures at times t in [begin, finish] of the jobs
    waiting at t: arrived at or before t, not allocated before t."""
    events = np.concatenate([submit_s, end_s])
    events = events[(events >= begin) & (events <= finish)]
    arrived = np.searchsorted(np.sort(submit_s), events, side="right")
    allocated = np.searchsorted(np.sort(sched_s), events, side="left")
    return float((arrived - allocated).mean())
