"""Named, typed, documented parameters with their valid ranges.

Scheduler and allocator parameters and workload transforms are all `Parameter`s, so one
definition gives the conversion of command-line strings and config values, the range
check and its message, the JSON schema of the config file, the result column's type and
the text of `simcore list`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simcore.base.errors import SpecError

INT64_MAX = 2**63 - 1
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


@dataclass(frozen=True)
class Parameter:
    """One parameter: its name, type (bool, int, float or str), default, meaning and range.

    `optional` admits None (no value: the transform or rule is off). `needs` names an
    allocator capability without which the parameter cannot change a run (e.g. growth
    where no job grows); experiments then use `neutral` there, so identical runs are
    planned once.
    """

    name: str
    type: type
    default: Any
    meaning: str
    unit: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    needs: str | None = None
    neutral: Any = None

    @property
    def expected(self) -> str:
        """What a valid value looks like, in words."""
        if self.choices:
            text = " or ".join(repr(c) for c in self.choices)
        elif self.type is bool:
            text = "true or false"
        elif self.type is str:
            text = "a string"
        else:
            text = "an integer" if self.type is int else "a finite number"
            bounds = []
            if self.minimum is not None:
                bounds.append(f"{'>' if self.exclusive_minimum else '>='} {self.minimum:g}")
            if self.maximum is not None:
                bounds.append(f"<= {self.maximum:g}")
            elif self.type is int:
                bounds.append("< 2^63")
            if bounds:
                text += " " + " and ".join(bounds)
            if self.unit:
                text += f" ({self.unit})"
        return text + (", or null" if self.optional else "")

    def convert(self, value: Any) -> Any:
        """`value` (a config value, or a command-line string) as this parameter's type,
        checked; a SpecError names the parameter and what was expected."""
        try:
            converted = self._typed(value)
        except (TypeError, ValueError, OverflowError):
            converted = _INVALID
        if converted is _INVALID or not self._in_range(converted):
            raise SpecError(f"{self.name}={value!r}; expected {self.expected}")
        return converted

    def _typed(self, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None if self.optional else _INVALID
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
                return value.lower() in _TRUE
            return _INVALID
        if self.type is str:
            return value if isinstance(value, str) else _INVALID
        if isinstance(value, bool):
            return _INVALID
        if isinstance(value, str):
            value = int(value) if self.type is int else float(value)
        if self.type is int:
            if isinstance(value, float):  # 300.0 is not an integer field's value
                return _INVALID
            return int(value)
        if not isinstance(value, int | float):
            return _INVALID
        return float(value)

    def _in_range(self, value: Any) -> bool:
        if value is None:
            return True
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, bool) or self.type is str:
            return True
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            return False
        if self.minimum is not None and (
                value < self.minimum or (self.exclusive_minimum and value == self.minimum)):
            return False
        return self.maximum is None or value <= self.maximum

    def schema(self) -> dict[str, Any]:
        """JSON schema of the parameter's values, with its meaning as the description."""
        if self.choices:
            schema: dict[str, Any] = {"enum": list(self.choices)}
        else:
            schema = {"type": {bool: "boolean", int: "integer", float: "number",
                               str: "string"}[self.type]}
            if self.minimum is not None:
                schema["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = \
                    self.minimum
            if self.maximum is not None:
                schema["maximum"] = self.maximum
            if self.type is int:
                schema.setdefault("minimum", -INT64_MAX - 1)
                schema["maximum"] = min(schema.get("maximum", INT64_MAX), INT64_MAX)
        if self.optional:
            schema = {"anyOf": [schema, {"type": "null"}]}
        return {**schema, "description": self.meaning}

    def describe(self) -> dict[str, Any]:
        """Plain data for `simcore list`."""
        return {"name": self.name, "type": self.type.__name__, "default": self.default,
                "meaning": self.meaning, "expected": self.expected, "unit": self.unit}


_INVALID = object()


def convert_all(parameters: tuple[Parameter, ...], values: dict[str, Any],
                where: str) -> dict[str, Any]:
    """Every parameter's value from `values` (defaults filled in), checked; stray names
    and bad values raise a SpecError prefixed with `where`."""
    known = {p.name: p for p in parameters}
    stray = sorted(set(values) - set(known))
    if stray:
        raise SpecError(f"{where}: parameter(s) {stray} do not apply; expected some of "
                        f"{sorted(known)}")
    out = {}
    for p in parameters:
        try:
            out[p.name] = p.convert(values[p.name]) if p.name in values else p.default
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
    return out


#: The seed of a run (an experiment's `seeds`, `simcore run --seed`).
SEED = Parameter("seed", int, 0, "seed of every random draw of a run (synthetic workloads, "
                 "shapes)", minimum=0)
