# Shared by the rules: the experiment plan and the file lists derived from it.

import json
import os

from simcore.caches import sources_digest
from simcore.experiments import PACKAGE, SYNTHETIC_CODE, TRACE_CODE, plan
from simcore.traces import load_catalogue


wildcard_constraints:
    trace=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    workload=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    experiment=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    machine=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    policy=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    seed=r"\d+",


CATALOGUE = load_catalogue(config["traces"]["catalogue"])
SHARDS = {shard.label(): shard for shard in plan(config, sorted(CATALOGUE))}
KERNELS_READY = f"results/.kernels/{sources_digest()[:16]}.ready"
SHARD_DIR = (
    "results/store/experiment={experiment}/workload={workload}/machine={machine}/policy={policy}"
)
SHARD_SUMMARY = f"{SHARD_DIR}/summary.parquet"


def shard(wildcards):
    return SHARDS[
        "/".join(
            (wildcards.experiment, wildcards.workload, wildcards.machine, wildcards.policy)
        )
    ]


def shard_summaries():
    return [SHARD_SUMMARY.format(**s.names) for s in SHARDS.values()]


def shard_workloads(wildcards):
    return [f"results/{path}" for path in shard(wildcards).input_paths()]


def code_paths(paths):
    """Source files as rule inputs (relative where the package lives in the workdir)."""
    return [os.path.relpath(p) if p.is_relative_to(os.getcwd()) else str(p) for p in paths]


def shard_code(wildcards):
    """Source files of the code a shard depends on: editing one re-runs the shard."""
    return code_paths(shard(wildcards).code_files())


def synthetic_spec(wildcards):
    """Sorted, so the params rerun trigger ignores key order in the config file."""
    spec = {"job_type": "batch", **config["workloads"][wildcards.workload]["synthetic"]}
    return dict(sorted(spec.items()))
