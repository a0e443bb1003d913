"""Two-phase midplane + link allocation on wired machines (Aridor et al. 2005).

Machine state is one bitset: unit (midplane) bits first, then, for every dimension, one
slot per line holding that line's cables (slot width a power of two, so a slot never
straddles a word). A job has a fixed shape and topology. `place_links` scans every
rotation of the shape and every base position (boxes do not wrap: the paper scans
<x..x+Sx>); phase 1 needs the box of midplanes free, phase 2 takes, per dimension, the first
link set of the lookup table (fewest cables first) that is free in every participating line
of that dimension, the same link set in all of them. Merit is the total number of cables
over all lines; the fewest wins, ties go to the first candidate found.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simcore.base.arrays import numpy_array
from simcore.base.bitset import copy_into, intersects, n_words, popcount64
from simcore.base.caches import cache_dir
from simcore.base.errors import SpecError
from simcore.base.jit import implements, kernel, njit_cached
from simcore.core.allocate import blocked_cause, integrate, place
from simcore.core.placements import usage_series
from simcore.core.state import BLOCKED_LINKS, BLOCKED_NO_BOX
from simcore.jobs.jobs import Jobs
from simcore.machines.bgl.wiring import TORUS, Wiring, link_table, load_wiring

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec


class LinkMachine(NamedTuple):
    """Arrays describing a wired machine to the numba allocator."""

    dims: tuple[int, int, int]
    unit_words: int  # words holding unit bits; cable slots start after them
    words: int  # words of the whole resource bitset
    n_cables: int  # cables in the whole machine
    box_offset: np.ndarray  # (X+1, Y+1, Z+1) int64: first box of shape (a, b, c)
    box_masks: np.ndarray  # (n_boxes, words) uint64, unit bits only
    row_base: np.ndarray  # (3,) int64: first link-table row of each dimension
    offsets: np.ndarray  # (rows + 1,) int64, CSR over all dimensions' rows
    cable_masks: np.ndarray  # (n_sets,) uint64, a link set's cables within one line
    set_cables: np.ndarray  # (n_sets,) int64, cables per link set and line
    line_bit: np.ndarray  # (3, max_lines) int64: first bit of each line's cable slot


def link_machine(wiring_path: str) -> LinkMachine:
    """The allocator arrays of the machine described by `wiring_path`, built once per
    process and per content of the file."""
    return _link_machine(load_wiring(wiring_path))


@functools.lru_cache(maxsize=8)
def _link_machine(wiring: Wiring) -> LinkMachine:
    dims = tuple(wiring.dims)
    units = dims[0] * dims[1] * dims[2]
    unit_words = n_words(units)
    lines_per_dim = (dims[1] * dims[2], dims[0] * dims[2], dims[0] * dims[1])
    line_bit = np.zeros((3, max(lines_per_dim)), dtype=np.int64)
    bit = unit_words * 64
    tables = [link_table(line, cache_dir()) for line in wiring.lines]
    for d, table in enumerate(tables):
        width = 1 << max(0, (table.n_line_cables - 1).bit_length())
        bit = -(-bit // 64) * 64  # each dimension starts on a word boundary
        for line in range(lines_per_dim[d]):
            line_bit[d, line] = bit
            bit += width
    row_base = np.zeros(3, dtype=np.int64)
    offsets, masks, cables = [], [], []
    rows = sets = 0
    for d, table in enumerate(tables):
        row_base[d] = rows
        offsets.append(table.offsets[:-1] + sets)
        masks.append(table.cable_masks)
        cables.append(table.n_cables)
        rows += table.offsets.size - 1
        sets += table.cable_masks.size
    offsets.append(np.array([sets], dtype=np.int64))
    words = n_words(bit)
    box_offset, box_masks = _boxes(dims, words)
    return LinkMachine(
        dims=dims,
        unit_words=unit_words,
        words=words,
        n_cables=sum(t.n_line_cables * n for t, n in zip(tables, lines_per_dim, strict=True)),
        box_offset=box_offset,
        box_masks=box_masks,
        row_base=row_base,
        offsets=np.concatenate(offsets),
        cable_masks=np.concatenate(masks),
        set_cables=np.concatenate(cables),
        line_bit=line_bit,
    )


def _boxes(dims: tuple[int, ...], words: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit masks of every non-wrapping box, indexed by shape offset + base."""
    nx, ny, nz = dims
    box_offset = np.zeros((nx + 1, ny + 1, nz + 1), dtype=np.int64)
    total = 0
    for a in range(1, nx + 1):
        for b in range(1, ny + 1):
            for c in range(1, nz + 1):
                box_offset[a, b, c] = total
                total += (nx - a + 1) * (ny - b + 1) * (nz - c + 1)
    masks = np.zeros((total, words), dtype=np.uint64)
    _fill(masks, box_offset, nx, ny, nz)
    return box_offset, masks


