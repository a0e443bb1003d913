"""The workflow configuration: its JSON schema, completed from the registries, and checks.

`workflow/schemas/config.schema.yaml` describes the file's structure; the name pattern
(`simcore.base.patterns.NAME`) and what the registries define (schedulers and their
parameters, machine kinds and allocators, workload models, workload transforms) are filled
into its `$defs` here, so the schema cannot fall behind the code; so are the defaults the code
gives keys a configuration leaves out (`default` annotations, which docs/configuration.md
shows). `validate` checks a
configuration against it and reports the first problem as a ConfigError naming the key
(`policies.bm.fn_tor: ...`); `simcore.sweep.experiments.plan` then checks what a schema
cannot (names that refer to each other, machine sizes).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcore.base.caches import remembered
from simcore.base.errors import ConfigError
from simcore.base.params import SEED
from simcore.base.patterns import NAME
from simcore.base.yamlfiles import read_yaml
from simcore.machines.curves.orderings import describe_choices as describe_orderings
from simcore.machines.registry import ALLOCATORS, KINDS, all_options
from simcore.machines.spec import MACHINE_TEXT
from simcore.policy import SCHEDULERS, all_parameters
from simcore.sweep.limits import check_runs
from simcore.workload.spec import FIXED, GRID, RENAMED, transforms
from simcore.workload.synthetic import MODELS


def schema(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The schema at `path` with its registry-derived definitions filled in."""
    document = read_yaml(path, ConfigError)
    defs = document.setdefault("$defs", {})
    defs["name"] = {"type": "string", "pattern": NAME.pattern}
    defs["policy"] = {"oneOf": [_one_policy(row) for row in SCHEDULERS.values()]}
    options = {name: p.schema() for name, p in all_options().items()}
    defs["machine"] = {"oneOf": [
        {"type": "string", "pattern": MACHINE_TEXT.pattern,
         "description": "kind:size, e.g. torus:4x4x8 (the kind's default allocator), or a "
                        "kind's own argument, e.g. " + ", ".join(
                            k.example for k in KINDS.values() if k.grammar is not None)},
        {"type": "object", "additionalProperties": False, "required": ["spec"],
         "properties": {"spec": {"type": "string", "description": "kind:size, as above"},
                        "allocator": {"enum": list(ALLOCATORS), "description": "the "
                                      "allocator (default: the kind's)"},
                        "ordering": {"type": "string", "description": describe_orderings()},
                        **options}}]}
    defs["synthetic"] = {"oneOf": [_object({"model": {"const": row.name}},
                                           {p.name: p.schema() for p in row.parameters},
                                           ["model", *(p.name for p in row.parameters
                                                       if p.default is None)])
                                   for row in MODELS.values()]}
    swept = {**all_parameters(), **all_options()}
    for axis in (FIXED, GRID):
        properties = {}
        for name, field in transforms().items():
            values = field.metadata["parameter"].schema()
            properties[name] = values if axis == FIXED else _axis(values)
            if name in RENAMED:  # still read under its former name
                properties[RENAMED[name]] = properties[name]
        if axis == GRID:  # any parameter of a policy or allocator option (experiments.py)
            properties.update((name, _axis(p.schema())) for name, p in sorted(swept.items())
                              if name not in properties)
        defs[axis] = {"type": "object", "additionalProperties": False,
                      "properties": properties}
    _defaults(document)
    return document


def _axis(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "items": values,
            "description": values["description"]}


def _defaults(document: dict[str, Any]) -> None:
    """The values the code gives keys a configuration leaves out, as the schema's `default`
    annotations (docs/configuration.md shows them; validation ignores them)."""
    from dataclasses import asdict

    from simcore.jobs.cleaning import CleaningOptions
    from simcore.sweep.experiments import DEFAULT_DATASET, EXPERIMENT_DEFAULTS
    from simcore.sweep.limits import Limits
    from simcore.sweep.slurm_cluster import DEFAULTS as SLURM_DEFAULTS

    top = document.get("properties", {})

    def annotate(node: Any, values: Mapping[str, Any]) -> None:
        properties = node.get("properties", {}) if isinstance(node, dict) else {}
        for key, value in values.items():
            if isinstance(properties.get(key), dict):
                properties[key].setdefault("default", json.loads(json.dumps(value)))

    annotate(document, {"dataset": DEFAULT_DATASET})
    annotate(top.get("workloads", {}).get("additionalProperties"),
             {"processors_per_unit": transforms()["processors_per_unit"].default})
    annotate(top.get("traces", {}).get("properties", {}).get("cleaning"),
             asdict(CleaningOptions()))
    experiment = top.get("experiments", {}).get("additionalProperties")
    annotate(experiment, EXPERIMENT_DEFAULTS)
    seeds = (experiment or {}).get("properties", {}).get("seeds")
    if isinstance(seeds, dict):
        seeds.setdefault("description", "one run of every grid point per seed; each is the "
                         + SEED.meaning)
    annotate(top.get("limits"), asdict(Limits()))
    annotate(top.get("sweep"), {"dask": {"backend": "local"}})
    annotate(top.get("sweep", {}).get("properties", {}).get("dask"), SLURM_DEFAULTS)


