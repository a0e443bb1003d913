"""Lublin-Feitelson model of rigid parallel jobs, as a seeded, vectorised numpy generator.

Reference: U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling
the characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003, and
the authors' reference program ``m_lublin99.c`` (Parallel Workloads Archive, models page).
Every default below is the value of the corresponding ``#define`` in ``m_lublin99.c``; the
algorithm follows that program too, with the deviations listed here:

* The random numbers come from ``numpy.random.Generator(PCG64(seed))``, not ``drand48``, so
  the output is a different sample from the same distributions.
* Machine size: ``m_lublin99.c`` describes a 128-node machine (``UHI = 7``).  For ``max_procs``
  processors the log2-size breakpoints ``u_med`` and ``u_hi`` are shifted by
  ``log2(max_procs) - log2(128)``, keeping the published shape of the two-stage uniform and the
  program's advice that ``u_hi`` is log2 of the machine size and ``u_med`` 1.5-3.5 below it.
  Power-of-two sizes are capped at the largest power of two <= ``max_procs``.
* Times are kept as exact floats while they are built and truncated to whole seconds once at
  the end, as the C program's integer output is.  (The C program truncates at every arrival
  instead, so its clock falls behind its daily-cycle position by about 0.5 s a job: over 10**5
  jobs that exceeds a day and smears the daily cycle out of long samples.)  Whole seconds also
  keep the output identical where ``exp``/``log`` differ in the last bit between platforms.
* The hyper-gamma mixing probability is linear in the number of processors,
  ``p = pa * size + pb`` (``time_from_nodes``), not in its logarithm.
* ``"mixed"`` superposes the batch and the interactive arrival streams, as the C program does
  with ``INCLUDE_JOBS_TYPE`` on: each job's type is that of the stream whose next arrival comes
  first, so the share of batch jobs is the ratio of the two arrival rates (about 0.15 with the
  default parameters), not a separate parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

__all__ = [
    "BATCH",
    "INTERACTIVE",
    "JOB_TYPES",
    "QUEUE_BATCH",
    "QUEUE_INTERACTIVE",
    "TYPELESS",
    "JobClassParams",
    "LublinParams",
    "daily_cycle_weights",
    "generate",
    "sample",
]

SECONDS_PER_DAY = 86_400
#: The daily cycle is resolved in half-hour slots; ``anum``/``bnum`` are in these units.
BUCKETS_PER_DAY = 48
SECONDS_PER_BUCKET = SECONDS_PER_DAY // BUCKETS_PER_DAY
#: SWF queue numbers of the two job types (the archive's convention: 0 is interactive).
QUEUE_INTERACTIVE = 0
QUEUE_BATCH = 1
#: Job types accepted by :func:`generate`.
JOB_TYPES = ("batch", "interactive", "mixed", "typeless")
# Rejection-sampling rounds before giving up (each round redraws only the rejected values).
_MAX_REJECTION_ROUNDS = 10_000


@dataclass(frozen=True)
class JobClassParams:
    """Parameters of one job class (batch, interactive, or the typeless whole-sample fit).

    Job size (``SERIAL_PROB``, ``POW2_PROB``, ``ULOW``, ``UMED``, ``UHI``, ``UPROB`` in the C
    file; the paper's size model): a job is serial with probability ``serial_prob``, a
    power-of-two parallel job with probability ``pow2_prob``, otherwise an arbitrary-size
    parallel job.  A parallel job's log2 size is two-stage uniform: uniform on
    ``[u_low, u_med]`` with probability ``u_prob``, else uniform on ``[u_med, u_hi]``;
    power-of-two jobs round it to an integer.  ``u_med``/``u_hi`` are for a
    ``LublinParams.reference_procs`` machine and are shifted for other sizes.

    Runtime (``A1``, ``B1``, ``A2``, ``B2``, ``PA``, ``PB``; the paper's hyper-gamma runtime
    model): log(runtime in s) is hyper-gamma, Gamma(a1, scale b1) with probability
    ``p = clip(pa * size + pb, 0, 1)`` and Gamma(a2, scale b2) otherwise.  ``pa < 0`` makes
    large jobs run longer (the size-runtime correlation).

    Arrivals (``AARR``, ``BARR``, ``ARAR``, ``ANUM``, ``BNUM``; the paper's arrival model):
    log(inter-arrival time in s) is Gamma(aarr * arar, scale barr), ``aarr``/``barr`` being
    the peak-hour fit and ``arar`` the all-hours/peak ratio the C program applies to the
    shape.  The inter-arrival time is spent against a daily cycle whose half-hour weights are
    Gamma(anum, scale bnum) probabilities (see :func:`daily_cycle_weights`).
    """

    serial_prob: float
    pow2_prob: float
    u_low: float
    u_med: float
    u_hi: float
    u_prob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    arar: float
    anum: float
    bnum: float

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{f.name}: expected a real number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{f.name}: expected a finite number, got {value!r}")
        for name in ("serial_prob", "pow2_prob", "u_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}: expected a probability in [0, 1], got {value}")
        if self.serial_prob + self.pow2_prob > 1.0:
            raise ValueError(
                "serial_prob + pow2_prob: expected at most 1, got "
                f"{self.serial_prob} + {self.pow2_prob}"
            )
        if not 0.0 <= self.u_low <= self.u_med <= self.u_hi:
            raise ValueError(
                "u_low, u_med, u_hi: expected 0 <= u_low <= u_med <= u_hi, got "
                f"{self.u_low}, {self.u_med}, {self.u_hi}"
            )
        for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "arar", "anum", "bnum"):
            if getattr(self, name) <= 0.0:
                raise ValueError(f"{name}: expected a positive number, got {getattr(self, name)}")


#: Batch jobs: ``*_BATCH`` constants of m_lublin99.c.
BATCH = JobClassParams(
    serial_prob=0.2927, pow2_prob=0.6686, u_low=1.2, u_med=5.0, u_hi=7.0, u_prob=0.875,
    a1=6.57, b1=0.823, a2=639.1, b2=0.0156, pa=-0.003, pb=0.6986,
    aarr=6.0415, barr=0.8531, arar=1.0519, anum=6.1271, bnum=5.2740,
)
#: Interactive jobs: ``*_ACTIVE`` constants of m_lublin99.c (largest job 2**5.5 ~ 45 nodes).
INTERACTIVE = JobClassParams(
    serial_prob=0.1541, pow2_prob=0.625, u_low=1.0, u_med=3.0, u_hi=5.5, u_prob=0.705,
    a1=3.8351, b1=0.6605, a2=7.073, b2=0.6856, pa=-0.0118, pb=0.9156,
    aarr=6.5510, barr=0.6621, arar=0.9797, anum=8.9186, bnum=3.6680,
)
#: Whole-sample fit without job types: the unsuffixed constants of m_lublin99.c.
TYPELESS = JobClassParams(
    serial_prob=0.244, pow2_prob=0.576, u_low=0.8, u_med=4.5, u_hi=7.0, u_prob=0.86,
    a1=4.2, b1=0.94, a2=312.0, b2=0.03, pa=-0.0054, pb=0.78,
    aarr=10.2303, barr=0.4871, arar=1.0225, anum=8.1737, bnum=3.9631,
)


@dataclass(frozen=True)
class LublinParams:
    """All parameters of the model; the defaults are the published ones (m_lublin99.c).

    ``batch``, ``interactive``, ``typeless``: per-class parameters (see
    :class:`JobClassParams`).  The rest are the C program's constants:
    ``reference_procs`` (``2**UHI`` = 128, the machine the size parameters describe),
    ``max_log_runtime`` (``TOO_MUCH_TIME`` = 12: log-runtimes above are redrawn, so runtimes
    stay below e**12 s, about 1.9 days), ``max_log_interarrival`` (``TOO_MUCH_ARRIVE_TIME`` =
    13, about 5 days), ``cyclic_day_start`` (``CYCLIC_DAY_START`` = 11: the daily-cycle gamma
    is evaluated on half-hour slots 11..58, slot ``k`` being the half hour that starts at
    ``(k - 1) / 2`` o'clock modulo 24, so the modelled day starts at 05:00) and
    ``start_hour`` (``START`` = 0: time 0 of the output is this hour of the day, midnight).
    """

    batch: JobClassParams = BATCH
    interactive: JobClassParams = INTERACTIVE
    typeless: JobClassParams = TYPELESS
    reference_procs: int = 128
    max_log_runtime: float = 12.0
    max_log_interarrival: float = 13.0
    cyclic_day_start: int = 11
    start_hour: int = 0

    def __post_init__(self) -> None:
        for name in ("batch", "interactive", "typeless"):
            if not isinstance(getattr(self, name), JobClassParams):
                raise ValueError(f"{name}: expected a JobClassParams, got {getattr(self, name)!r}")
        if not _is_int(self.reference_procs) or self.reference_procs < 1:
            raise ValueError(
                f"reference_procs: expected a positive integer, got {self.reference_procs!r}"
            )
        for name in ("max_log_runtime", "max_log_interarrival"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 < value < 700.0:
                raise ValueError(f"{name}: expected a number in (0, 700), got {value!r}")
        if not _is_int(self.cyclic_day_start) or not 0 <= self.cyclic_day_start < BUCKETS_PER_DAY:
            raise ValueError(
                f"cyclic_day_start: expected an integer in [0, {BUCKETS_PER_DAY}), "
                f"got {self.cyclic_day_start!r}"
            )
        if not _is_int(self.start_hour) or not 0 <= self.start_hour <= 23:
            raise ValueError(f"start_hour: expected an integer in [0, 23], got {self.start_hour!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Gamma(shape, scale) CDF at ``x``: regularized lower incomplete gamma function.

    Series expansion below ``shape + 1``, Lentz continued fraction for the upper tail above.
    Only used for the 49 daily-cycle breakpoints, so plain Python floats suffice.
    """
    z = x / scale
    if z <= 0.0:
        return 0.0
    log_prefix = shape * math.log(z) - z - math.lgamma(shape)
    if z < shape + 1.0:
        term = total = 1.0 / shape
        denominator = shape
        for _ in range(100_000):
            denominator += 1.0
            term *= z / denominator
            total += term
            if term < total * 1e-16:
                break
        return min(1.0, total * math.exp(log_prefix))
    tiny = 1e-300
    b = z + 1.0 - shape
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 100_000):
        an = -i * (i - shape)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return max(0.0, 1.0 - math.exp(log_prefix) * h)


def daily_cycle_weights(job_class: JobClassParams, cyclic_day_start: int = 11) -> np.ndarray:
    """Relative arrival rate of each half hour of the day (index 0 = 00:00-00:30), mean 1.

    Slot ``k`` of the modelled day (``k = cyclic_day_start .. cyclic_day_start + 47``) gets the
    Gamma(anum, scale bnum) probability of ``[k - 0.5, k + 0.5]`` and is the clock half hour
    ``(k - 1) mod 48``, as in ``arrive_init`` of m_lublin99.c.
    """
    weights = np.empty(BUCKETS_PER_DAY)
    for k in range(cyclic_day_start, cyclic_day_start + BUCKETS_PER_DAY):
        upper = _gamma_cdf(k + 0.5, job_class.anum, job_class.bnum)
        lower = _gamma_cdf(k - 0.5, job_class.anum, job_class.bnum)
        weights[(k - 1) % BUCKETS_PER_DAY] = upper - lower
    total = weights.sum()
    if not total > 0.0:
        raise ValueError("anum, bnum: the daily-cycle gamma puts no mass on the modelled day")
    return weights / weights.mean()


def _truncated_gamma(
    rng: np.random.Generator, shape: np.ndarray, scale: np.ndarray, limit: float,
    first_prob: np.ndarray | None = None, shape2: np.ndarray | None = None,
    scale2: np.ndarray | None = None,
) -> np.ndarray:
    """Gamma (or two-gamma mixture) draws conditioned on ``<= limit`` by redrawing rejects.

    With ``first_prob`` the draw is the hyper-gamma of the runtime model: the first gamma with
    that probability, else ``(shape2, scale2)``; a rejected draw redraws the component too, as
    ``time_from_nodes`` does.  Only the rejected entries are redrawn, in index order, so the
    result depends on the seed alone.
    """
    out = np.empty(shape.shape[0])
    todo = np.arange(shape.shape[0])
    for _ in range(_MAX_REJECTION_ROUNDS):
        if todo.size == 0:
            return out
        k, theta = shape[todo], scale[todo]
        if first_prob is not None:
            second = rng.random(todo.size) > first_prob[todo]
            k = np.where(second, shape2[todo], k)
            theta = np.where(second, scale2[todo], theta)
        draw = rng.gamma(k, theta)
        accepted = draw <= limit
        out[todo[accepted]] = draw[accepted]
        todo = todo[~accepted]
    raise ValueError(
        f"gamma parameters: draws almost never fall below the truncation limit {limit}"
    )


def _arrival_times(
    rng: np.random.Generator, n: int, job_class: JobClassParams, params: LublinParams
) -> np.ndarray:
    """Arrival times (float s from 0) of ``n`` jobs of one class, with the daily cycle.

    ``calc_next_arrive`` of m_lublin99.c pays each inter-arrival time, as "points"
    (seconds / 1800), to the half-hour buckets it crosses, bucket ``b`` costing ``w[b]``
    points; a busy bucket therefore holds proportionally more arrivals.  That is a time
    change: real time is the inverse of the cumulative weight function applied to the
    cumulative sum of the inter-arrival draws, which is what this computes without a loop.
    """
    shape = np.full(n, job_class.aarr * job_class.arar)
    scale = np.full(n, job_class.barr)
    log_gaps = _truncated_gamma(rng, shape, scale, params.max_log_interarrival)
    model_time = np.cumsum(np.exp(log_gaps))  # seconds of "rush-hour" time
    weights = daily_cycle_weights(job_class, params.cyclic_day_start)
    start_bucket = params.start_hour * BUCKETS_PER_DAY // 24
    day_weights = np.roll(weights, -start_bucket)  # day_weights[j]: j-th bucket after start
    edges = np.concatenate(([0.0], np.cumsum(day_weights))) * SECONDS_PER_BUCKET
    day_cost = edges[-1]  # = 86400 up to rounding, as the weights have mean 1
    days = np.floor(model_time / day_cost)
    rest = model_time - days * day_cost
    # Bucket j with edges[j] < rest <= edges[j + 1]: the C loop pays while points > weight.
    bucket = np.clip(np.searchsorted(edges, rest, side="left") - 1, 0, BUCKETS_PER_DAY - 1)
    width = day_weights[bucket] * SECONDS_PER_BUCKET
    inside = np.divide(rest - edges[bucket], width, out=np.zeros(n), where=width > 0.0)
    real_time = days * SECONDS_PER_DAY + (bucket + np.clip(inside, 0.0, 1.0)) * SECONDS_PER_BUCKET
    return np.maximum.accumulate(real_time)  # guard against rounding at bucket edges


def _sizes(
    rng: np.random.Generator, job_class: JobClassParams, n: int, max_procs: int,
    reference_procs: int,
) -> np.ndarray:
    """Processor counts of ``n`` jobs of one class (``calc_number_of_nodes``), vectorised."""
    shift = math.log2(max_procs) - math.log2(reference_procs)
    u_low = job_class.u_low
    u_med = max(job_class.u_med + shift, u_low)
    u_hi = max(job_class.u_hi + shift, u_med)
    u = rng.random(n)
    first_stage = rng.random(n) <= job_class.u_prob
    position = rng.random(n)
    low = np.where(first_stage, u_low, u_med)
    high = np.where(first_stage, u_med, u_hi)
    log_size = low + position * (high - low)
    serial = u <= job_class.serial_prob
    pow2 = ~serial & (u <= job_class.serial_prob + job_class.pow2_prob)
    largest_exponent = int(max_procs).bit_length() - 1
    rounded = np.minimum(np.floor(log_size + 0.5), largest_exponent)
    log_size = np.where(pow2, rounded, log_size)
    size = np.floor(np.exp2(log_size) + 0.5)
    size = np.where(serial, 1.0, size)
    return np.clip(size, 1, max_procs).astype(np.int64)


def _generate(
    n_jobs: int, max_procs: int, seed: int, params: LublinParams, job_type: str
) -> dict[str, np.ndarray]:
    """:func:`generate` after argument checks."""
    rng = np.random.Generator(np.random.PCG64(seed))
    if job_type == "mixed":
        # Two independent streams; n of each is always enough for the first n of the merge.
        interactive_times = _arrival_times(rng, n_jobs, params.interactive, params)
        batch_times = _arrival_times(rng, n_jobs, params.batch, params)
        times = np.concatenate((interactive_times, batch_times))
        # Stable sort with interactive first: on a tie the C program picks interactive.
        order = np.argsort(times, kind="stable")[:n_jobs]
        times = times[order]
        is_batch = order >= n_jobs
        classes = ((params.batch, is_batch), (params.interactive, ~is_batch))
    else:
        job_class = {
            "batch": params.batch,
            "interactive": params.interactive,
            "typeless": params.typeless,
        }[job_type]
        times = _arrival_times(rng, n_jobs, job_class, params)
        is_batch = np.full(n_jobs, job_type == "batch")
        classes = ((job_class, np.ones(n_jobs, dtype=bool)),)

    sizes = np.empty(n_jobs, dtype=np.int64)
    for job_class, mask in classes:
        sizes[mask] = _sizes(rng, job_class, int(mask.sum()), max_procs, params.reference_procs)

    def per_job(name: str) -> np.ndarray:
        values = np.empty(n_jobs)
        for job_class, mask in classes:
            values[mask] = getattr(job_class, name)
        return values

    first_prob = np.clip(per_job("pa") * sizes + per_job("pb"), 0.0, 1.0)
    log_runtime = _truncated_gamma(
        rng, per_job("a1"), per_job("b1"), params.max_log_runtime,
        first_prob=first_prob, shape2=per_job("a2"), scale2=per_job("b2"),
    )
    jobs = {
        "job_number": np.arange(1, n_jobs + 1, dtype=np.int64),
        "submit_time": np.floor(times),
        # log-runtime >= 0, so every runtime is at least 1 s, as in the C program.
        "run_time": np.floor(np.exp(log_runtime)),
        "allocated_processors": sizes,
        "requested_processors": sizes.copy(),
        "queue": np.where(is_batch, QUEUE_BATCH, QUEUE_INTERACTIVE).astype(np.int64),
    }
    return jobs


def generate(
    n_jobs: int,
    max_procs: int,
    seed: int,
    params: LublinParams | None = None,
    job_type: str = "batch",
) -> dict[str, np.ndarray]:
    """Generate ``n_jobs`` rigid jobs for a ``max_procs``-processor machine.

    Returns arrays keyed ``job_number`` (int64, 1..n), ``submit_time`` (float64 whole
    seconds from 0, non-decreasing), ``run_time`` (float64 whole seconds, >= 1),
    ``allocated_processors`` and ``requested_processors`` (int64, equal, 1..max_procs) and
    ``queue`` (int64, the job type as the Parallel Workloads Archive writes it: 0 for an
    interactive job, 1 for a batch job), all SWF fields.
    ``job_type`` is ``"batch"``, ``"interactive"``, ``"mixed"`` (both streams superposed,
    the type of each job decided by which stream's next arrival comes first) or
    ``"typeless"`` (the model's whole-sample fit).  The same arguments always give the same
    arrays: all randomness comes from ``Generator(PCG64(seed))``.
    """
    if not _is_int(n_jobs) or n_jobs < 1:
        raise ValueError(f"n_jobs: expected a positive integer, got {n_jobs!r}")
    if not _is_int(max_procs) or max_procs < 1:
        raise ValueError(f"max_procs: expected a positive integer, got {max_procs!r}")
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    if params is None:
        params = LublinParams()
    elif not isinstance(params, LublinParams):
        raise ValueError(f"params: expected a LublinParams or None, got {type(params).__name__}")
    if job_type not in JOB_TYPES:
        raise ValueError(f"job_type: expected one of {', '.join(JOB_TYPES)}, got {job_type!r}")
    return _generate(int(n_jobs), int(max_procs), int(seed), params, job_type)


def sample(params: dict, seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """SWF columns and header lines of one sample (the `lublin` workload model)."""
    jobs, max_procs, job_type = params["jobs"], params["max_procs"], params["job_type"]
    header = [f"; Installation: Lublin-Feitelson model ({job_type} jobs)",
              f"; MaxJobs: {jobs}", f"; MaxRecords: {jobs}", f"; MaxNodes: {max_procs}",
              f"; MaxProcs: {max_procs}",
              f"; Note: U. Lublin and D. G. Feitelson, JPDC 63(11), 2003; seed {seed}"]
    return generate(jobs, max_procs, seed, job_type=job_type), header
