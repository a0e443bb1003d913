"""The four synthetic scenarios of Frachtenberg et al., section 3, as a workload model.

Every job is the paper's "building block": 128 processes (32 nodes of 4 processors, the
`flat:128` machine) in a ring, computing 1 ms per iteration and synchronising in 50 us
(communication "completes in a few tens of us", T_spin is twice the average operation),
so that the basic job runs 60 s in isolation (57,142.9 iterations of 1.05 ms). All jobs
of a scenario arrive together at time 0, in job order. Blocks of four processes are the
nodes; "heavy" nodes compute k x 1.05 ms - 50 us per iteration, so that an iteration takes
exactly k times the basic one (the paper's footnote 4: the speed ratio is "slightly over
2:1", because the communication time is unchanged).

1. two balanced basic jobs;
2. two complementing imbalanced jobs: job 1's odd nodes are heavy (k = 2), job 2's even
   nodes; each runs 120 s alone;
3. two non-communicating 60 s jobs computing on the odd nodes only, and a communicating
   180 s job whose even nodes are heavy (k = 3) and odd nodes compute 1 ms: 180 s of
   work per processor in all;
4. scenario 2's two jobs and the basic job (in that order).

`simcore.tools.frachtenberg2003` simulates them and renders the paper's tables beside
ours: `python -m simcore.tools.frachtenberg2003`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from simcore.jobs.bsp import NONE, RING, BSPJobs

PROCESSES = 128
MACHINE = "flat:128"
NODE = 4  # processors per node: the blocks of the imbalance patterns
COMPUTE_S = 1e-3
COMM_S = 50e-6
BASIC_S = 60.0  # the basic job's isolated run time

#: The paper's results (termination time of each job in s, turnaround, mean response).
PAPER = {
    "scenario1": {"fcfs": (60, 120, 120, 90), "gang": (124, 124, 124, 124),
                  "spin-block": (126, 134, 134, 130), "fcs": (125, 126, 126, 126)},
    "scenario2": {"fcfs": (120, 240, 240, 180), "gang": (244, 245, 245, 245),
                  "spin-block": (193, 194, 194, 194), "fcs": (197, 197, 197, 197)},
    "scenario3": {"fcfs": (60, 121, 301, 301, 161), "gang": (185, 186, 308, 308, 226),
                  "spin-block": (144, 142, 244, 244, 177), "fcs": (192, 193, 197, 197, 194)},
    "scenario4": {"fcfs": (120, 241, 302, 302, 221), "gang": (185, 185, 305, 305, 225),
                  "spin-block": (213, 214, 276, 276, 234), "fcs": (252, 253, 155, 253, 220)},
}
SCENARIOS = tuple(PAPER)


def _heavy(k: float) -> float:
    """Compute per iteration of a process whose iterations take k basic iterations."""
    return k * (COMPUTE_S + COMM_S) - COMM_S


# (pattern, even-node compute, odd-node compute, isolated run time) of each job
_BALANCED = (RING, COMPUTE_S, COMPUTE_S, BASIC_S)
_ODD_HEAVY = (RING, COMPUTE_S, _heavy(2), 2 * BASIC_S)
_EVEN_HEAVY = (RING, _heavy(2), COMPUTE_S, 2 * BASIC_S)
_ODD_WORKER = (NONE, 0.0, 1.0, BASIC_S)  # no synchronisation: 60 s of work on odd nodes
JOBS: dict[str, tuple[tuple[int, float, float, float], ...]] = {
    "scenario1": (_BALANCED, _BALANCED),
    "scenario2": (_ODD_HEAVY, _EVEN_HEAVY),
    "scenario3": (_ODD_WORKER, _ODD_WORKER, (RING, _heavy(3), COMPUTE_S, 3 * BASIC_S)),
    "scenario4": (_ODD_HEAVY, _EVEN_HEAVY, _BALANCED),
}


def sample(params: Mapping[str, Any], seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """SWF and BSP columns and header lines of one scenario (the `fcs` workload model;
    nothing is random, `seed` is not used)."""
    name = params["scenario"]
    rows = JOBS[name]
    n = len(rows)
    pattern, even, odd, run = (np.array(column) for column in zip(*rows, strict=True))
    bsp = BSPJobs(pattern, even, odd, np.full(n, NODE), np.where(pattern == NONE, 0.0,
                                                                  COMM_S))
    columns = {
        "job_number": np.arange(1, n + 1), "submit_time": np.zeros(n), "run_time": run,
        "allocated_processors": np.full(n, PROCESSES),
        "requested_processors": np.full(n, PROCESSES), "requested_time": run,
        **bsp.columns(),
    }
    header = [f"; Installation: Frachtenberg et al., FCS synthetic {name}",
              f"; MaxJobs: {n}", f"; MaxRecords: {n}", f"; MaxNodes: {PROCESSES // NODE}",
              f"; MaxProcs: {PROCESSES}"]
    return columns, header