@njit_cached
def _fill(masks, box_offset, nx, ny, nz):
    for a in range(1, nx + 1):
        for b in range(1, ny + 1):
            for c in range(1, nz + 1):
                for x in range(nx - a + 1):
                    for y in range(ny - b + 1):
                        for z in range(nz - c + 1):
                            i = box_index(box_offset, nx, ny, nz, a, b, c, x, y, z)
                            for dx in range(a):
                                for dy in range(b):
                                    for dz in range(c):
                                        u = ((x + dx) * ny + y + dy) * nz + z + dz
                                        masks[i, u >> 6] |= np.uint64(1) << np.uint64(u & 63)


@kernel
def box_index(box_offset, nx, ny, nz, a, b, c, x, y, z):
    """Index of the box of shape (a, b, c) based at (x, y, z)."""
    return box_offset[a, b, c] + (x * (ny - b + 1) + y) * (nz - c + 1) + z


@kernel
def _line_bit(m, d, p, q, x, y, z):
    """First bit of the cable slot of the (p, q)-th line of dimension d crossing the box
    based at (x, y, z): p and q step along the two other dimensions, in axis order."""
    ny = m.dims[1]
    nz = m.dims[2]
    if d == 0:
        line = (y + p) * nz + z + q
    elif d == 1:
        line = (x + p) * nz + z + q
    else:
        line = (x + p) * ny + y + q
    return m.line_bit[d, line]


@kernel
def _first_free_set(m, d, lo, extent, across_p, across_q, torus, x, y, z, busy):
    """First link set (fewest cables) connecting positions lo..lo+extent-1 of dimension d
    in all across_p x across_q lines of the box; -1 if none is free in `busy`."""
    members = ((1 << extent) - 1) << lo
    row = m.row_base[d] + ((members << 1) | (TORUS if torus else 0))
    for k in range(m.offsets[row], m.offsets[row + 1]):
        cables = m.cable_masks[k]
        free = True
        for p in range(across_p):
            for q in range(across_q):
                bit = _line_bit(m, d, p, q, x, y, z)
                if (busy[bit >> 6] >> np.uint64(bit & 63)) & cables:
                    free = False
                    break
            if not free:
                break
        if free:
            return k
    return -1


@kernel
def _add_cables(m, out, d, k, across_p, across_q, x, y, z):
    """Set link set k's cables in every line of dimension d crossing the box."""
    cables = m.cable_masks[k]
    for p in range(across_p):
        for q in range(across_q):
            bit = _line_bit(m, d, p, q, x, y, z)
            out[bit >> 6] |= cables << np.uint64(bit & 63)


@kernel
def place_links(m, busy, shape_rotations, n_rotations, torus, out, units_only=False):
    """Best candidate partition for a job: fewest cables, first found on ties.

    `busy` is the bitset of resources that may not be used (occupied, plus a reservation
    where one applies). Writes the partition's resources (units and cables) to `out` and
    returns its number of units, or returns -1 (out untouched) if there is no candidate.
    With `units_only`, phase 1 alone: the first box of free units, links ignored, answers
    (and `out` stays untouched): whether a blocked job lacks midplanes or links.
    """
    nx, ny, nz = m.dims
    best_cables = 1 << 62
    a0 = b0 = c0 = x0 = y0 = z0 = k0 = k1 = k2 = -1
    for r in range(n_rotations):
        a = shape_rotations[r, 0]
        b = shape_rotations[r, 1]
        c = shape_rotations[r, 2]
        for x in range(nx - a + 1):
            for y in range(ny - b + 1):
                for z in range(nz - c + 1):
                    box = m.box_masks[box_index(m.box_offset, nx, ny, nz, a, b, c, x, y, z)]
                    if intersects(box, busy):
                        continue
                    if units_only:
                        return a * b * c
                    kx = _first_free_set(m, 0, x, a, b, c, torus, x, y, z, busy)
                    if kx < 0:
                        continue
                    ky = _first_free_set(m, 1, y, b, a, c, torus, x, y, z, busy)
                    if ky < 0:
                        continue
                    kz = _first_free_set(m, 2, z, c, a, b, torus, x, y, z, busy)
                    if kz < 0:
                        continue
                    total = (m.set_cables[kx] * b * c + m.set_cables[ky] * a * c
                             + m.set_cables[kz] * a * b)
                    if total < best_cables:
                        best_cables = total
                        a0, b0, c0, x0, y0, z0, k0, k1, k2 = a, b, c, x, y, z, kx, ky, kz
    if a0 < 0:
        return -1
    copy_into(out, m.box_masks[box_index(m.box_offset, nx, ny, nz, a0, b0, c0, x0, y0, z0)])
    _add_cables(m, out, 0, k0, b0, c0, x0, y0, z0)
    _add_cables(m, out, 1, k1, a0, c0, x0, y0, z0)
    _add_cables(m, out, 2, k2, a0, b0, x0, y0, z0)
    return a0 * b0 * c0


