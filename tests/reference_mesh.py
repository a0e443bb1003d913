"""Plain-Python references of the 2D-mesh allocators, node by node, one step at a time.

An occupancy is a list of running jobs (x, y, w, h, ect) in allocation order on a W x H
mesh; a placement is (x, y, w, h) or None. Each function follows the module docstring of
its allocator (simcore/machines/*.py) literally, without the kernels' shortcuts (coverage
passes, jumps, prefix sums, rectangle arithmetic), so that the property tests compare two
independent readings of the same rules.
"""

from __future__ import annotations

import math

Rect = tuple[int, int, int, int]


def nodes(running) -> set[tuple[int, int]]:
    return {(i, j) for x, y, w, h, *_ in running for i in range(x, x + w)
            for j in range(y, y + h)}


def free(busy, W, H, x, y, w, h) -> bool:
    return x >= 0 and y >= 0 and x + w <= W and y + h <= H and all(
        (i, j) not in busy for i in range(x, x + w) for j in range(y, y + h))


def turns(w, h, rotate):
    return [(w, h)] + ([(h, w)] if rotate and w != h else [])


def bases(busy, W, H, w, h):
    """Valid bases of J(w, h): x ascending, then y ascending."""
    return [(x, y) for x in range(W - w + 1) for y in range(H - h + 1)
            if free(busy, W, H, x, y, w, h)]


def exists(running, W, H, w, h, rotate) -> bool:
    busy = nodes(running)
    return any(bases(busy, W, H, cw, ch) for cw, ch in turns(w, h, rotate))


def first_fit(running, W, H, w, h, rotate=False):
    busy = nodes(running)
    for cw, ch in turns(w, h, rotate):
        found = sorted(bases(busy, W, H, cw, ch), key=lambda b: (b[0], -b[1]))
        if found:
            return (*found[0], cw, ch)
    return None


def _corners(busy, W, H, w, h):
    """(x, y, score, area) of every corner of the coverage array, in First Fit's order."""
    zero = set(bases(busy, W, H, w, h))
    out = []
    for x, y in sorted(zero, key=lambda b: (b[0], -b[1])):
        if not (((x - 1, y) not in zero or (x + 1, y) not in zero)
                and ((x, y - 1) not in zero or (x, y + 1) not in zero)):
            continue
        score = sum((i, j) not in zero for i, j in ((x - 1, y), (x + 1, y), (x, y - 1),
                                                    (x, y + 1)))
        left = x
        while (left - 1, y) in zero:
            left -= 1
        right = x
        while (right + 1, y) in zero:
            right += 1
        low = y
        while (x, low - 1) in zero:
            low -= 1
        high = y
        while (x, high + 1) in zero:
            high += 1
        out.append((x, y, score, (right - left + 1) * (high - low + 1)))
    return out


def best_fit(running, W, H, w, h, rotate=False):
    busy = nodes(running)
    best, key = None, None
    for cw, ch in turns(w, h, rotate):
        for x, y, score, area in _corners(busy, W, H, cw, ch):
            if key is None or score > key[0] or (score == key[0] and area < key[1]):
                best, key = (x, y, cw, ch), (score, area)
    return best


def adaptive_scan(running, W, H, w, h):
    busy = nodes(running)
    for cw, ch in turns(w, h, True):
        for y in range(H - ch + 1):
            for x in range(W - cw + 1):
                if free(busy, W, H, x, y, cw, ch):
                    return x, y, cw, ch
    return None


def frame_sliding(running, W, H, w, h):
    busy = nodes(running)
    start = next(((x, y) for y in range(H) for x in range(W) if (x, y) not in busy), None)
    if start is None:
        return None
    x0, y0 = start
    lattice = [x for x in range(W) if (x - x0) % w == 0]
    band, y = 0, y0
    while y < H:
        if band == 0:
            row = [x for x in lattice if x >= x0]
        else:
            row = lattice if band % 2 == 0 else lattice[::-1]
        for x in row:
            if free(busy, W, H, x, y, w, h):
                return x, y, w, h
        band, y = band + 1, y + h
    return None


