"""Per-job and per-run metrics (Krevat 2003, section 4.2).

Per job: wait = start - submit, response = end - submit, bounded slowdown =
max(response, tau) / max(run, tau) with tau = 10 s.

Per run, over T = max(end) - min(submit) and N machine units:
- utilization (capacity utilized, eq. 4.1) = sum(s_j * run_j) / (T N), s_j the requested
  size: units added by rounding a size up or growing a job count as lost, not utilized
  (on wired machines a job requests its shape, so s_j is the shape's volume);
- unused capacity (eq. 4.2) = integral of max(0, f(t) - q(t)) dt / (T N), f free units and
  q units requested by waiting jobs (integrated by the engine);
- lost capacity (eq. 4.3) = 1 - utilized - unused.
"""

from __future__ import annotations

import numpy as np

TAU_S = 10.0


def bounded_slowdown(response_s: np.ndarray, run_s: np.ndarray) -> np.ndarray:
    return np.maximum(response_s, TAU_S) / np.maximum(run_s, TAU_S)


def span_s(submit_s: np.ndarray, end_s: np.ndarray) -> float:
    """T = max(end) - min(submit): the makespan the capacity is measured over."""
    return float(end_s.max() - submit_s.min())


def capacity(request: np.ndarray, run_s: np.ndarray, submit_s: np.ndarray, end_s: np.ndarray,
             units: int, unused_area: float) -> tuple[float, float, float]:
    """(utilized, unused, lost) fractions of the capacity T x N (NaN when T = 0)."""
    span = span_s(submit_s, end_s)
    if span <= 0:
        return float("nan"), float("nan"), float("nan")
    utilized = float((request * run_s).sum()) / (span * units)
    unused = unused_area / (span * units)
    return utilized, unused, 1.0 - utilized - unused


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
