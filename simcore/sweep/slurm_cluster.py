"""The sweep's Dask workers as Slurm jobs (dask-jobqueue), for `sweep.dask.backend: slurm`.

Each worker is one Slurm job of `cores` cores running `processes` single-threaded worker
processes. The cluster adapts between `minimum_jobs` and `maximum_jobs` as shards submit
work. A worker that dies or reaches its walltime loses no result: every run writes its own
cache entry when it finishes, lost in-flight runs are recomputed, and `lifetime` (e.g.
"55m" under a 1 h walltime) retires workers gracefully before Slurm kills them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from simcore.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "cores": 1,
    "processes": 1,
    "memory": "2GB",
    "walltime": "01:00:00",
    "minimum_jobs": 0,
    "maximum_jobs": 4,
}
# SLURMCluster keywords users may set, besides the adaptive bounds and `lifetime`.
CLUSTER_KEYS = ("cores", "processes", "memory", "walltime", "queue", "account", "interface",
                "job_extra_directives", "job_script_prologue", "local_directory",
                "log_directory", "python")


@contextlib.contextmanager
def slurm_cluster(options: Mapping[str, Any]) -> Iterator[Any]:
    """A SLURMCluster from `sweep.dask` options (without `backend`), closed on exit."""
    from dask_jobqueue import SLURMCluster

    settings = {**DEFAULTS, **options}
    allowed = {*CLUSTER_KEYS, "minimum_jobs", "maximum_jobs", "lifetime"}
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise ConfigError(f"sweep.dask: unknown Slurm option(s) {unknown}; expected some of "
                          f"{sorted(allowed)}")
    minimum, maximum = settings.pop("minimum_jobs"), settings.pop("maximum_jobs")
    if not 0 <= minimum <= maximum or maximum < 1:
        raise ConfigError(f"sweep.dask: minimum_jobs={minimum}, maximum_jobs={maximum}; "
                          "expected 0 <= minimum_jobs <= maximum_jobs, maximum_jobs >= 1")
    lifetime = settings.pop("lifetime", None)
    if lifetime:
        settings["worker_extra_args"] = ["--lifetime", str(lifetime),
                                         "--lifetime-stagger", "2m", "--lifetime-restart"]
    if settings.get("log_directory"):  # dask-jobqueue checks, then makes it: shards race
        Path(settings["log_directory"]).mkdir(parents=True, exist_ok=True)
    cluster = SLURMCluster(scheduler_options={"dashboard_address": None}, **settings)
    try:
        cluster.adapt(minimum_jobs=minimum, maximum_jobs=maximum)
        yield cluster
    finally:
        cluster.close()