def boundary(busy, W, H, x, y, w, h, edges=True) -> int:
    """Busy neighbours of a candidate, nodes beyond the edge counting as busy (`edges`)."""
    around = [(x - 1, j) for j in range(y, y + h)] + [(x + w, j) for j in range(y, y + h)] \
        + [(i, y - 1) for i in range(x, x + w)] + [(i, y + h) for i in range(x, x + w)]
    return sum((edges and not (0 <= i < W and 0 <= j < H)) or (i, j) in busy
               for i, j in around)


def _highest(busy, W, H, candidates, edges):
    """The first candidate of the highest boundary value."""
    best, value = None, -1
    for c in candidates:
        v = boundary(busy, W, H, *c, edges=edges)
        if v > value:
            best, value = c, v
    return best


def _mesh_corners(busy, W, H, w, h):
    return [(x, y, cw, ch) for cw, ch in turns(w, h, True)
            for x, y in ((0, 0), (W - cw, 0), (0, H - ch), (W - cw, H - ch))
            if free(busy, W, H, x, y, cw, ch)]


def busy_list_anywhere(running, W, H, w, h, edges=True):
    """BL-mod with `positions: anywhere`: every free position, (w, h) first, x, then y."""
    busy = nodes(running)
    return _highest(busy, W, H, [(x, y, cw, ch) for cw, ch in turns(w, h, True)
                                 for x, y in bases(busy, W, H, cw, ch)], edges)


def _along_sides(x1, y1, x2, y2, w, h):
    """The bases of w x h positions touching <x1, y1, x2, y2>'s east, north, west and
    south side, each side from its lower or left end (in or out of the mesh)."""
    return [(x2 + 1, y) for y in range(y1 - h + 1, y2 + 1)] \
        + [(x, y2 + 1) for x in range(x1 - w + 1, x2 + 1)] \
        + [(x1 - w, y) for y in range(y1 - h + 1, y2 + 1)] \
        + [(x, y1 - h) for x in range(x1 - w + 1, x2 + 1)]


def busy_list_modified(running, W, H, w, h, edges=True, corners_last=False):
    """BL-mod: the mesh corners, then every free position touching a listed submesh's
    east, north, west and south side, in list order."""
    busy = nodes(running)
    candidates = []
    for x1, y1, bw, bh, *_ in running:
        x2, y2 = x1 + bw - 1, y1 + bh - 1
        for cw, ch in turns(w, h, True):
            candidates += [(x, y, cw, ch) for x, y in _along_sides(x1, y1, x2, y2, cw, ch)
                           if free(busy, W, H, x, y, cw, ch)]
    corners = _mesh_corners(busy, W, H, w, h)
    order = candidates + corners if corners_last else corners + candidates
    return _highest(busy, W, H, order, edges)


def busy_list(running, W, H, w, h, edges=True, corners_last=False):
    busy = nodes(running)
    candidates = []
    for x1, y1, bw, bh, *_ in running:
        x2, y2 = x1 + bw - 1, y1 + bh - 1
        for cw, ch in turns(w, h, True):
            slides = [  # (fixed x or None, fixed y or None, positions of the moving one)
                (x2 + 1, None, range(y1, y2 + 1)),
                (x2 + 1, None, range(y2 - ch + 1, y1 - ch, -1)),
                (None, y2 + 1, range(x1, x2 + 1)),
                (None, y2 + 1, range(x2 - cw + 1, x1 - cw, -1)),
                (x1 - cw, None, range(y1, y2 + 1)),
                (x1 - cw, None, range(y2 - ch + 1, y1 - ch, -1)),
                (None, y1 - ch, range(x1, x2 + 1)),
                (None, y1 - ch, range(x2 - cw + 1, x1 - cw, -1)),
            ]
            for fx, fy, positions in slides:
                for p in positions:
                    x, y = (fx, p) if fx is not None else (p, fy)
                    if not (x >= 0 and y >= 0 and x + cw <= W and y + ch <= H):
                        break
                    if free(busy, W, H, x, y, cw, ch):
                        candidates.append((x, y, cw, ch))
                        break
    corners = _mesh_corners(busy, W, H, w, h)
    order = candidates + corners if corners_last else corners + candidates
    return _highest(busy, W, H, order, edges)


