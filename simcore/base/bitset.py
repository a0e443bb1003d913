"""Multi-word bitsets (uint64 arrays) for machine state: units, cables, reservations."""

from __future__ import annotations

import numpy as np

from simcore.base.jit import kernel

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


def n_words(n_bits: int) -> int:
    """Words needed to hold `n_bits` bits."""
    return max(1, (n_bits + 63) // 64)


@kernel
def intersects(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two bitsets share a bit."""
    for w in range(a.shape[0]):
        if a[w] & b[w]:
            return True
    return False


@kernel
def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two bitsets are equal."""
    for w in range(a.shape[0]):
        if a[w] != b[w]:
            return False
    return True


@kernel
def popcount64(x: np.uint64) -> int:
    """Bits set in one word (SWAR)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> np.uint64(56))


@kernel
def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[:] = src, word by word (slice assignment would need numba's runtime)."""
    for w in range(dst.shape[0]):
        dst[w] = src[w]


@kernel
def clear(dst: np.ndarray) -> None:
    """Zero every word."""
    for w in range(dst.shape[0]):
        dst[w] = 0
