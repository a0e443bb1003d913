"""Job shapes and topologies for machines that allocate boxes of a given shape (Aridor 2005).

Traces give scalar sizes only. Aridor et al. turn a size into a 3D shape:

- slim: three nested loops over the machine's sides in ascending order (BG/L's 8x4x4:
  a in 1..4, b in 1..4, c in 1..8) take the first a x b x c equal to the size, otherwise
  the first one whose product is the smallest above the size: 6 -> 1x1x6, 16 -> 1x2x8,
  27 -> 3x3x3, 17 -> 1x3x6;
- fat: at least 2 units along every side: sizes up to 8 -> 2x2x2, larger sizes -> the
  first (same loops from 2) with the smallest product >= size;

a job is fat with probability p_fat and wants a torus with probability p_torus (with
`slim_as_fat`, a slim job first takes its fat shape's volume as its size). The draws
are counter-based (a hash of seed, stream and job id), so a job's draw does not depend on
the other jobs of the workload, and raising p_fat only adds fat jobs (common random
numbers across a sweep). A shaped job's size becomes its shape's volume: the job asks for
that partition.
"""

from __future__ import annotations

import functools

import numpy as np

from simcore.base.draws import STREAMS, job_uniforms
from simcore.base.errors import SpecError

FAT_STREAM = STREAMS["fat"]
TORUS_STREAM = STREAMS["torus"]


@functools.lru_cache(maxsize=64)
def _shape_table(sides: tuple[int, int, int], smallest: int) -> np.ndarray:
    """shape_table[size] for sizes 0..volume: the loops' choice with sides >= `smallest`."""
    volume = sides[0] * sides[1] * sides[2]
    table = np.zeros((volume + 1, 3), dtype=np.int64)
    candidates = [(a, b, c)
                  for a in range(smallest, sides[0] + 1)
                  for b in range(smallest, sides[1] + 1)
                  for c in range(smallest, sides[2] + 1)]
    for size in range(1, volume + 1):
        exact = next((s for s in candidates if s[0] * s[1] * s[2] == size), None)
        if exact is None:
            above = [s for s in candidates if s[0] * s[1] * s[2] > size]
            if not above:
                continue
            least = min(s[0] * s[1] * s[2] for s in above)
            exact = next(s for s in above if s[0] * s[1] * s[2] == least)
        table[size] = exact
    return table


def slim_shapes(size: np.ndarray, sides: tuple[int, int, int]) -> np.ndarray:
    """Aridor's slim shape of each size (sides: the machine's sides, ascending)."""
    return _shapes(size, sides, 1)


def fat_shapes(size: np.ndarray, sides: tuple[int, int, int]) -> np.ndarray:
    """Aridor's fat shape of each size: at least 2 along every side."""
    return _shapes(size, sides, 2)


def _shapes(size: np.ndarray, sides: tuple[int, int, int], smallest: int) -> np.ndarray:
    table = _shape_table(tuple(sorted(sides)), smallest)
    size = np.asarray(size, dtype=np.int64)
    if size.size and (size.min() < 1 or size.max() >= table.shape[0]):
        raise SpecError(f"job sizes {size.min()}..{size.max()}; expected 1..{table.shape[0] - 1}"
                        f" units for a {'x'.join(map(str, sides))} machine")
    shapes = table[size]
    if (shapes[:, 0] == 0).any():
        bad = int(size[np.flatnonzero(shapes[:, 0] == 0)[0]])
        raise SpecError(f"size {bad}: no shape with sides >= {smallest} fits "
                        f"{'x'.join(map(str, sides))}")
    return shapes


def synthesize(job_ids: np.ndarray, size: np.ndarray, sides: tuple[int, int, int],
               p_fat: float, p_torus: float, seed: int, slim_as_fat: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """(shape, torus) per job: fat with probability p_fat, torus with probability p_torus;
    `slim_as_fat`: a slim job first takes its fat shape's volume as its size (Aridor's
    Figure 8: "we adjusted the sizes of the slim jobs in the same way as for the fat jobs"),
    so that only the shapes differ."""
    for name, p in (("p_fat", p_fat), ("p_torus", p_torus)):
        if not 0.0 <= p <= 1.0:
            raise SpecError(f"{name}={p}; expected a probability in [0, 1]")
    fat = job_uniforms(seed, FAT_STREAM, job_ids) < p_fat
    fat_shape = fat_shapes(size, sides)
    slim_size = fat_shape.prod(axis=1) if slim_as_fat else size
    shape = np.where(fat[:, None], fat_shape, slim_shapes(slim_size, sides))
    torus = job_uniforms(seed, TORUS_STREAM, job_ids) < p_torus
    return shape, torus
