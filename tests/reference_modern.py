"""Plain-Python references for the Slurm torus3d menus and the cube machines.

`menu_choice` is the plugin's candidate scan written with Python sets from the menu's
geometry alone (not from simcore's anchor tables); `cube_placement_ok` checks one
placement on a cube machine against the documented rules.
"""

from __future__ import annotations

import itertools


def anchor_cells(torus, placement, anchor):
    """The nodes of an anchor's box (None where a cell holds no node), by coordinates."""
    nx, ny, nz = torus.dims
    cells = []
    for dz in range(placement.dims[2]):
        for dy in range(placement.dims[1]):
            for dx in range(placement.dims[0]):
                x, y, z = ((anchor[0] + dx) % nx, (anchor[1] + dy) % ny, (anchor[2] + dz) % nz)
                unit = int(torus.unit_of[x + nx * (y + ny * z)])
                cells.append(None if unit < 0 else unit)
    return cells


def menu_choice(menu, n, busy: set[int]) -> frozenset[int] | None:
    """The nodes the plugin's rule gives a job of n nodes when `busy` are taken."""
    best = None  # (nodes, placement id, fragmentation or None, torus idle)
    for torus in menu.toruses:
        ordered = sorted(torus.placements, key=lambda p: p.size)
        idle = sum(1 for u in torus.unit_of if u >= 0 and int(u) not in busy)
        for i, placement in enumerate(ordered):
            if placement.size != n:
                continue
            larger = next((q for q in ordered[i + 1:] if q.size > n), None)

            def cost(nodes, larger=larger, torus=torus):
                if larger is None:
                    return 0
                total = 0
                for a in larger.anchors:
                    cells = {c for c in anchor_cells(torus, larger, a) if c is not None}
                    total += bool(cells & nodes) and not cells & busy
                return total

            for anchor in placement.anchors:
                cells = anchor_cells(torus, placement, anchor)
                if None in cells or set(cells) & busy:
                    continue
                nodes = frozenset(cells)
                if best is None:
                    best = [nodes, id(placement), None, idle]
                    continue
                if id(placement) == best[1]:
                    if best[2] is None:
                        best[2] = cost(best[0])
                    mine = cost(nodes)
                    if mine != best[2]:
                        if mine < best[2]:
                            best[0], best[2] = nodes, mine
                        continue
                if idle < best[3]:
                    best = [nodes, id(placement), None, idle]
    return None if best is None else best[0]


def cube_placement_ok(nodes: set[int], size: int, cube: int, grid, static: bool,
                      shape=None) -> bool:
    """Whether `nodes` is a placement the cube rules allow for a job run on `size` chips:
    whole cubes (forming a box of the grid of the job's shape with a static torus of
    cubes), or chips inside one cube."""
    if size < cube:
        return len(nodes) == size and len({u // cube for u in nodes}) == 1
    cubes = sorted({u // cube for u in nodes})
    if len(nodes) != size or len(cubes) * cube != size:
        return False
    if not static:
        return True
    a, b, c = grid
    coords = {(q // (b * c), q // c % b, q % c) for q in cubes}
    for base in itertools.product(range(a), range(b), range(c)):
        for extent in set(itertools.permutations(shape)):
            if extent[0] > a or extent[1] > b or extent[2] > c:
                continue
            box = {((base[0] + i) % a, (base[1] + j) % b, (base[2] + k) % c)
                   for i in range(extent[0]) for j in range(extent[1]) for k in range(extent[2])}
            if box == coords:
                return True
    return False
