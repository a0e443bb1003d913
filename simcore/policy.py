"""Validated policy specifications: a scheduler of the registry
(`simcore.schedulers.registry`, whose rows and look-ups are importable from here too)
and the values of its parameters (`PolicySpec`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from simcore.base.params import convert_all
from simcore.schedulers.contract import SchedulerImplementation
from simcore.schedulers.registry import (
    SCHEDULERS,
    START_DELAY,
    Scheduler,
    all_parameters,
    get_scheduler,
)

#: The rows stay importable from here, where most callers look for them.
__all__ = ["SCHEDULERS", "START_DELAY", "PolicySpec", "Scheduler", "all_parameters",
           "get_scheduler"]


class PolicySpec:
    """A validated scheduling policy: a scheduler and the values of its parameters
    (defaults filled in); parameters read as attributes (`policy.start_delay_s`).
    `key()` names it in run identities."""

    __slots__ = ("_values", "scheduler")

    def __init__(self, scheduler: str, **params: Any) -> None:
        row = get_scheduler(scheduler)
        values = convert_all(row.parameters, params, f"scheduler {scheduler}")
        object.__setattr__(self, "scheduler", scheduler)
        object.__setattr__(self, "_values", dict(sorted(values.items())))

    @classmethod
    def from_params(cls, scheduler: str, params: Mapping[str, Any] | None = None) -> PolicySpec:
        """A policy from a scheduler name and parameters (config values or command-line
        strings); parameters that do not apply to the scheduler are an error naming them."""
        return cls(scheduler, **dict(params or {}))

    @property
    def row(self) -> Scheduler:
        return SCHEDULERS[self.scheduler]

    @property
    def implementation(self) -> SchedulerImplementation:
        """The scheduler's module, resolved against its contract on first use: every call
        into it (policy struct, own engine, metrics) goes through this."""
        return self.row.implementation

    def params(self) -> dict[str, Any]:
        """The parameters that apply to this scheduler, defaults filled in, sorted."""
        return dict(self._values)

    def replace(self, **changes: Any) -> PolicySpec:
        return PolicySpec(self.scheduler, **{**self._values, **changes})

    def key(self) -> str:
        """Canonical JSON of the scheduler and its parameters."""
        return json.dumps({"scheduler": self.scheduler, **self._values}, sort_keys=True)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"policy {self.scheduler} has no parameter {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("PolicySpec is immutable; use replace()")

    def __reduce__(self) -> tuple:
        return (PolicySpec.from_params, (self.scheduler, self._values))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicySpec) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self._values.items())
        return f"PolicySpec({self.scheduler!r}{args})"

    def on(self, capabilities: frozenset[str]) -> PolicySpec:
        """The policy as it runs on a machine whose allocator has `capabilities`:
        parameters it cannot use (growth where no job grows) at their neutral value, as
        the sweeps record them."""
        neutral = {p.name: p.neutral for p in self.row.parameters
                   if p.needs is not None and p.needs not in capabilities}
        return self.replace(**neutral) if neutral else self

    def describe(self, capabilities: frozenset[str] | None = None) -> str:
        """The scheduler and its parameter values in the scheduler's order, e.g.
        "backfill start_delay_s=0 reservation=True estimates=requested": the one
        description the command line and the tables print. Parameters that mean nothing
        on a machine whose allocator has `capabilities` (growth where no job grows) are
        left out; None: all shown."""
        shown = [(p.name, self._values[p.name]) for p in self.row.parameters
                 if capabilities is None or p.needs is None or p.needs in capabilities]
        return self.scheduler + "".join(
            f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in shown)

    def __str__(self) -> str:
        return self.describe()