class WiredMachine(NamedTuple):
    """A wired machine under the `two-phase` allocator: its link tables, each job's
    orientations and topology, scratch, and the integral of busy cables."""

    units: int
    words: int
    counts_only: bool
    links: LinkMachine
    rotations: np.ndarray  # (jobs, 6, 3) int64: distinct orientations of each job's shape
    n_rotations: np.ndarray  # (jobs,) int64
    torus: np.ndarray  # (jobs,) bool: the job wants a torus
    busy: np.ndarray  # (words,) uint64 scratch: occupancy plus forbidden resources
    cable_area: np.ndarray  # (1,) float64: integral of busy cables dt, cable-seconds


def memory_bytes(spec: MachineSpec) -> int:
    """Bytes of the unit masks of every box (the link tables are small)."""
    nx, ny, nz = spec.dims3
    boxes = (nx * (nx + 1) // 2) * (ny * (ny + 1) // 2) * (nz * (nz + 1) // 2)
    return boxes * 8 * n_words(spec.units + 64 * 3 * nx * ny * nz)


def build(spec: MachineSpec, jobs: Jobs) -> tuple[WiredMachine, np.ndarray, np.ndarray]:
    """The machine struct with the rotations of each job's shape that fit the machine;
    jobs that could not be connected even on an empty machine are refused. A job's size is
    its shape's volume; its class is its sorted shape and topology."""
    if jobs.shape is None:
        raise SpecError(f"machine {spec} allocates job shapes; the workload has none "
                        "(add shapes with simcore.workload.shapes)")
    links = link_machine(str(spec.wiring))
    n = len(jobs)
    rotations = np.zeros((n, 6, 3), dtype=np.int64)
    n_rotations = np.zeros(n, dtype=np.int64)
    dims = spec.dims3
    keys, placement_class = np.unique(
        np.column_stack([np.sort(jobs.shape, axis=1), jobs.torus]), axis=0, return_inverse=True)
    placement_class = placement_class.ravel()
    empty = np.zeros(links.words, dtype=np.uint64)
    out = np.zeros(links.words, dtype=np.uint64)
    for cls, key in enumerate(keys):
        members = np.flatnonzero(placement_class == cls)
        shape = tuple(int(v) for v in jobs.shape[members[0]])
        fits = [r for r in dict.fromkeys(itertools.permutations(shape))
                if all(r[d] <= dims[d] for d in range(3))]
        if fits:
            rotations[members, : len(fits)] = fits
        n_rotations[members] = len(fits)
        if not fits or place_links(links, empty, rotations[members[0]], len(fits),
                                   bool(key[3]), out) < 0:
            raise SpecError(
                f"job {jobs.job_id[members[0]]} wants a {'x'.join(map(str, shape))} "
                f"{'torus' if key[3] else 'mesh'}, which machine {spec} cannot connect even "
                f"when empty ({members.size} such jobs)")
    machine = WiredMachine(spec.units, links.words, False, links, rotations, n_rotations,
                           jobs.torus.astype(np.bool_), np.zeros(links.words, dtype=np.uint64),
                           np.zeros(1))
    return machine, jobs.shape.prod(axis=1), placement_class


def observables(machine: WiredMachine, span_s: float) -> dict[str, float]:
    """Run metrics of the wired machine: the time-averaged fraction of cables in use."""
    return {"cable_utilization": float(machine.cable_area[0]) / (span_s * machine.links.n_cables)
            if span_s > 0 else float("nan")}


@implements(place, WiredMachine)
@kernel
def place_wired(m, st, j, units, busy, growth, forbidden, out):
    """Job j's own shape and topology (units and growth do not apply), avoiding
    `forbidden`."""
    if forbidden.shape[0] > 0:
        for w in range(busy.shape[0]):
            m.busy[w] = busy[w] | forbidden[w]
        busy = m.busy
    return place_links(m.links, busy, m.rotations[j], m.n_rotations[j], m.torus[j], out)


@implements(blocked_cause, WiredMachine)
@kernel
def blocked_wired(m, st, j):
    """Free midplanes for job j's shape but no free link sets: a link block."""
    if place_links(m.links, st.run.occ, m.rotations[j], m.n_rotations[j], m.torus[j],
                   st.scratch.mask, True) >= 0:
        return BLOCKED_LINKS
    return BLOCKED_NO_BOX


@implements(integrate, WiredMachine)
@kernel
def integrate_cables(m, st, dt):
    """Busy cables x dt into m.cable_area."""
    busy = 0
    occ = st.run.occ
    for w in range(m.links.unit_words, occ.shape[0]):
        busy += popcount64(occ[w])
    m.cable_area[0] += busy * dt


def cable_usage(result, machine) -> tuple[np.ndarray, np.ndarray]:
    """(times, fraction of the machine's cables in use) of a recorded run on a wired
    machine (`result` from `simulate`, `machine` its spec)."""
    links = link_machine(str(machine.wiring))
    times, busy = usage_series(result.placements, numpy_array(result.jobs.column("job_id")),
                               numpy_array(result.jobs.column("end_s")),
                               slice(links.unit_words * 64, None))
    return times, busy / links.n_cables
