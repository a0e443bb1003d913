"""Leung et al. (2002)'s Cplant test stream (their Table 1) as a workload model.

The paper ran one stream of 188 jobs on a 128-processor development Cplant: 91 jobs of 2,
33 of 5, 31 of 25 and 33 of 30 processors, each running a communication test suite
(all-to-all broadcast, all-pairs ping-pong, ring). It does not state the arrivals or the
run times; these are chosen here, before any run:

- order: the large jobs (25, 30) are mixed evenly, as are the small ones (2, 5); the first
  four large jobs (30, 25, 30, 25: 110 processors) fill the machine, then the other 60
  large and the 124 small jobs are interspersed evenly (`evenly`), so the last job is small;
- releases: one job every `release_s` seconds;
- run times: proportional to the job's size, `seconds_per_processor` x p (the suite's
  pairwise tests grow with p), times a seeded factor uniform in 1 +- `noise`, standing in
  for the run-to-run variation the paper reports (4-16% per job type); requested times are
  the size's run time x (1 + noise).

`seconds_per_processor` (36 s) was chosen so that the stream, with run times that do not
depend on placement, takes about as long as the paper's best strategy (4:32 against 4:25):
absolute makespans are calibrated, only the strategies' ratios are comparable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simcore.base.draws import STREAMS, job_uniforms

#: The machine the paper measured on, as torus:4x8x4 (docs/leung2002.md): x the processor's
#: slot in its switch, y the switch's column, z its compute row.
MACHINE = "torus:4x8x4"
#: Jobs per size, as the paper lists them.
SIZES = {2: 91, 5: 33, 25: 31, 30: 33}
FILLING = 4  # large jobs released first
NOISE_STREAM = STREAMS["leung_noise"]


def evenly(first: Sequence[int], second: Sequence[int]) -> list[int]:
    """The two lists merged so that each is spread evenly over the result: the k-th of n
    items sits at (k + 1/2) / n; ties go to `first`."""
    keyed = [((k + 0.5) / len(first), 0, k, v) for k, v in enumerate(first)]
    keyed += [((k + 0.5) / len(second), 1, k, v) for k, v in enumerate(second)]
    return [v for *_, v in sorted(keyed)]


def stream_sizes() -> list[int]:
    """Job sizes in release order (module docstring)."""
    large = evenly([30] * SIZES[30], [25] * SIZES[25])
    small = evenly([2] * SIZES[2], [5] * SIZES[5])
    return large[:FILLING] + evenly(large[FILLING:], small)


def sample(params: Mapping[str, Any], seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """SWF columns and header lines of the stream; `seed` draws the run-time variation."""
    noise, release_s = params["noise"], params["release_s"]
    size = np.array(stream_sizes(), dtype=np.int64)
    ids = np.arange(1, size.shape[0] + 1)
    base = params["seconds_per_processor"] * size
    run = base * (1 + noise * (2 * job_uniforms(seed, NOISE_STREAM, ids) - 1))
    columns = {
        "job_number": ids, "submit_time": (ids - 1) * release_s, "run_time": run,
        "allocated_processors": size, "requested_processors": size,
        "requested_time": base * (1 + noise),
    }
    n = size.shape[0]
    header = ["; Installation: Leung et al. (2002), the Cplant test stream of Table 1",
              f"; MaxJobs: {n}", f"; MaxRecords: {n}", "; MaxProcs: 128"]
    return columns, header
