"""Chu's synthetic workloads for 2D meshes (thesis chapter 3): the model `chu`.

Jobs J(w, h) arrive in a Poisson stream and ask for w x h submeshes of a side x side mesh
(Chu reports side 32). w and h are drawn independently from one of three distributions
(`square`: h = w, one draw, as in the thesis's chapter 4), uniform within each interval:

- `uniform`: 1..side, every value alike;
- `decreasing`: [1, s/8], [s/8 + 1, s/4], [s/4 + 1, s/2], [s/2 + 1, s] with probabilities
  0.4, 0.2, 0.2, 0.2 (s = side; for 32: [1, 4], [5, 8], [9, 16], [17, 32]);
- `increasing`: [1, s/2], [s/2 + 1, 3s/4], [3s/4 + 1, 7s/8], [7s/8 + 1, s] with probabilities
  0.2, 0.2, 0.2, 0.4 (for 32: [1, 16], [17, 24], [25, 28], [29, 32]);

[Inf: the thesis gives the intervals for 32 only; other sides scale them, and must be
multiples of 8 for these two]. Service times are exponential with mean EXTM (10 s). The
offered load is n x EXTM / (N x IATM), n the exact mean requested size of the distribution
(E[w] E[h]; E[w^2] for square jobs), N = side^2 and IATM the mean inter-arrival time, which
the load sets; the offered_load transform rescales arrivals by the same formula on the
machine's N (`nominal`). Estimated execution times (EET) are drawn from N(y, c y) truncated
at 0, y the job's run time, c = `estimate_cv` (Chu: 0, 0.5, 1; at c = 1 about 16% are 0);
they are the workload's requested times.

Common random numbers: every quantity has its own stream (spawned from the seed), and the
sizes come from one uniform per job through the distribution's inverse CDF, so two
workloads with the same seed share arrivals, service times and estimate noise whatever
their distribution or load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from simcore.base.errors import SpecError
from simcore.jobs.submeshes import HEIGHT, WIDTH

DISTRIBUTIONS = ("uniform", "decreasing", "increasing")
ARRIVALS, SERVICE, WIDTHS, HEIGHTS, ESTIMATES = range(5)


def side_probabilities(distribution: str, side: int) -> np.ndarray:
    """P(w = v) for v = 1..side (index v - 1)."""
    if distribution == "uniform":
        return np.full(side, 1.0 / side)
    if distribution not in DISTRIBUTIONS:
        raise SpecError(f"model chu: distribution {distribution!r}; expected one of "
                        f"{', '.join(DISTRIBUTIONS)}")
    if side % 8:
        raise SpecError(f"model chu: side {side} with distribution {distribution}; expected "
                        "a multiple of 8 (the intervals are eighths, quarters and halves)")
    if distribution == "decreasing":
        bounds, weights = (0, side // 8, side // 4, side // 2, side), (0.4, 0.2, 0.2, 0.2)
    else:
        bounds, weights = (0, side // 2, 3 * side // 4, 7 * side // 8, side), (0.2, 0.2, 0.2,
                                                                                  0.4)
    p = np.zeros(side)
    for lo, hi, weight in zip(bounds[:-1], bounds[1:], weights, strict=True):
        p[lo:hi] = weight / (hi - lo)
    return p


def mean_size(distribution: str, side: int, square: bool) -> float:
    """The exact mean requested size n: E[w] E[h], or E[w^2] for square jobs."""
    p = side_probabilities(distribution, side)
    values = np.arange(1, side + 1)
    return float(p @ values**2) if square else float(p @ values) ** 2


def _interarrival(params: Mapping[str, Any]) -> float:
    """IATM of the model's load on its side x side mesh."""
    work = mean_size(params["distribution"], params["side"], params["square"])
    return work * params["mean_service_s"] / (params["side"] ** 2 * params["load"])


def nominal(params: Mapping[str, Any]) -> tuple[float, float]:
    """(mean work per job in processor-seconds, mean inter-arrival time in s) of the
    distribution, exactly: the basis of the offered load."""
    work = mean_size(params["distribution"], params["side"], params["square"])
    return work * params["mean_service_s"], _interarrival(params)


def sample(params: Mapping[str, Any], seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """`jobs` jobs of the model: SWF columns plus mesh_width and mesh_height, and header
    lines saying what made them."""
    n, side, square = params["jobs"], params["side"], params["square"]
    streams = [np.random.default_rng(s)
               for s in np.random.SeedSequence(seed).spawn(ESTIMATES + 1)]
    cdf = np.cumsum(side_probabilities(params["distribution"], side))
    cdf[-1] = 1.0

    def sides(stream: int) -> np.ndarray:
        return np.searchsorted(cdf, streams[stream].random(n), side="right") + 1

    width = sides(WIDTHS)
    height = width.copy() if square else sides(HEIGHTS)
    iatm = _interarrival(params)
    submit = np.cumsum(streams[ARRIVALS].exponential(iatm, n))
    run = streams[SERVICE].exponential(params["mean_service_s"], n)
    estimate = np.maximum(0.0, run * (1.0 + params["estimate_cv"]
                                      * streams[ESTIMATES].standard_normal(n)))
    size = (width * height).astype(np.int64)
    columns = {
        "job_number": np.arange(1, n + 1), "submit_time": submit, "run_time": run,
        "allocated_processors": size, "requested_processors": size,
        "requested_time": estimate, "status": np.ones(n, dtype=np.int64),
        WIDTH: width.astype(np.int64), HEIGHT: height.astype(np.int64),
    }
    header = [f"; MaxProcs: {side * side}",
              f"; Note: Chu (1995) 2D-mesh workload, {params['distribution']} sides 1..{side}"
              f"{' (square jobs)' if square else ''}, load {params['load']:g} "
              f"(mean inter-arrival {iatm:.6g} s), exponential service, mean "
              f"{params['mean_service_s']:g} s, estimates N(y, {params['estimate_cv']:g} y) "
              "truncated at 0 as requested times; submesh sides in mesh_width, mesh_height"]
    return columns, header
