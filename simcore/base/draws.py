"""Counter-based uniform draws: one per id, from a hash of (seed, stream, id).

A draw depends only on the run's seed, its stream and the id it is for, never on how
many other draws were made or in what order: a subset of jobs gets the same draws as in
the whole trace, and a grid over one transform leaves every other draw unchanged. Every
use of the draws has its own stream in STREAMS, the one list of them, so that no two uses
ever share draws (a failure of unit i and the shaking of job i, say).
"""

from __future__ import annotations

import numpy as np

#: Every stream, by use. Numbers are part of every result drawn from them: append, never
#: renumber.
STREAMS: dict[str, int] = {
    "fat": 1,  # workload/shapes: slim or fat shape
    "torus": 2,  # workload/shapes: torus or mesh
    "replica": 3,  # workload/transforms: arrival jitter of replicated copies
    "shake": 4,  # workload/transforms: arrival shaking
    "insert": 5,  # workload/transforms: arrival times of inserted jobs
    "bsp_pattern": 6,  # timeshare/bsp: synchronisation pattern
    "bsp_granularity": 7,  # timeshare/bsp: compute time per iteration
    "bsp_imbalance": 8,  # timeshare/bsp: imbalanced or not
    "failure_up": 9,  # failures: times between a unit's failures
    "failure_hit": 10,  # failures: which unit of a domain a trace's failure hits
    "leung_noise": 11,  # leung2002: run-time variation of the Table 1 stream
    "estimate": 12,  # workload/transforms: a requested time of the f-model
    "down_set": 13,  # failures: which domains a static down set takes out of service
}


def job_uniforms(seed: int, stream: int, job_ids: np.ndarray) -> np.ndarray:
    """Uniform draws in [0, 1), one per id, from a splitmix64 hash of (seed, stream, id)."""
    with np.errstate(over="ignore"):
        x = (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
             ^ np.uint64(stream) * np.uint64(0xBF58476D1CE4E5B9)
             ^ np.asarray(job_ids).astype(np.uint64))
        for _ in range(2):
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)
