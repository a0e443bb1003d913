"""The largest free rectangular partition of a 3D torus or mesh, four ways that must agree.

All take an occupancy grid `occupied[x, y, z]` (bool) and `wrap` (torus: partitions may
wrap around in every dimension; mesh: they may not) and return the volume of the largest
box of free units.

- `bruteforce`: every base and every size, every unit checked. O(M^9); the test oracle.
- `pop`: Krevat's Projection of Partitions (thesis chapter 3), O(M^5): a table of free runs
  along y for every unit; for a base (i, j, k), planes k..k+Z-1 are projected onto each
  other (the minimum of their run tables), and on the projection the largest rectangle
  anchored at (i, j) grows along x while multiplying x-extent by the minimum run.
- `boxscan`: the simulator's method: the first free box of the volume-ordered box table
  (`simcore.machines.boxes.allocator`). Fastest by far, but the table grows as M^6 words.
- `bitrows`: bit-parallel projection for machines too large for a box table: the free units
  along x of every (y, z) row are one word; AND-ing the rows of a y-range and z-range gives
  the units free in all of them, whose longest (circular) run of ones is the largest
  x-extent. O(M^4 * run length) word operations, pruned by the best volume so far.
"""

from __future__ import annotations

import numpy as np

from simcore.base.jit import njit_cached
from simcore.machines.boxes.allocator import box_table, largest_free_volume


@njit_cached
def bruteforce(occupied: np.ndarray, wrap: bool) -> int:
    """Largest free box by checking every unit of every box (test oracle)."""
    nx, ny, nz = occupied.shape
    best = 0
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                for a in range(1, nx + 1):
                    for b in range(1, ny + 1):
                        for c in range(1, nz + 1):
                            if a * b * c <= best:
                                continue
                            if not wrap and (i + a > nx or j + b > ny or k + c > nz):
                                continue
                            free = True
                            for dx in range(a):
                                for dy in range(b):
                                    for dz in range(c):
                                        if occupied[(i + dx) % nx, (j + dy) % ny, (k + dz) % nz]:
                                            free = False
                                            break
                                    if not free:
                                        break
                                if not free:
                                    break
                            if free:
                                best = a * b * c
    return best


@njit_cached
def free_runs_y(occupied: np.ndarray, wrap: bool) -> np.ndarray:
    """POP's partition table: free units from (x, y, z) along y, capped at the line length."""
    nx, ny, nz = occupied.shape
    runs = np.zeros((nx, ny, nz), dtype=np.int64)
    for x in range(nx):
        for z in range(nz):
            for y in range(ny):
                n = 0
                while n < ny and (wrap or y + n < ny) and not occupied[x, (y + n) % ny, z]:
                    n += 1
                runs[x, y, z] = n
    return runs


@njit_cached
def pop(occupied: np.ndarray, wrap: bool) -> int:
    """Largest free box by Projection of Partitions (Krevat 2003, chapter 3)."""
    nx, ny, nz = occupied.shape
    runs = free_runs_y(occupied, wrap)
    projection = np.empty(nx, dtype=np.int64)
    best = 0
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                if occupied[i, j, k]:
                    continue
                for x in range(nx):
                    projection[x] = ny
                for depth in range(1, nz + 1):  # project planes k .. k + depth - 1
                    if not wrap and k + depth > nz:
                        break
                    z = (k + depth - 1) % nz
                    for x in range(nx):
                        projection[x] = min(projection[x], runs[x, j, z])
                    if projection[i] == 0:
                        break
                    smallest = ny
                    for width in range(1, nx + 1):  # 2D step: grow along x from base i
                        if not wrap and i + width > nx:
                            break
                        smallest = min(smallest, projection[(i + width - 1) % nx])
                        if smallest == 0:
                            break
                        best = max(best, width * smallest * depth)
    return best


def boxscan(occupied: np.ndarray, wrap: bool) -> int:
    """Largest free box as the simulator computes it: first free box of the box table."""
    table = box_table(tuple(int(d) for d in occupied.shape), wrap)
    return int(largest_free_volume(table.masks, table.volume, occupancy_bits(occupied)))


def occupancy_bits(occupied: np.ndarray) -> np.ndarray:
    """A grid as the simulator's bitset: unit (x, y, z) is bit (x*Y + y)*Z + z."""
    flat = np.ascontiguousarray(occupied, dtype=bool).ravel()
    padded = np.zeros(-(-flat.size // 64) * 64, dtype=bool)
    padded[: flat.size] = flat
    return np.packbits(padded.reshape(-1, 64)[:, ::-1], axis=1).view(">u8").ravel().astype(
        np.uint64
    )


@njit_cached
def _longest_run(bits: np.uint64, length: int, wrap: bool) -> int:
    """Longest run of ones in the low `length` bits (circularly if `wrap`)."""
    full = (np.uint64(1) << np.uint64(length)) - np.uint64(1) if length < 64 else ~np.uint64(0)
    bits &= full
    if bits == full:
        return length
    n = 0
    while bits:
        if wrap:
            rotated = ((bits >> np.uint64(1)) | (bits << np.uint64(length - 1))) & full
        else:
            rotated = bits >> np.uint64(1)
        bits &= rotated
        n += 1
    return n


@njit_cached
def bitrows(occupied: np.ndarray, wrap: bool) -> int:
    """Largest free box by bit-parallel row projection (x up to 64 units)."""
    nx, ny, nz = occupied.shape
    rows = np.zeros((ny, nz), dtype=np.uint64)
    for y in range(ny):
        for z in range(nz):
            for x in range(nx):
                if not occupied[x, y, z]:
                    rows[y, z] |= np.uint64(1) << np.uint64(x)
    columns = np.empty(ny, dtype=np.uint64)
    best = 0
    for k in range(nz):
        columns[:] = ~np.uint64(0)
        for depth in range(1, nz + 1):  # z-range k .. k + depth - 1
            if not wrap and k + depth > nz:
                break
            z = (k + depth - 1) % nz
            for y in range(ny):
                columns[y] &= rows[y, z]
            if nx * ny * depth <= best:
                continue
            for j in range(ny):
                free = ~np.uint64(0)
                for height in range(1, ny + 1):  # y-range j .. j + height - 1
                    if not wrap and j + height > ny:
                        break
                    free &= columns[(j + height - 1) % ny]
                    if free == 0:
                        break
                    if nx * height * depth > best:
                        best = max(best, _longest_run(free, nx, wrap) * height * depth)
    return best
