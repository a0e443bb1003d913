"""Where a workload comes from, as the command line names it.

`--workload` takes one of
- a file: an SWF trace (`.swf`, `.swf.gz`; cleaned with the default rules) or a workload
  `.parquet` written by the workflow;
- a key of the trace catalogue (`SDSC-SP2-1998-4.2-cln`), acquired like the workflow does:
  from a mirror directory or the archive, checksum verified, into resources/traces/;
- a registered model, `<model>:<argument>` (`lublin:128`), sampled with `--jobs` and the
  run's seed (see `simcore.workload.synthetic`).
A value that could mean two of these is an error, never a guess.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from simcore.base import patterns
from simcore.base.errors import SpecError
from simcore.jobs.cleaning import CleaningOptions, clean
from simcore.workload.synthetic import MODELS, SyntheticSpec, synthesize


def describe_choices() -> str:
    """What --workload accepts, for help texts and errors."""
    models = ", ".join(f"{m.name}:{m.parameters[0].name.upper()}" for m in MODELS.values())
    return (f"an SWF file (.swf, .swf.gz), a workload .parquet, a trace of the catalogue "
            f"(config/traces.yaml) or a model ({models})")


def model_machine(value: str) -> str:
    """The machine of the model `value` names, if it describes one (`fcs:scenario1` ->
    flat:128): the default of --machine."""
    row = MODELS.get(value.partition(":")[0])
    if row is None or row.machine is None:
        raise SpecError(f"--machine: required for --workload {value!r} (only a model of "
                        "one machine, e.g. fcs:scenario1, brings its own)")
    return row.machine


def load_workload(value: str, jobs: int | None = None, seed: int = 0,
            cleaning: CleaningOptions | None = None,
            catalogue: str | os.PathLike[str] = patterns.CATALOGUE,
            mirrors: Sequence[str | os.PathLike[str]] = ()) -> pa.Table:
    """The job table `value` names (see the module docstring); SWF traces are cleaned
    with `cleaning` (default rules if None)."""
    from simcore.workload.traces import load_catalogue

    entries = load_catalogue(catalogue) if Path(catalogue).is_file() else {}
    meanings = []
    if Path(value).is_file():
        meanings.append(f"the file {value}")
    if value in entries:
        meanings.append(f"the catalogued trace {value}")
    model = _model(value, jobs)
    if model is not None:
        meanings.append(f"the model {model.model}")
    if len(meanings) > 1:
        raise SpecError(f"--workload {value!r} is ambiguous: {' and '.join(meanings)}; "
                        "name a file by a path with a directory, e.g. ./" + value)
    if not meanings:
        raise SpecError(f"--workload {value!r}: no such file, catalogued trace or model; "
                        f"expected {describe_choices()}")
    if model is None and jobs is not None:
        raise SpecError("--jobs: applies to a model; take a span of a trace with --first-jobs")
    if cleaning is not None and (model is not None or value.endswith(".parquet")):
        raise SpecError(f"--cleaning: applies to an SWF trace; --workload {value!r} is "
                        f"{meanings[0]}, whose jobs are not cleaned")
    if model is not None:
        return synthesize(model, seed)
    if value in entries:
        from simcore.workload.traces import acquire, mirror_dirs

        entry = entries[value]
        path = acquire(entry, patterns.TRACE.format(trace=value), mirror_dirs(mirrors))
        return _read(str(path), cleaning)
    return _read(value, cleaning)


def _model(value: str, jobs: int | None) -> SyntheticSpec | None:
    name, sep, _ = value.partition(":")
    if not sep or name not in MODELS:
        return None
    if MODELS[name].sized and jobs is None:
        raise SpecError(f"--workload {value}: a model needs --jobs, the number of jobs to sample")
    if not MODELS[name].sized and jobs is not None:
        raise SpecError(f"--jobs: model {name} has its own jobs; expected no --jobs")
    return SyntheticSpec.parse(value, jobs)


def _read(path: str, cleaning: CleaningOptions | None) -> pa.Table:
    from simcore.jobs.swf import read_swf
    from simcore.workload.io import read_workload

    return read_workload(path) if path.endswith(".parquet") else clean(read_swf(path), cleaning)
