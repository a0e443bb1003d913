"""What every allocator module shares below the registry: the capabilities schedulers
may ask of an allocator, and the limits on a machine's size and tables.

Allocator modules (`simcore.machines.<family>`) import from here, never from the registry
or the spec above them, so that a run's code is only the families it uses.
"""

from __future__ import annotations

from simcore.base.errors import SpecError

CAPABILITIES = {
    "counts": "any free units will do, so schedulers reason with counts alone",
    "partitions": "jobs get contiguous partitions and the largest free one is known",
    "grows": "a job may get more units than it asked for (Krevat's growth)",
    "migrates": "running jobs can be re-placed (Krevat's migration)",
    "submeshes": "jobs ask for w x h submeshes of a 2D mesh (Chu's allocators)",
    "steady": "units never fail (the machine has no failure process)",
}
STEADY = "steady"

#: Largest tables an allocator may build for one machine.
MEMORY_LIMIT_BYTES = 512 * 2**20
#: Largest machine, in allocation units (counters and sums stay exact in int64 / float64).
MAX_UNITS = 2**40


def check_memory(what: str, nbytes: int) -> None:
    """Refuse tables above MEMORY_LIMIT_BYTES before anything is allocated."""
    if nbytes > MEMORY_LIMIT_BYTES:
        raise SpecError(f"{what} would take {nbytes / 2**30:.1f} GiB; machine tables are "
                        f"limited to {MEMORY_LIMIT_BYTES // 2**20} MiB")
