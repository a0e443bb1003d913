"""Submesh requests on 2D meshes: where a workload carries them and how jobs without get one.

On a 2D mesh with a submesh allocator (Chu 1995) a job asks for a w x h submesh: w columns
by h rows. A workload carries the requests in two columns beside the SWF fields,
`mesh_width` and `mesh_height` (Chu's synthetic workloads write them); `prepare` turns them
into `Jobs.shape` (w, h, 1). Jobs whose workload has no such columns (the archive's traces)
get one from their size by a rule (`WorkloadSpec.mesh_shape`):

- `squarest`: the rectangle that fits the mesh, holds at least the size, has the smallest
  area and, among those, sides closest to each other; ties go to the wider one. Sizes that
  factor within the mesh get an exact factorisation (12 -> 4 x 3, 7 -> 7 x 1 on 32 x 32);
  others are rounded up to the least area that fits (37 on 32 x 32 -> 19 x 2 is 38);
- `square`: the smallest k x k holding the size, like the square jobs of Chu's chapter 4
  (12 -> 4 x 4).

Either way the job then asks for w x h processors; the trace's own request is kept per job
(`requested_units`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.base.errors import SpecError

WIDTH, HEIGHT = "mesh_width", "mesh_height"
SHAPE_COLUMNS = (WIDTH, HEIGHT)
RULES = ("squarest", "square")


def table_shapes(table: pa.Table) -> tuple[np.ndarray, np.ndarray] | None:
    """(w, h) per job from the workload's columns, or None when it has none."""
    present = [c for c in SHAPE_COLUMNS if c in table.column_names]
    if not present:
        return None
    if len(present) == 1:
        raise SpecError(f"workload has column {present[0]} but not "
                        f"{(set(SHAPE_COLUMNS) - set(present)).pop()}; expected both or neither")
    w = numpy_array(table.column(WIDTH)).astype(np.int64)
    h = numpy_array(table.column(HEIGHT)).astype(np.int64)
    bad = np.flatnonzero((w < 1) | (h < 1))
    if bad.size:
        i = int(bad[0])
        job = table.column("job_number")[i].as_py()
        raise SpecError(f"job {job}: submesh {w[i]} x {h[i]}; expected sides >= 1")
    return w, h


def rule_shapes(size: np.ndarray, width: int, height: int,
                rule: str = "squarest") -> tuple[np.ndarray, np.ndarray]:
    """(w, h) per job of `size` processors on a width x height mesh by `rule` (see the module
    docstring); a size no submesh can hold is an error naming it."""
    size = np.asarray(size, dtype=np.int64)
    if rule not in RULES:
        raise SpecError(f"mesh_shape={rule!r}; expected one of {', '.join(RULES)}")
    too_big = np.flatnonzero(size > (width * height if rule == "squarest"
                                     else min(width, height) ** 2))
    if too_big.size:
        raise SpecError(f"size {int(size[too_big[0]])}: no {rule} submesh of a "
                        f"{width}x{height} mesh holds it ({too_big.size} such jobs)")
    if rule == "square":
        side = np.ceil(np.sqrt(size)).astype(np.int64)
        side += side * side < size  # floating-point square roots of large sizes
        side -= (side - 1) * (side - 1) >= size
        return side, side.copy()
    best_w = np.zeros_like(size)
    best_h = np.zeros_like(size)
    for w in range(width, 0, -1):  # widest first: among equals the wider stays
        h = -(-size // w)
        ok = h <= height
        area, best_area = w * h, best_w * best_h
        better = ok & ((best_w == 0) | (area < best_area) | (
            (area == best_area) & (np.abs(w - h) < np.abs(best_w - best_h))))
        best_w = np.where(better, w, best_w)
        best_h = np.where(better, h, best_h)
    return best_w, best_h
