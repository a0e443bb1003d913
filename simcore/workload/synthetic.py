"""Synthetic workload models, one registry row each, sampled as SWF tables so that they take
the same path as traces.

A model is named on the command line as `<model>:<argument>` (`lublin:128`: the
Lublin-Feitelson model for 128 processors) with `--jobs` and `--seed`, and in a config as
`synthetic: {model: lublin, max_procs: 128, jobs: 2000, ...}`. A row names the model, its
parameters (the first is the argument after the colon), the module that samples it
(`WorkloadModel`, imported and checked when first used) and, for models of a particular
machine, that machine (the command line's default).
Models with a `jobs` parameter need `--jobs`; others (`fcs:scenario2`) fix their jobs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array
from simcore.base.contracts import hooks, load
from simcore.base.errors import ConfigError, SpecError
from simcore.base.params import Parameter, convert_all
from simcore.jobs.bsp import COLUMNS as BSP_COLUMNS
from simcore.jobs.submeshes import SHAPE_COLUMNS
from simcore.jobs.swf import FIELDS, SWFHeader, from_columns
from simcore.workload.cplant_stream import MACHINE as CPLANT_MACHINE
from simcore.workload.io import with_source
from simcore.workload.scenarios import MACHINE as FCS_MACHINE
from simcore.workload.scenarios import SCENARIOS as FCS_SCENARIOS

JOBS = Parameter("jobs", int, None, "jobs to sample", unit="jobs", minimum=1)


class WorkloadModel(Protocol):
    """A workload model's module: `sample(params, seed)` returns SWF columns (and BSP model
    columns, `simcore.jobs.bsp.COLUMNS`, or for 2D-mesh jobs their submesh sides,
    `simcore.jobs.submeshes`) and header lines. Its optional functions are `ModelHooks`."""

    def sample(self, params: Mapping[str, Any], seed: int, /
               ) -> tuple[dict[str, np.ndarray], list[str]]: ...


class ModelHooks:
    """The optional functions of a workload model's module, each as a module without it
    behaves."""

    @staticmethod
    def nominal(params: Mapping[str, Any]) -> tuple[float, float] | None:
        """The exact mean work per job (processor-seconds) and mean inter-arrival time (s)
        of the model's distributions, on which the offered load of its samples is then
        based: none (the samples' own)."""
        return None


@dataclass(frozen=True)
class ModelImplementation:
    """A workload model's module resolved against `WorkloadModel`, with its optional
    functions or their defaults (`ModelHooks`)."""

    sample: Callable[[Mapping[str, Any], int], tuple[dict[str, np.ndarray], list[str]]]
    nominal: Callable[[Mapping[str, Any]], tuple[float, float] | None]


@dataclass(frozen=True)
class Model:
    """A registered workload model, sampled by `module` (`WorkloadModel`). `machine`: the
    machine the model describes, if it is one."""

    name: str
    summary: str
    parameters: tuple[Parameter, ...]  # the first is the argument of `<model>:<argument>`
    module: str
    machine: str | None = None

    @property
    def sized(self) -> bool:
        """Whether the number of jobs is a parameter (`jobs`)."""
        return any(p.name == JOBS.name for p in self.parameters)

    @functools.cached_property
    def implementation(self) -> ModelImplementation:
        """Its module, checked against `WorkloadModel` (imported on first use, once)."""
        module = load(self.module, WorkloadModel, f"model {self.name}")
        return ModelImplementation(module.sample, **hooks(module, ModelHooks))

    def means(self, params: Mapping[str, Any]) -> tuple[float, float] | None:
        """(mean work per job, mean inter-arrival time) by the model's `nominal`, or None."""
        return self.implementation.nominal(params)


MODELS: dict[str, Model] = {row.name: row for row in (
    Model("lublin", "Lublin and Feitelson's model of rigid batch jobs (JPDC 2003)", (
        Parameter("max_procs", int, None, "processors of the machine the model describes",
                  unit="procs", minimum=1),
        JOBS,
        Parameter("job_type", str, "batch", "which of the model's job streams: batch, "
                  "interactive, both superposed (mixed) or the typeless whole-sample fit",
                  choices=("batch", "interactive", "mixed", "typeless")),
    ), "simcore.workload.lublin"),
    Model("chu", "Chu's 2D-mesh jobs (1995): w x h submeshes with sides from a uniform, "
          "decreasing or increasing distribution, Poisson arrivals, exponential service", (
        Parameter("distribution", str, None, "distribution of the sides w and h (drawn "
                  "independently): uniform, decreasing or increasing",
                  choices=("uniform", "decreasing", "increasing")),
        JOBS,
        Parameter("side", int, 32, "side of the square mesh the sizes are drawn for: sides "
                  "1..side, load relative to side^2 processors", unit="nodes", minimum=1),
        Parameter("square", bool, False, "square jobs, h = w (Chu's chapter 4)"),
        Parameter("load", float, 0.5, "offered load n x EXTM / (side^2 x IATM), n the exact "
                  "mean size; sets the mean inter-arrival time IATM", unit="fraction",
                  minimum=0.0, exclusive_minimum=True),
        Parameter("mean_service_s", float, 10.0, "mean of the exponential service times "
                  "(EXTM)", unit="s", minimum=0.0, exclusive_minimum=True),
        Parameter("estimate_cv", float, 0.0, "c of the estimated execution times, N(y, c y) "
                  "truncated at 0 for a run time y (Chu: 0, 0.5, 1)", unit="ratio",
                  minimum=0.0),
    ), "simcore.workload.chu"),
    Model("fcs", "Frachtenberg et al.'s four synthetic scenarios of BSP jobs (FCS, section "
          "3): 2 or 3 jobs of 128 processes arriving together", (
              Parameter("scenario", str, None, "which scenario", choices=FCS_SCENARIOS),
          ), "simcore.workload.scenarios", machine=FCS_MACHINE),
    Model("cplant-stream", "Leung et al.'s Cplant test stream (Table 1): 188 jobs of 2, 5, "
          "25 and 30 processors released at a fixed interval, run times proportional to "
          "size", (
              Parameter("noise", float, 0.05, "run times vary uniformly by +- this "
                        "fraction, seeded", unit="fraction", minimum=0.0, maximum=0.5),
              Parameter("release_s", float, 60.0, "time between releases", unit="s",
                        minimum=0.0),
              Parameter("seconds_per_processor", float, 36.0, "a job's run time per "
                        "processor before the noise (calibrated: the best strategy's "
                        "makespan)", unit="s", minimum=0.0, exclusive_minimum=True),
          ), "simcore.workload.cplant_stream", machine=CPLANT_MACHINE),
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
        """`<model>:<argument>` with `jobs` jobs (models whose number of jobs is a
        parameter), or None when `text` names no model."""
        name, sep, argument = text.partition(":")
        if not sep or name not in MODELS:
            return None
        row = MODELS[name]
        values = {row.parameters[0].name: argument}
        if row.sized or jobs is not None:
            values[JOBS.name] = jobs
        return cls.create(name, values)

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
    columns, header = MODELS[spec.model].implementation.sample(dict(spec.params), seed)
    source = {"kind": "synthetic", **spec.to_dict(), "seed": seed}
    lines = ("; Version: 2.2", "; Computer: synthetic", *header)
    table = from_columns({k: v for k, v in columns.items() if k in FIELDS}, SWFHeader(lines))
    for name, values in columns.items():
        if name not in FIELDS:
            kind = pa.int64() if name in SHAPE_COLUMNS else BSP_COLUMNS[name]
            table = table.append_column(pa.field(name, kind), arrow_array(values, kind))
    return with_source(table, source)

