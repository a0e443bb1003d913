"""Sets of unit ids as Batsim writes them: canonical interval sets such as `0-3 8`."""

from __future__ import annotations

import numpy as np


def interval_text(ids: np.ndarray) -> str:
    """The ids as ascending, disjoint, maximal intervals separated by spaces, `a-b` for a
    run of ids and `a` alone for a single one ("" for none)."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if ids.size == 0:
        return ""
    breaks = np.flatnonzero(np.diff(ids) != 1)
    starts = np.r_[ids[0], ids[breaks + 1]]
    ends = np.r_[ids[breaks], ids[-1]]
    return " ".join(f"{a}" if a == b else f"{a}-{b}"
                    for a, b in zip(starts.tolist(), ends.tolist(), strict=True))
