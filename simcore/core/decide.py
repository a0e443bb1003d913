"""The scheduling interface the event engine calls: one decision step per event time.

Each scheduler module (`simcore.schedulers`) defines the struct its registry row builds
(`kernel_policy`) and implements `decide` for it with `simcore.base.jit.implements`; the
engine calls `decide` once per event time, after the completions and arrivals of that time.
"""

from __future__ import annotations

from simcore.base.jit import generic


@generic
def decide(policy, m, st, jobs, t):
    """One scheduler invocation at time t: start (or plan) waiting jobs on machine m."""
    raise NotImplementedError
