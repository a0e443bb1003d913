"""Tests of the Lublin-Feitelson workload generator (simcore.workload.lublin).

Statistical checks compare a large fixed-seed sample with values derived here, independently
of the generator's code, from the published parameters; every tolerance is a stated number of
standard errors, so a wrong parameter or a broken sampling step makes a test fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.workload.lublin import (
    BATCH,
    INTERACTIVE,
    QUEUE_BATCH,
    TYPELESS,
    JobClassParams,
    LublinParams,
    _gamma_cdf,
    daily_cycle_weights,
    generate,
)

KEYS = {"job_number", "submit_time", "run_time", "allocated_processors", "requested_processors",
        "queue"}
CLASSES = {"batch": BATCH, "interactive": INTERACTIVE, "typeless": TYPELESS}
N_LARGE = 20_000
Z = 4.0  # standard errors allowed: a correct generator fails a check with probability ~6e-5


# --- independent reference computations from the published parameters ----------------------


def gamma_pdf(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Gamma density, written out (the generator uses numpy's sampler, not this)."""
    return np.exp(
        (shape - 1.0) * np.log(x) - x / scale - math.lgamma(shape) - shape * math.log(scale)
    )


def gamma_cdf_table(shape: float, scale: float, upper: float) -> tuple[np.ndarray, np.ndarray]:
    """Gamma CDF on a fine grid of [0, upper] by trapezoidal integration of the density."""
    x = np.linspace(1e-12, upper, 400_001)
    pdf = gamma_pdf(x, shape, scale)
    cdf = np.concatenate(([0.0], np.cumsum((pdf[1:] + pdf[:-1]) * np.diff(x) / 2.0)))
    return x, cdf


def truncated_exp_moments(shape: float, scale: float, limit: float) -> tuple[float, float]:
    """Mean and standard deviation of exp(G) for G ~ Gamma(shape, scale) conditioned on G <= limit.

    This is the inter-arrival time of the model in seconds (before the daily cycle, which only
    moves arrivals within a day and so leaves the long-run mean unchanged).
    """
    x = np.linspace(1e-12, limit, 400_001)
    pdf = gamma_pdf(x, shape, scale)
    mass = np.trapezoid(pdf, x)
    mean = np.trapezoid(np.exp(x) * pdf, x) / mass
    second = np.trapezoid(np.exp(2.0 * x) * pdf, x) / mass
    return mean, math.sqrt(second - mean**2)


def shifted_bounds(job_class: JobClassParams, max_procs: int) -> tuple[float, float, float]:
    """Two-stage-uniform bounds for a machine of max_procs (published ones are for 128)."""
    shift = math.log2(max_procs) - 7.0
    u_med = max(job_class.u_med + shift, job_class.u_low)
    return job_class.u_low, u_med, max(job_class.u_hi + shift, u_med)


def log_size_grid(job_class: JobClassParams, max_procs: int) -> tuple[np.ndarray, np.ndarray]:
    """Midpoint grid of the two-stage uniform log2 size, with the probability of each point."""
    low, med, high = shifted_bounds(job_class, max_procs)
    m = 200_000
    first = low + (np.arange(m) + 0.5) * (med - low) / m
    second = med + (np.arange(m) + 0.5) * (high - med) / m
    weights = np.concatenate(
        (np.full(m, job_class.u_prob / m), np.full(m, (1 - job_class.u_prob) / m))
    )
    return np.concatenate((first, second)), weights


def expected_pow2_fraction(job_class: JobClassParams, max_procs: int) -> float:
    """P(size is a power of two >= 2).

    Power-of-two jobs (probability pow2_prob) always are one; an arbitrary-size parallel job
    is one when round(2**x) happens to be, for x its two-stage-uniform log2 size.
    """
    x, w = log_size_grid(job_class, max_procs)
    lucky = float(w[is_pow2(np.floor(np.exp2(x) + 0.5).astype(np.int64))].sum())
    other = 1.0 - job_class.serial_prob - job_class.pow2_prob
    return job_class.pow2_prob + other * lucky


