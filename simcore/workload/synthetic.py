"""Synthetic workloads as SWF tables, so they take the same path as traces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import pyarrow as pa

from simcore.errors import ConfigError
from simcore.swf import SWFHeader, from_columns
from simcore.workload import lublin
from simcore.workload.io import with_source

MODELS = ("lublin",)


@dataclass(frozen=True)
class SyntheticSpec:
    """A published workload model and its size: `jobs` jobs for `max_procs` processors."""

    model: str
    jobs: int
    max_procs: int
    job_type: str = "batch"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ConfigError(f"model {self.model!r}; expected one of {MODELS}")
        if self.job_type not in lublin.JOB_TYPES:
            raise ConfigError(f"job_type {self.job_type!r}; expected one of {lublin.JOB_TYPES}")
        if self.jobs < 1 or self.max_procs < 1:
            raise ConfigError(f"jobs={self.jobs}, max_procs={self.max_procs}; expected >= 1")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], where: str) -> SyntheticSpec:
        """A spec from config; errors name the config key `where`."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; expected some of "
                              f"{sorted(cls.__dataclass_fields__)}")
        try:
            return cls(**values)  # type: ignore[arg-type]
        except (TypeError, ConfigError) as exc:
            raise ConfigError(f"{where}: {exc}") from None


def synthesize(spec: SyntheticSpec, seed: int) -> pa.Table:
    """The model's jobs for one seed, as an SWF table with a header saying what made it."""
    columns = lublin.generate(spec.jobs, spec.max_procs, seed, job_type=spec.job_type)
    header = SWFHeader((
        "; Version: 2.2",
        "; Computer: synthetic",
        f"; Installation: Lublin-Feitelson model ({spec.job_type} jobs)",
        f"; MaxJobs: {spec.jobs}",
        f"; MaxRecords: {spec.jobs}",
        f"; MaxNodes: {spec.max_procs}",
        f"; MaxProcs: {spec.max_procs}",
        f"; Note: U. Lublin and D. G. Feitelson, JPDC 63(11), 2003; seed {seed}",
    ))
    source = {"kind": "synthetic", **asdict(spec), "seed": seed}
    return with_source(from_columns(columns, header), source)

