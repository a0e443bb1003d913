"""The switch hierarchy above the racks of a block machine, shared by the rules that read
one (Slurm's topology/tree, Kueue's topology levels): option `rack_groups`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simcore.base.errors import SpecError

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


def rack_levels(spec: MachineSpec) -> np.ndarray:
    """Racks per group at each level, from the rack (1) up to the root (every rack):
    `rack_groups` lists the levels between, ascending, each a multiple of the one below;
    groups are consecutive racks, the last one of a level shorter where the count does not
    divide the racks. A SpecError names an item that is not such a count."""
    racks = spec.dims[0]
    levels = [1]
    for item in spec.option("rack_groups").split(","):
        if not item.strip():
            continue
        try:
            size = int(item)
        except ValueError:
            size = 0
        if size <= levels[-1] or size % levels[-1]:
            raise SpecError(f"machine {spec}: rack_groups item {item.strip()!r}; expected "
                            "rack counts separated by commas, ascending, each a multiple of "
                            f"the one before (e.g. '4,16'), after {levels[-1]}")
        if size >= racks:
            break
        levels.append(size)
    return np.array([*levels, racks] if racks > 1 else levels, dtype=np.int64)