def expected_size_moments(job_class: JobClassParams, max_procs: int) -> tuple[float, float]:
    """Mean and standard deviation of the job size."""
    x, w = log_size_grid(job_class, max_procs)
    pow2 = np.exp2(np.minimum(np.floor(x + 0.5), math.floor(math.log2(max_procs))))
    other = np.floor(np.exp2(x) + 0.5)
    s, p = job_class.serial_prob, job_class.pow2_prob
    mean = s + p * (w @ pow2) + (1 - s - p) * (w @ other)
    second = s + p * (w @ pow2**2) + (1 - s - p) * (w @ other**2)
    return mean, math.sqrt(second - mean**2)


def runtime_median_range(job_class: JobClassParams, max_procs: int, n: int) -> tuple[float, float]:
    """Range that the median runtime of n jobs falls in unless something is wrong.

    log(runtime) is Gamma(a1, b1) with probability p = pa * size + pb, else Gamma(a2, b2), and
    is redrawn above 12.  With p linear in size (no clipping for the default parameters on 128
    processors: p >= pb + 128 pa > 0), the log-runtime of a random job has the CDF
    G(y) = [pbar F1(y) + (1 - pbar) F2(y)] / [pbar F1(12) + (1 - pbar) F2(12)], with
    pbar = pb + pa E[size] (using the mean p in the truncation term is off by less than 1e-4).
    The sample median lies between the population quantiles of order 0.5 -+ delta, with
    delta = Z * 0.5 / sqrt(n) for the order statistic plus Z * |pa| sd(size) / sqrt(n) for the
    sampling error of the sizes, which moves pbar.  runtime = floor(exp(log-runtime)) is
    monotone, so the quantiles map through it.
    """
    mean_size, sd_size = expected_size_moments(job_class, max_procs)
    pbar = job_class.pb + job_class.pa * mean_size
    y, f1 = gamma_cdf_table(job_class.a1, job_class.b1, 12.0)
    _, f2 = gamma_cdf_table(job_class.a2, job_class.b2, 12.0)
    g = (pbar * f1 + (1 - pbar) * f2) / (pbar * f1[-1] + (1 - pbar) * f2[-1])
    delta = Z * 0.5 / math.sqrt(n) + Z * abs(job_class.pa) * sd_size / math.sqrt(n)
    low = np.floor(np.exp(np.interp(0.5 - delta, g, y)))
    high = np.floor(np.exp(np.interp(0.5 + delta, g, y)))
    return float(low), float(high)


def is_pow2(sizes: np.ndarray) -> np.ndarray:
    return (sizes >= 2) & (np.bitwise_and(sizes, sizes - 1) == 0)


def binomial_tolerance(p: float, n: int) -> float:
    return Z * math.sqrt(p * (1 - p) / n)


# --- the published parameters ---------------------------------------------------------------

# The #define values of m_lublin99.c (*_BATCH, *_ACTIVE and the unsuffixed whole-sample set),
# in JobClassParams field order: serial_prob pow2_prob u_low u_med u_hi u_prob | a1 b1 a2 b2
# pa pb | aarr barr arar anum bnum. Typed in here separately so a typo in the module shows.
PUBLISHED = {
    "batch": (0.2927, 0.6686, 1.2, 5, 7, 0.875, 6.57, 0.823, 639.1, 0.0156, -0.003, 0.6986,
              6.0415, 0.8531, 1.0519, 6.1271, 5.2740),
    "interactive": (0.1541, 0.625, 1, 3, 5.5, 0.705, 3.8351, 0.6605, 7.073, 0.6856, -0.0118,
                    0.9156, 6.5510, 0.6621, 0.9797, 8.9186, 3.6680),
    "typeless": (0.244, 0.576, 0.8, 4.5, 7, 0.86, 4.2, 0.94, 312, 0.03, -0.0054, 0.78,
                 10.2303, 0.4871, 1.0225, 8.1737, 3.9631),
}


def test_defaults_are_the_published_values() -> None:
    params = LublinParams()
    for job_type, values in PUBLISHED.items():
        job_class = getattr(params, job_type)
        assert tuple(getattr(job_class, f) for f in job_class.__dataclass_fields__) == values
    assert (params.reference_procs, params.max_log_runtime, params.max_log_interarrival) == (
        128, 12, 13,
    )
    assert (params.cyclic_day_start, params.start_hour) == (11, 0)


# --- shape, type and determinism ------------------------------------------------------------


