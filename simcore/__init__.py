"""torus-sweep's simulation library: SWF traces, workloads, machines, schedulers, sweeps."""

from simcore.swf import SWFHeader, header_of, read_swf, write_swf

__version__ = "0.1.0"

__all__ = ["SWFHeader", "__version__", "header_of", "read_swf", "write_swf"]
