"""torus-sweep's simulation library: SWF traces, workloads, machines, schedulers, sweeps.

One call simulates a trace:

    import simcore
    result = simcore.simulate(simcore.read_swf("SDSC-SP2-1998-4.2-cln.swf.gz"),
                              "torus:4x4x8", "bm")
    result.summary["utilization"], result.jobs   # run metrics, per-job schedule

and `prepare` applies workload transforms (span, runtime scale, offered load, shapes).
"""

from simcore.caches import configure_numba

NUMBA_CACHE = configure_numba()  # before any kernel module is imported

from simcore.cleaning import CleaningOptions, clean  # noqa: E402
from simcore.jobs import Jobs  # noqa: E402
from simcore.machines.spec import MachineSpec  # noqa: E402
from simcore.policy import PolicySpec  # noqa: E402
from simcore.simulate import SimulationResult, simulate  # noqa: E402
from simcore.swf import SWFHeader, header_of, read_swf, write_swf  # noqa: E402
from simcore.workload.transforms import WorkloadSpec, prepare  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "CleaningOptions",
    "Jobs",
    "MachineSpec",
    "PolicySpec",
    "SWFHeader",
    "SimulationResult",
    "WorkloadSpec",
    "__version__",
    "clean",
    "header_of",
    "prepare",
    "read_swf",
    "simulate",
    "write_swf",
]