@pytest.mark.parametrize("max_procs", [128, 338, 1024])
@pytest.mark.parametrize("job_type", ["batch", "interactive", "mixed", "typeless"])
def test_arrays_have_the_documented_keys_types_and_ranges(max_procs: int, job_type: str) -> None:
    jobs = generate(3000, max_procs, seed=11, job_type=job_type)
    assert set(jobs) == KEYS
    for key in ("job_number", "allocated_processors", "requested_processors", "queue"):
        assert jobs[key].dtype == np.int64
    for key in ("submit_time", "run_time"):
        assert jobs[key].dtype == np.float64
    assert all(a.shape == (3000,) for a in jobs.values())
    np.testing.assert_array_equal(jobs["job_number"], np.arange(1, 3001))
    types = set(np.unique(jobs["queue"]).tolist())
    assert types == {"batch": {1}, "interactive": {0}, "mixed": {0, 1}}.get(job_type, types)
    submit, run = jobs["submit_time"], jobs["run_time"]
    assert submit[0] >= 0 and np.all(np.diff(submit) >= 0)
    assert np.all(run >= 1) and np.all(run <= math.exp(12))  # TOO_MUCH_TIME = 12
    assert np.all(submit == np.floor(submit)) and np.all(run == np.floor(run))
    sizes = jobs["allocated_processors"]
    assert sizes.min() >= 1 and sizes.max() <= max_procs
    np.testing.assert_array_equal(jobs["requested_processors"], sizes)
    if job_type != "interactive":
        # batch and typeless jobs reach the machine size (u_hi = log2(max_procs))
        assert sizes.max() > max_procs / 2


@pytest.mark.parametrize("job_type", ["batch", "interactive", "mixed", "typeless"])
def test_same_seed_gives_identical_arrays_and_other_seeds_differ(job_type: str) -> None:
    first = generate(2000, 338, seed=5, job_type=job_type)
    again = generate(2000, 338, seed=5, params=LublinParams(), job_type=job_type)
    other = generate(2000, 338, seed=6, job_type=job_type)
    for key in KEYS:
        np.testing.assert_array_equal(first[key], again[key])
    for key in ("submit_time", "run_time", "allocated_processors"):
        assert not np.array_equal(first[key], other[key])


def test_output_is_pinned_for_one_seed() -> None:
    # Golden values: a change means the same seed no longer reproduces old workloads (for
    # example a numpy release that changed a sampler). Regenerate only knowingly.
    jobs = generate(5, 128, seed=1)
    np.testing.assert_array_equal(jobs["submit_time"], GOLDEN["submit_time"])
    np.testing.assert_array_equal(jobs["run_time"], GOLDEN["run_time"])
    np.testing.assert_array_equal(jobs["allocated_processors"], GOLDEN["allocated_processors"])


GOLDEN: dict[str, list[float]] = {
    "submit_time": [665.0, 1307.0, 4194.0, 4325.0, 5151.0],
    "run_time": [20262.0, 23.0, 39344.0, 749.0, 11259.0],
    "allocated_processors": [16, 4, 8, 32, 32],
}


@settings(max_examples=40, deadline=None)
@given(
    n_jobs=st.integers(1, 300),
    max_procs=st.integers(1, 5000),
    seed=st.integers(0, 2**63),
    job_type=st.sampled_from(["batch", "interactive", "mixed", "typeless"]),
    start_hour=st.integers(0, 23),
)
def test_invariants_hold_for_any_arguments(
    n_jobs: int, max_procs: int, seed: int, job_type: str, start_hour: int
) -> None:
    params = LublinParams(start_hour=start_hour)
    jobs = generate(n_jobs, max_procs, seed, params=params, job_type=job_type)
    sizes = jobs["allocated_processors"]
    assert sizes.shape == (n_jobs,)
    assert sizes.min() >= 1 and sizes.max() <= max_procs
    assert np.all(np.diff(jobs["submit_time"]) >= 0) and jobs["submit_time"][0] >= 0
    assert np.all(jobs["run_time"] >= 1)
    assert np.all(np.isfinite(jobs["submit_time"]))


