"""A run's schedule exported: the unit numbering of every machine kind."""

from __future__ import annotations

import numpy as np

from simcore.machines.spec import MachineSpec
from simcore.schedules.units import numbering


def test_numbering_is_x_fastest_on_every_kind() -> None:
    torus = numbering(MachineSpec.parse("torus:4x2x2"))
    bit = (3 * 2 + 1) * 2 + 0  # unit (3, 1, 0), z fastest in the allocator's masks
    assert torus.id_of_bit[bit] == 3 + 4 * (1 + 2 * 0)
    assert torus.coords[torus.id_of_bit[bit]].tolist() == [3, 1, 0]
    mesh = numbering(MachineSpec.parse("mesh:32x32", "ff"))
    assert mesh.id_of_bit[5 * 32 + 7] == 5 + 32 * 7  # node <5, 7> is bit x*H + y
    curve = numbering(MachineSpec.parse("mesh:8x8", "first-fit", ordering="hilbert"))
    assert sorted(curve.id_of_bit.tolist()) == list(range(64))
    assert (curve.curve_rank[curve.id_of_bit] == np.arange(64)).all()
    cubes = numbering(MachineSpec.parse("cubes:2x1x1:2"))
    assert cubes.coords[cubes.id_of_bit[8 + 1]].tolist() == [2, 0, 1]  # cube 1, chip (0,0,1)
    menu = numbering(MachineSpec.parse("slurm-torus3d:example-8x4x4.yaml"))
    assert (menu.id_of_bit == np.arange(menu.units)).all() and menu.torus is not None
    bgl = numbering(MachineSpec.parse("bgl:8x4x4"))
    assert bgl.units == 128 and bgl.coords[bgl.id_of_bit[(1 * 4 + 2) * 4 + 3]].tolist() == [1, 2, 3]
    assert numbering(MachineSpec.parse("flat:16")).packing


def test_box_descriptors_wrap_around_a_torus() -> None:
    torus = numbering(MachineSpec.parse("torus:4x2x2"))
    assert torus.box(np.array([0, 3])) == "3,0,0:2x1x1"
    assert torus.box(np.array([0, 1, 2, 3])) == "0,0,0:4x1x1"
    assert torus.box(np.array([0, 2])) == ""
    mesh = numbering(MachineSpec.parse("mesh:4x2x2"))
    assert mesh.box(np.array([0, 3])) == ""
