"""What a run depends on besides its inputs: the registry rows it uses and the code it runs.

A run key (`simcore.sweep.experiments.Shard.run_key`) hashes the workload's content, the
transforms, the seed, the machine and policy specifications (every parameter, defaults
filled in), the result schema's version and `definitions(shard)`, which holds

- the rows the run uses, as `simcore.base.fingerprint.definition` writes them (module,
  variant, capabilities and parameter definitions with their defaults; no summary or help
  text): its scheduler's, its allocator's, its machine kind's and, for a sample of a
  workload model, the model's. No other row is part of it, so adding a row, or editing
  any row's help text, re-simulates nothing;
- the digest of the source closure of the modules the run executes (`code_modules`): the
  simulation entry point and the workload transforms, the scheduler's module, the
  allocator's (and its ordering's), the modules reading the kind's descriptions, the
  model's (for a trace: the fidelity of a replay of its log, which the summary stores),
  the extension transforms' that act in the run, and every simcore module they import.
  The registries (REGISTRIES) are neither included nor followed: they enter through the
  rows above. Planning, the runner, the
  progress reporter, the Slurm cluster and the reporting are never imported by those
  modules, so they are not part of any run's identity either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simcore.base.caches import closure_digests
from simcore.base.fingerprint import ROOT_NAME, closure, definition
from simcore.sweep.experiments import Shard
from simcore.workload.synthetic import MODELS

#: Modules whose content enters a run key only through the rows the run uses: the
#: registries of schedulers, machine kinds and allocators, workload models, workload
#: transforms and output columns.
REGISTRIES = ("simcore.schedulers.registry", "simcore.machines.registry",
              "simcore.workload.synthetic", "simcore.workload.spec", "simcore.core.columns")
#: Neither included in a run's code nor followed: the registries, and the package's own
#: `__init__` (its lazy table of public names and the version string run no simulation).
STOP = (ROOT_NAME, *REGISTRIES)
#: What every run executes: the simulation and the workload transforms.
RUN_MODULES = ("simcore.simulate", "simcore.workload.transforms")
#: What a run on a trace executes besides: the fidelity of a replay of the log, which its
#: summary stores (`simcore.fidelity.runs`).
TRACE_MODULES = ("simcore.fidelity.runs",)


def code_modules(shard: Shard) -> tuple[str, ...]:
    """The modules whose source closure is the code a shard's runs execute: RUN_MODULES,
    the scheduler's, the machine's (`MachineSpec.modules`), the workload model's for a
    model's sample, else TRACE_MODULES, and those of the extension transforms that act in
    any of its runs."""
    model = (MODELS[shard.source.synthetic.model].module,) \
        if shard.source.synthetic is not None else TRACE_MODULES
    specs = {id(run.transforms): run.transforms for run in shard.runs}.values()
    extensions = sorted({module for spec in specs for _, module in spec.extensions()})
    return (*RUN_MODULES, shard.policy_spec.row.module, *shard.machine_spec.modules, *model,
            *extensions)


def code_files(shard: Shard) -> list[Path]:
    """The source files of a shard's code (paths)."""
    return closure(code_modules(shard), STOP)


def rows(shard: Shard) -> dict[str, Any]:
    """The registry rows a shard's runs use, in their canonical form."""
    used = {"scheduler": shard.policy_spec.row, "allocator": shard.machine_spec.allocator_row,
            "kind": shard.machine_spec.row}
    if shard.source.synthetic is not None:
        used["model"] = MODELS[shard.source.synthetic.model]
    return {name: definition(row) for name, row in used.items()}


def definitions(shard: Shard) -> str:
    """sha256 of the rows a shard's runs use and of the code they execute."""
    return definitions_of([shard])[0]


def definitions_of(shards: Sequence[Shard]) -> list[str]:
    """`definitions` of each shard, the code digests found once per set of modules."""
    code = closure_digests({code_modules(s) for s in shards}, STOP)
    out = []
    for shard in shards:
        text = json.dumps({"code": code[code_modules(shard)], "rows": rows(shard)},
                          sort_keys=True, separators=(",", ":"))
        out.append(hashlib.sha256(text.encode()).hexdigest())
    return out