# --- job sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize("max_procs", [128, 338, 1024])
@pytest.mark.parametrize("job_type", ["batch", "interactive", "typeless"])
def test_serial_and_power_of_two_fractions_match_the_model(max_procs: int, job_type: str) -> None:
    job_class = CLASSES[job_type]
    sizes = generate(N_LARGE, max_procs, seed=2, job_type=job_type)["allocated_processors"]
    serial = job_class.serial_prob  # parallel jobs have size >= round(2**u_low) = 2
    assert abs(np.mean(sizes == 1) - serial) <= binomial_tolerance(serial, N_LARGE)
    pow2 = expected_pow2_fraction(job_class, max_procs)
    assert abs(np.mean(is_pow2(sizes)) - pow2) <= binomial_tolerance(pow2, N_LARGE)


def test_mixed_workload_uses_each_types_own_parameters() -> None:
    jobs = generate(N_LARGE, 128, 3, LublinParams(), "mixed")
    is_batch = jobs["queue"] == QUEUE_BATCH
    sizes = jobs["allocated_processors"]
    for mask, job_class in ((is_batch, BATCH), (~is_batch, INTERACTIVE)):
        n = int(mask.sum())
        p = job_class.serial_prob
        assert abs(np.mean(sizes[mask] == 1) - p) <= binomial_tolerance(p, n)
    # Interactive jobs top out at round(2**5.5) = 45 processors, batch jobs reach 128.
    assert sizes[~is_batch].max() <= 45
    assert sizes[is_batch].max() > 64
    # The share of batch jobs is the ratio of the two arrival rates, 1/mean inter-arrival:
    # (1/3517) / (1/3517 + 1/619) = 0.150. Batch arrivals are a renewal process whose count
    # over the span t has variance t sd^2 / mean^3 (renewal CLT): t ~ 20000 * 526 s, sd = 20323 s,
    # mean = 3517 s give sd(count) ~ 316 jobs, i.e. 0.016 of the share.
    mean_b, sd_b = truncated_exp_moments(BATCH.aarr * BATCH.arar, BATCH.barr, 13.0)
    mean_i, _ = truncated_exp_moments(INTERACTIVE.aarr * INTERACTIVE.arar, INTERACTIVE.barr, 13.0)
    share = (1 / mean_b) / (1 / mean_b + 1 / mean_i)
    span = N_LARGE / (1 / mean_b + 1 / mean_i)
    sd_share = math.sqrt(span * sd_b**2 / mean_b**3) / N_LARGE
    assert abs(is_batch.mean() - share) <= Z * sd_share


# --- runtimes and arrivals ------------------------------------------------------------------


@pytest.mark.parametrize("job_type", ["batch", "interactive"])
def test_median_runtime_is_in_the_range_derived_from_the_parameters(job_type: str) -> None:
    # See runtime_median_range. On 128 processors E[size] is 13.9 (batch) and 8.0
    # (interactive), so pbar = 0.657 and 0.821; with n = 20000 the range is [678, 992] s
    # around a model median of 814 s (batch) and [12, 14] s around 13 s (interactive).
    low, high = runtime_median_range(CLASSES[job_type], 128, N_LARGE)
    median = float(np.median(generate(N_LARGE, 128, seed=4, job_type=job_type)["run_time"]))
    assert low <= median <= high


@pytest.mark.parametrize("job_type", ["batch", "interactive", "typeless"])
def test_mean_interarrival_time_is_in_the_range_derived_from_the_parameters(job_type: str) -> None:
    # The inter-arrival time is exp(G), G ~ Gamma(aarr * arar, barr) redrawn above 13; its mean
    # and sd come from truncated_exp_moments (batch: 3517 s and 20323 s, interactive: 619 s and
    # 6121 s, typeless: 911 s and 6343 s). The daily cycle only re-times arrivals within a day
    # (the cycle's weights average to 1), so the span of n jobs is the sum of n inter-arrival
    # times give or take less than one day: mean = span / n within Z sd / sqrt(n) + 86400 / n.
    job_class = CLASSES[job_type]
    mean, sd = truncated_exp_moments(job_class.aarr * job_class.arar, job_class.barr, 13.0)
    submit = generate(N_LARGE, 128, seed=8, job_type=job_type)["submit_time"]
    tolerance = Z * sd / math.sqrt(N_LARGE) + 86_400 / N_LARGE
    assert abs(submit[-1] / N_LARGE - mean) <= tolerance


