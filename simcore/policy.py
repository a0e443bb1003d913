"""Scheduling policy specifications: a scheduler name and the parameters that apply to it.

| scheduler | what it does                                | parameters                       |
|-----------|---------------------------------------------|----------------------------------|
| fcfs      | first come, first served                    | start_delay_s                    |
| backfill  | FCFS + backfilling (EASY on flat machines)  | + reservation, max_growth, estimates |
| migration | FCFS + migration (torus and mesh only)      | + fn_tor, fn_max                 |
| bm        | FCFS, migration, FCFS, backfilling          | all of the above                 |

- start_delay_s: seconds between allocation and start (Krevat: 1 s; default 0).
- reservation: backfilling keeps a reservation for the head job (weak/EASY backfilling);
  false gives plain skip-ahead.
- max_growth: units a job may grow by during backfilling on box machines (Krevat's I).
- estimates: what backfilling believes run times are: `requested` (the SWF requested time
  where given, else the run time) or `actual`.
- fn_tor, fn_max: migrate when free units / machine >= fn_tor and units of the largest free
  partition / free units <= fn_max (Krevat: 0.1 and 0.7; always migrate: 0 and 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from simcore.errors import SpecError

SCHEDULERS = ("fcfs", "backfill", "migration", "bm")
_COMMON = {"start_delay_s"}
_BACKFILL = {"reservation", "max_growth", "estimates"}
_MIGRATION = {"fn_tor", "fn_max"}
PARAMETERS = {
    "fcfs": _COMMON,
    "backfill": _COMMON | _BACKFILL,
    "migration": _COMMON | _MIGRATION,
    "bm": _COMMON | _BACKFILL | _MIGRATION,
}


@dataclass(frozen=True)
class PolicySpec:
    """A validated scheduling policy; `key()` names it in run identities."""

    scheduler: str
    start_delay_s: float = 0.0
    reservation: bool = True
    max_growth: int = 1
    estimates: str = "requested"
    fn_tor: float = 0.1
    fn_max: float = 0.7

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise SpecError(f"scheduler {self.scheduler!r}; expected one of {SCHEDULERS}")
        checks = {
            "start_delay_s": self.start_delay_s >= 0,
            "max_growth": isinstance(self.max_growth, int) and self.max_growth >= 0,
            "estimates": self.estimates in ("requested", "actual"),
            "fn_tor": 0.0 <= self.fn_tor <= 1.0,
            "fn_max": 0.0 <= self.fn_max <= 1.0,
            "reservation": isinstance(self.reservation, bool),
        }
        for name, ok in checks.items():
            if not ok:
                raise SpecError(f"policy {self.scheduler}: {name}={getattr(self, name)!r} is "
                                f"invalid; expected {_EXPECTED[name]}")

    @classmethod
    def from_params(cls, scheduler: str, params: Mapping[str, Any] | None = None) -> PolicySpec:
        """A policy from a scheduler name and parameters; parameters that do not apply to
        the scheduler are an error naming them."""
        if scheduler not in SCHEDULERS:
            raise SpecError(f"scheduler {scheduler!r}; expected one of {SCHEDULERS}")
        params = dict(params or {})
        stray = sorted(set(params) - PARAMETERS[scheduler])
        if stray:
            raise SpecError(
                f"parameter(s) {stray} do not apply to scheduler {scheduler}; "
                f"expected some of {sorted(PARAMETERS[scheduler])}"
            )
        types = {f.name: f.type for f in fields(cls)}
        converted = {k: _convert(k, v, types[k]) for k, v in params.items()}
        return cls(scheduler, **converted)

    def params(self) -> dict[str, Any]:
        """The parameters that apply to this scheduler, defaults filled in."""
        values = asdict(self)
        return {k: values[k] for k in sorted(PARAMETERS[self.scheduler])}

    def key(self) -> str:
        """Canonical JSON of the scheduler and its applicable parameters."""
        return json.dumps({"scheduler": self.scheduler, **self.params()}, sort_keys=True)

    def __str__(self) -> str:
        return self.scheduler + "".join(f" {k}={v}" for k, v in self.params().items())


_EXPECTED = {
    "start_delay_s": "seconds >= 0",
    "max_growth": "an integer >= 0",
    "estimates": "'requested' or 'actual'",
    "fn_tor": "a fraction in [0, 1]",
    "fn_max": "a fraction in [0, 1]",
    "reservation": "true or false",
}


def _convert(name: str, value: Any, annotation: str) -> Any:
    """Parameters from the command line arrive as strings; config values are typed."""
    if not isinstance(value, str) or annotation == "str":
        return float(value) if annotation == "float" and isinstance(value, int) else value
    try:
        if annotation == "bool":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        return int(value) if annotation == "int" else float(value)
    except ValueError:
        raise SpecError(f"parameter {name}={value!r}; expected {_EXPECTED[name]}") from None