def regions(running, W, H, w, h) -> list[Rect]:
    """Free regions <x1, y1, x2, y2> by subtraction, as simcore.machines.mesh2d.grid documents."""
    if w > W or h > H:
        return []
    out = [(0, 0, W - w, H - h)]
    for x, y, bw, bh, *_ in running:
        px1, py1, px2, py2 = max(0, x - w + 1), max(0, y - h + 1), x + bw - 1, y + bh - 1
        pieces = []
        for rx1, ry1, rx2, ry2 in out:
            if px1 > rx2 or rx1 > px2 or py1 > ry2 or ry1 > py2:
                pieces.append((rx1, ry1, rx2, ry2))
                continue
            cx1, cx2 = max(rx1, px1), min(rx2, px2)
            if rx1 < px1:
                pieces.append((rx1, ry1, px1 - 1, ry2))
            if px2 < rx2:
                pieces.append((px2 + 1, ry1, rx2, ry2))
            if ry1 < py1:
                pieces.append((cx1, ry1, cx2, py1 - 1))
            if py2 < ry2:
                pieces.append((cx1, py2 + 1, cx2, ry2))
        out = pieces
    return out


def lookahead(running, W, H, w, h, policy, waiting=()):
    """policy: la-ff, la-bf, la-wf, bfl1, wfl1; `waiting`: (w, h) of the other waiting
    jobs, in queue order."""
    found = regions(running, W, H, w, h)
    if not found:
        return None
    area = [(r[2] - r[0] + 1) * (r[3] - r[1] + 1) for r in found]
    if policy == "la-ff":
        r = min(range(len(found)), key=lambda k: (found[k][0], found[k][1], k))
        return found[r][0], found[r][1], w, h
    order = sorted(range(len(found)), key=lambda k: (-area[k] if policy in ("la-wf", "wfl1")
                                                     else area[k], k))
    pick = order[0]
    if policy in ("bfl1", "wfl1") and waiting:
        big = max(range(len(waiting)), key=lambda k: (waiting[k][0] * waiting[k][1], -k))
        bw, bh = waiting[big]
        for k in order:
            trial = [*running, (found[k][0], found[k][1], w, h, 0.0)]
            if regions(trial, W, H, bw, bh):
                pick = k
                break
    return found[pick][0], found[pick][1], w, h


def _distance(busy, W, H, x, y, dx, dy) -> int:
    d = 1
    while True:
        i, j = x + d * dx, y + d * dy
        if not (0 <= i < W and 0 <= j < H) or (i, j) in busy:
            return d
        d += 1


def _plane_distance(busy, W, H, x, y, dx, dy) -> int:
    """Hops to the nearest busy node on the (dx, dy) side of <x, y>, or to the boundary
    straight that way, whichever is nearer."""
    edge = _distance(set(), W, H, x, y, dx, dy)
    return min([edge] + [abs(i - x) + abs(j - y) for i, j in busy
                         if (i - x) * dx > 0 or (j - y) * dy > 0])


def bdi_value(busy, W, H, x, y, w, h, distance="line") -> float:
    x2, y2 = x + w - 1, y + h - 1
    walks = [(x, y, 0, -1), (x, y, -1, 0), (x2, y, 0, -1), (x2, y, 1, 0),
             (x, y2, 0, 1), (x, y2, -1, 0), (x2, y2, 0, 1), (x2, y2, 1, 0)]
    hops = _distance if distance == "line" else _plane_distance
    return sum(1.0 / hops(busy, W, H, *walk) for walk in walks)


def bdi_candidates(running, W, H, w, h, candidates="regions"):
    """The bases BDI scores for J(w, h): the corners of the free regions, Best Fit's
    corners of the coverage array, or the busy list's (the free mesh corners, then every
    free position along each listed submesh's east, north, west and south side)."""
    busy = nodes(running)
    if candidates == "regions":
        return [(x, y) for x1, y1, x2, y2 in regions(running, W, H, w, h)
                for x, y in ((x1, y1), (x2, y1), (x1, y2), (x2, y2))]
    if candidates == "best-fit":
        return [(x, y) for x, y, *_ in _corners(busy, W, H, w, h)]
    around = [(0, 0), (W - w, 0), (0, H - h), (W - w, H - h)]
    for x1, y1, bw, bh, *_ in running:
        around += _along_sides(x1, y1, x1 + bw - 1, y1 + bh - 1, w, h)
    return [(x, y) for x, y in around if free(busy, W, H, x, y, w, h)]


