"""torus-sweep's simulation library: SWF traces, workloads, machines, schedulers, sweeps."""

from simcore.caches import configure_numba

NUMBA_CACHE = configure_numba()  # before any kernel module is imported

from simcore.swf import SWFHeader, header_of, read_swf, write_swf  # noqa: E402

__version__ = "0.1.0"

__all__ = ["SWFHeader", "__version__", "header_of", "read_swf", "write_swf"]
