"""torus-sweep's simulation library: SWF traces, workloads, machines, schedulers, sweeps.

One call simulates a trace:

    import simcore
    result = simcore.simulate(simcore.read_swf("SDSC-SP2-1998-4.2-cln.swf.gz"),
                              "torus:4x4x8", "bm")
    result.summary["utilization"], result.jobs   # run metrics, per-job schedule

and `prepare` applies workload transforms (span, runtime scale, offered load, shapes).
The names below are imported when first used, so `import simcore` stays cheap.
"""

import importlib

__version__ = "0.1.0"

_API = {
    "CleaningOptions": "simcore.jobs.cleaning",
    "clean": "simcore.jobs.cleaning",
    "Jobs": "simcore.jobs.jobs",
    "load_workload": "simcore.workload.sources",
    "MachineSpec": "simcore.machines.spec",
    "NUMBA_CACHE": "simcore.base.jit",
    "PolicySpec": "simcore.policy",
    "SimulationResult": "simcore.simulate",
    "simulate": "simcore.simulate",
    "SWFHeader": "simcore.jobs.swf",
    "header_of": "simcore.jobs.swf",
    "read_swf": "simcore.jobs.swf",
    "write_swf": "simcore.jobs.swf",
    "WorkloadSpec": "simcore.workload.spec",
    "prepare": "simcore.workload.transforms",
}

__all__ = ["__version__", *sorted(_API)]


def __getattr__(name: str) -> object:
    if name not in _API:
        raise AttributeError(f"module 'simcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