def _one_policy(row: Any) -> dict[str, Any]:
    return _object({"scheduler": {"const": row.name, "description": row.summary}},
                   {p.name: p.schema() for p in row.parameters}, ["scheduler"])


def _object(fixed: dict, properties: dict, required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": {**fixed, **properties}}


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A configuration file, read strictly (`simcore.base.yamlfiles`: a key given twice is an
    error); a ConfigError names the file and line otherwise."""
    config = read_yaml(path, ConfigError)
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: {type(config).__name__} at the top level; expected a "
                          "mapping of configuration keys")
    return config


def check_same_reading(ours: Any, theirs: Any, where: str = "") -> None:
    """Refuse a configuration that another reader (Snakemake's own YAML or JSON loader)
    read otherwise than `read_config`: a ConfigError names the first key whose values
    differ in type or value."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in sorted({*ours, *theirs}, key=str):
            inner = f"{where}.{key}" if where else str(key)
            if key not in ours or key not in theirs:
                reader = "Snakemake" if key in theirs else "simcore"
                raise ConfigError(f"{inner}: present only as {reader} reads the file; "
                                  "expected both to read it alike")
            check_same_reading(ours[key], theirs[key], inner)
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for i, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            check_same_reading(mine, other, f"{where}[{i}]")
    elif type(ours) is not type(theirs) or ours != theirs:
        raise ConfigError(f"{where or '(top level)'}: Snakemake reads {theirs!r}, simcore "
                          f"{ours!r}; expected a value both read alike (quote a string, "
                          "write a number plainly)")


def validate(config: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Check `config` against the schema at `path`; raise a ConfigError naming the key of
    the first problem (the most specific one where several alternatives fail). A
    configuration with more runs than its limit is refused first, before the schema reads
    every value of its lists (`simcore.sweep.limits.check_runs`). A configuration found
    valid is remembered by the hash of its content and of the schema file, until the
    package's source changes (every planning of a large configuration checks it again)."""
    check_runs(config)
    content = json.dumps(config, sort_keys=True, default=str).encode() + Path(path).read_bytes()
    remembered(f"valid-config:{hashlib.sha256(content).hexdigest()}",
               lambda: _check(config, path))


def _check(config: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """'valid', or the ConfigError of the first problem."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema(path))
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.path))
    if not errors:
        return "valid"
    error = _explained(jsonschema.exceptions.best_match(errors))
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    if error.validator == "oneOf" and isinstance(error.instance, Mapping):
        for key, names in (("scheduler", SCHEDULERS), ("model", MODELS)):
            if error.instance.get(key) not in names and key in error.instance:
                raise ConfigError(f"{where}: {key} {error.instance[key]!r}; expected one of "
                                  f"{', '.join(names)}")
    raise ConfigError(f"{where}: {error.message}")


def _explained(error: Any) -> Any:
    """For a failed choice between registry alternatives (a policy, a synthetic model),
    the error inside the alternative its `scheduler` or `model` names, if any."""
    if error.validator != "oneOf" or not isinstance(error.instance, Mapping):
        return error
    for i, alternative in enumerate(error.validator_value):
        for key in ("scheduler", "model"):
            named = alternative.get("properties", {}).get(key, {}).get("const")
            if named is not None and named == error.instance.get(key):
                inside = [e for e in error.context if e.relative_schema_path[0] == i]
                return max(inside, key=lambda e: len(e.absolute_path)) if inside else error
    return error