def bdi(running, W, H, w, h, rotation="on-failure", distance="line", candidates="regions"):
    busy = nodes(running)
    if not running and w <= W and h <= H:
        return 0, 0, w, h
    best, value = None, -1.0
    for cw, ch in turns(w, h, True):
        if best is not None and rotation == "on-failure":
            break
        for x, y in bdi_candidates(running, W, H, cw, ch, candidates):
            v = bdi_value(busy, W, H, x, y, cw, ch, distance)
            if v > value:
                best, value = (x, y, cw, ch), v
    return best


def tectd(running, W, H, x, y, w, h, now, estimate) -> float:
    """The sum of ECT differences over the neighbours of a candidate."""
    ect = {(i, j): e for bx, by, bw, bh, e in running for i in range(bx, bx + bw)
           for j in range(by, by + bh)}
    z = now + estimate
    around = [(x - 1, j) for j in range(y, y + h)] + [(x + w, j) for j in range(y, y + h)] \
        + [(i, y - 1) for i in range(x, x + w)] + [(i, y + h) for i in range(x, x + w)]
    total = 0.0
    for node in around:
        if not (0 <= node[0] < W and 0 <= node[1] < H):
            continue
        total += abs(z - max(ect[node], now)) if node in ect else estimate
    return total


def eet_sb(running, W, H, w, h, now, estimate):
    busy = nodes(running)
    if not running and w <= W and h <= H:
        return 0, 0, w, h
    candidates = []
    for cw, ch in turns(w, h, True):
        candidates += [(x, y, cw, ch) for x, y in ((0, 0), (W - cw, 0), (0, H - ch),
                                                   (W - cw, H - ch))]
    for x1, y1, bw, bh, _ in running:
        x2, y2 = x1 + bw - 1, y1 + bh - 1
        for cw, ch in turns(w, h, True):
            candidates += [(x2 + 1, y, cw, ch) for y in range(y1 - ch + 1, y2 + 1)]
            candidates += [(x, y2 + 1, cw, ch) for x in range(x1 - cw + 1, x2 + 1)]
            candidates += [(x1 - cw, y, cw, ch) for y in range(y1 - ch + 1, y2 + 1)]
            candidates += [(x, y1 - ch, cw, ch) for x in range(x1 - cw + 1, x2 + 1)]
    best, value = None, math.inf
    for c in candidates:
        if free(busy, W, H, *c):
            v = tectd(running, W, H, *c, now, estimate)
            if v < value:
                best, value = c, v
    return best


def eet_sc(running, W, H, w, h, now, estimate):
    busy = nodes(running)
    best, value = None, math.inf
    for cw, ch in turns(w, h, True):
        if cw > W or ch > H:
            continue
        for x, y, _, _ in _corners(busy, W, H, cw, ch):
            v = tectd(running, W, H, x, y, cw, ch, now, estimate)
            if v < value:
                best, value = (x, y, cw, ch), v
    return best


def buddy(running, side, w, h):
    """2DBS: the lower-left 2^i block of the first maximal free block of the smallest
    level >= i, blocks of a level in Morton order (x in the even bits)."""
    busy = nodes(running)
    order = side.bit_length() - 1
    level = (max(w, h) - 1).bit_length()

    def is_free(bx, by, k):
        return free(busy, side, side, bx << k, by << k, 1 << k, 1 << k)

    def morton(bx, by):
        return sum((((bx >> b) & 1) << (2 * b)) | (((by >> b) & 1) << (2 * b + 1))
                   for b in range(order + 1))

    for k in range(level, order + 1):
        blocks = sorted(((bx, by) for bx in range(side >> k) for by in range(side >> k)),
                        key=lambda b: morton(*b))
        for bx, by in blocks:
            if is_free(bx, by, k) and (k == order or not is_free(bx >> 1, by >> 1, k + 1)):
                return bx << k, by << k, 1 << level, 1 << level
    return None
