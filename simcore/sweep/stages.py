"""Seeds planned to decide (Stein's two-stage procedure): a pilot of a few seeds fixes,
once, how many seeds every configuration of an experiment needs for a precision target.

An experiment's `seeds: {first: F, pilot: N0, max: M, target: {metric: C,
relative_half_width: r, level: L}}` runs seeds F..F+N0-1 first (the pilot). Once every
pilot run is in the run cache, each configuration (runs differing only in seed) needs
n_c = N0 x (h / (r x |mean|))^2 seeds, rounded up, where h is the half-width of the
level-L confidence interval of the mean of C over its pilot seeds
(`simcore.base.confidence.runs_for_target`, the tables' own formula); n is the largest
n_c, at least N0, at most M, and the second stage is seeds F+N0..F+n-1. n depends only on
the pilot's stored results, so the same configuration and store always plan the same
seeds; every seed's run is the run a plain list of seeds would plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simcore.base.confidence import half_width, mean, runs_for_target
from simcore.core.columns import RUN_METRICS

#: The summary columns a target may name: the numeric run metrics.
METRICS = tuple(c.name for c in RUN_METRICS if c.type in (int, float))


@dataclass(frozen=True)
class TwoStage:
    """An experiment's two-stage plan of seeds."""

    first: int
    pilot: int
    max: int
    metric: str
    relative_half_width: float
    level: float

    def pilot_seeds(self) -> list[int]:
        return self.seeds(self.pilot)

    def seeds(self, n: int) -> list[int]:
        """Seeds first..first+n-1."""
        return list(range(self.first, self.first + n))

    def needed(self, values: Sequence[float | None]) -> tuple[int, float | None]:
        """The seeds one configuration needs from its pilot values of the metric, capped by
        `max`, and the pilot's relative half-width (null where it is undefined: fewer than
        two values, or a zero mean, which need `max`)."""
        spread, centre = half_width(values, self.level), mean(values)
        relative = None if spread is None or not centre else spread / abs(centre)
        wanted = runs_for_target(self.pilot, relative, self.relative_half_width)
        return min(self.max, self.max if wanted is None else wanted), relative


@dataclass(frozen=True)
class Decision:
    """The second stage fixed from the pilot: n seeds in all, and the configuration with
    the largest relative half-width (its label and value; null where undefined)."""

    n: int
    widest: str
    relative: float | None


def decide(stage: TwoStage, pilots: Mapping[str, Sequence[float | None]]) -> Decision:
    """n from the pilot values of the metric of each configuration (by label, in plan
    order): the largest n_c, at least the pilot, at most `max`. A configuration whose
    pilot merged into one run (nothing random) needs no more seeds."""
    n, widest, relative, largest = stage.pilot, "", None, -1.0
    for label, values in pilots.items():
        if len(values) < 2:
            continue
        needed, spread = stage.needed(values)
        n = max(n, needed)
        rank = math.inf if spread is None else spread
        if rank > largest:
            widest, relative, largest = label, spread, rank
    return Decision(n, widest, relative)
