"""Schedulers: numba decision steps, one policy struct each (see `simcore.policy`).

Each scheduler module defines the struct its registry row builds (`kernel_policy`) and
implements `decide` for it; the engine calls `decide` once per event time, after the
completions and arrivals of that time.
"""

from __future__ import annotations

from simcore.jit import generic


@generic
def decide(policy, m, st, jobs, t):
    """One scheduler invocation at time t: start (or plan) waiting jobs on machine m."""
    raise NotImplementedError
