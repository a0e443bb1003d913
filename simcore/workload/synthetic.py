"""Synthetic workload models, one registry row each, sampled as SWF tables so that they take
the same path as traces.

A model is named on the command line as `<model>:<argument>` (`lublin:128`: the
Lublin-Feitelson model for 128 processors) with `--jobs` and `--seed`, and in a config as
`synthetic: {model: lublin, max_procs: 128, jobs: 2000, ...}`. A row names the model, its
parameters (the first is the argument after the colon) and the function that samples it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from simcore.errors import ConfigError, SpecError
from simcore.params import Parameter, convert_all
from simcore.swf import SWFHeader, from_columns
from simcore.workload.io import with_source

JOBS = Parameter("jobs", int, None, "jobs to sample", unit="jobs", minimum=1)


@dataclass(frozen=True)
class Model:
    """A registered workload model: `sample(params, seed)` in `function` ("module:name")
    returns SWF columns and header lines."""

    name: str
    summary: str
    parameters: tuple[Parameter, ...]  # the first is the argument of `<model>:<argument>`
    function: str

    def sampler(self) -> Callable[[Mapping[str, Any], int], tuple[dict, list[str]]]:
        module, name = self.function.split(":")
        return getattr(importlib.import_module(module), name)


MODELS: dict[str, Model] = {row.name: row for row in (
    Model("lublin", "Lublin and Feitelson's model of rigid batch jobs (JPDC 2003)", (
        Parameter("max_procs", int, None, "processors of the machine the model describes",
                  unit="procs", minimum=1),
        JOBS,
        Parameter("job_type", str, "batch", "which of the model's job streams: batch, "
                  "interactive, both superposed (mixed) or the typeless whole-sample fit",
                  choices=("batch", "interactive", "mixed", "typeless")),
    ), "simcore.workload.lublin:sample"),
)}


@dataclass(frozen=True)
class SyntheticSpec:
    """A model and the values of its parameters (defaults filled in, checked)."""

    model: str
    params: tuple[tuple[str, Any], ...]

    @classmethod
    def create(cls, model: str, values: Mapping[str, Any]) -> SyntheticSpec:
        if model not in MODELS:
            raise SpecError(f"model {model!r}; expected one of {', '.join(MODELS)}")
        row = MODELS[model]
        checked = convert_all(row.parameters, dict(values), f"model {model}")
        missing = [p.name for p in row.parameters if checked[p.name] is None]
        if missing:
            raise SpecError(f"model {model}: expected a value for {', '.join(missing)}")
        return cls(model, tuple(sorted(checked.items())))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str) -> SyntheticSpec:
        """A spec from config (`model` plus parameters); errors name the config key."""
        values = dict(values)
        try:
            return cls.create(values.pop("model", None), values)
        except SpecError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    @classmethod
    def parse(cls, text: str, jobs: int | None) -> SyntheticSpec | None:
        """`<model>:<argument>` with `jobs` jobs, or None when `text` names no model."""
        name, sep, argument = text.partition(":")
        if not sep or name not in MODELS:
            return None
        return cls.create(name, {MODELS[name].parameters[0].name: argument, "jobs": jobs})

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, **dict(self.params)}

    def __str__(self) -> str:
        values = dict(self.params)
        first = MODELS[self.model].parameters[0].name
        rest = "".join(f" {k}={v}" for k, v in values.items() if k != first)
        return f"{self.model}:{values[first]}{rest}"


def synthesize(spec: SyntheticSpec, seed: int) -> pa.Table:
    """The model's jobs for one seed, as an SWF table whose header and metadata say what
    made it."""
    columns, header = MODELS[spec.model].sampler()(dict(spec.params), seed)
    source = {"kind": "synthetic", **spec.to_dict(), "seed": seed}
    lines = ("; Version: 2.2", "; Computer: synthetic", *header)
    return with_source(from_columns(columns, SWFHeader(lines)), source)