@pytest.mark.parametrize("start_hour", [0, 8])
@pytest.mark.parametrize("job_type", ["batch", "interactive"])
def test_daily_cycle_puts_more_arrivals_in_the_day_peak_than_at_night(
    job_type: str, start_hour: int
) -> None:
    # Expected share of arrivals in a clock window = mean of the daily-cycle weights of its
    # half hours / 48 x its number of half hours: 10:00-16:00 holds 0.398 (batch) / 0.428
    # (interactive) of the arrivals, 00:00-06:00 only 0.095 / 0.072. Arrivals are bursty, so
    # the share's spread is not binomial: over 200 seeds of 20000 jobs its sd was 0.011 / 0.015
    # (day) and 0.006 / 0.0065 (night); we allow 5 of those sds (0.075 day, 0.033 night).
    weights = daily_cycle_weights(CLASSES[job_type])
    expected_day, expected_night = weights[20:32].sum() / 48, weights[0:12].sum() / 48
    params = LublinParams(start_hour=start_hour)
    submit = generate(N_LARGE, 128, seed=9, params=params, job_type=job_type)["submit_time"]
    clock = (submit + start_hour * 3600) % 86_400  # time 0 is start_hour o'clock
    day = np.mean((clock >= 10 * 3600) & (clock < 16 * 3600))
    night = np.mean(clock < 6 * 3600)
    assert day > 3 * night
    assert abs(day - expected_day) <= 0.075
    assert abs(night - expected_night) <= 0.033


def test_daily_cycle_weights_peak_in_the_early_afternoon() -> None:
    # The gamma's mode (anum - 1) * bnum is 27.0 (batch) and 29.0 (interactive) slots; slot k
    # is the clock half hour k - 1, so the busiest half hours are 13:00 and 14:00 (26 and 28).
    for job_class, peak in ((BATCH, 26), (INTERACTIVE, 28)):
        weights = daily_cycle_weights(job_class)
        assert weights.shape == (48,)
        assert weights.mean() == pytest.approx(1.0)
        assert int(np.argmax(weights)) == peak
        # quietest: one end of the modelled day (slot 58 = 04:30 or slot 11 = 05:00)
        assert int(np.argmin(weights)) in (9, 10)


def test_gamma_cdf_matches_closed_forms() -> None:
    for z in (0.01, 0.5, 1.0, 2.5, 4.0, 10.0, 40.0):
        assert _gamma_cdf(z * 3.0, 1.0, 3.0) == pytest.approx(1 - math.exp(-z), abs=1e-13)
        assert _gamma_cdf(z, 2.0, 1.0) == pytest.approx(1 - math.exp(-z) * (1 + z), abs=1e-13)
        erlang3 = 1 - math.exp(-z) * (1 + z + z * z / 2)
        assert _gamma_cdf(z / 2, 3.0, 0.5) == pytest.approx(erlang3, abs=1e-13)
    assert _gamma_cdf(0.0, 6.0, 5.0) == 0.0


# --- argument checking ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": 2.0}, "n_jobs"),
        ({"n_jobs": True}, "n_jobs"),
        ({"max_procs": 0}, "max_procs"),
        ({"max_procs": "128"}, "max_procs"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"params": {"start_hour": 3}}, "params"),
        ({"job_type": "serial"}, "job_type"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(kwargs: dict, argument: str) -> None:
    arguments = {"n_jobs": 10, "max_procs": 128, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=argument):
        generate(**arguments)


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"serial_prob": 1.5}, "serial_prob"),
        ({"pow2_prob": 0.9}, "serial_prob \\+ pow2_prob"),
        ({"u_low": 6.0}, "u_low"),
        ({"a2": 0.0}, "a2"),
        ({"bnum": float("nan")}, "bnum"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(change: dict, argument: str) -> None:
    values = {name: getattr(BATCH, name) for name in BATCH.__dataclass_fields__} | change
    with pytest.raises(ValueError, match=argument):
        JobClassParams(**values)


def test_bad_model_constants_raise_value_error_naming_them() -> None:
    with pytest.raises(ValueError, match="start_hour"):
        LublinParams(start_hour=24)
    with pytest.raises(ValueError, match="reference_procs"):
        LublinParams(reference_procs=0)
