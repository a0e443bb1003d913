"""The placement log's code of a resource bitset (`simcore.core.state.encode_resources`):
it reads back to the same bitset, lists the same bits and is never longer than one word
plus the bitset."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.state import decode_bits, decode_resources, encode_resources

bitsets = st.integers(1, 4).flatmap(lambda words: st.lists(
    st.one_of(st.just(0), st.just(2**64 - 1), st.integers(0, 2**64 - 1)),
    min_size=words, max_size=words)).map(lambda w: np.array(w, dtype=np.uint64))


def code_of(mask: np.ndarray) -> np.ndarray:
    code = np.full(3 + 1 + mask.shape[0], 7, dtype=np.int64)
    length = encode_resources(mask, code, 3)  # past a few words another entry holds
    return code[3:3 + length]


@settings(deadline=None)  # the first example compiles the kernels
@given(bitsets)
def test_a_code_reads_back_to_its_bitset(mask):
    code = code_of(mask)
    assert code.shape[0] <= 1 + mask.shape[0]
    back = np.zeros_like(mask)
    decode_resources(code, 0, back)
    assert back.tolist() == mask.tolist()
    bits = np.flatnonzero(np.unpackbits(mask.astype("<u8").view(np.uint8), bitorder="little"))
    listed = np.zeros(64 * mask.shape[0], dtype=np.int64)
    assert listed[:decode_bits(code, 0, 64 * mask.shape[0], listed)].tolist() == bits.tolist()
    n = 64 * mask.shape[0] - 5
    assert listed[:decode_bits(code, 0, n, listed)].tolist() == bits[bits < n].tolist()


def test_runs_are_first_bit_and_length_across_words():
    """Bits 3-4, 60-69 (across the word boundary) and 127 of 512: three runs."""
    mask = np.zeros(8, dtype=np.uint64)
    for bit in (3, 4, *range(60, 70), 127):
        mask[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)
    assert code_of(mask).tolist() == [3, 3, 2, 60, 10, 127, 1]
    assert code_of(np.zeros(8, dtype=np.uint64)).tolist() == [0]
    two = np.array([0b11011, 0], dtype=np.uint64)  # 2 runs take 5 words, the bitset 3
    assert code_of(two).tolist() == [-2, 0b11011, 0]


def test_per_job_placement_columns_are_checked_where_they_are_read():
    """A log rebuilt from per-job rows (a store's jobs.parquet) refuses codes that do not
    split into its entries or do not fit the machine's bitset."""
    import pyarrow as pa
    import pytest

    from simcore.base.errors import SimcoreError
    from simcore.core.placements import PlacementLog

    def table(codes, at=([0], [1]), times=([0.0], [5.0])):
        return pa.table({"job_id": [7, 8], "placed_at": list(at), "placed_s": list(times),
                         "placed_code": codes})

    log = PlacementLog.from_job_columns(table([[1, 0, 2], [1, 2, 3]]), 1)
    assert log.masks.ravel().tolist() == [0b11, 0b11100]
    for codes, match in (([[1, 0], [3, 1, 10, 2]], "header 1 does not fit"),
                         ([[1, 60, 10], [0]], "runs outside a bitset of 1 words"),
                         ([[-2, 1, 2], [0]], "header -2 does not fit"),
                         ([[0, 0], [0]], "job 7: 1 words its entries' codes do not take")):
        with pytest.raises(SimcoreError, match=match):
            PlacementLog.from_job_columns(table(codes), 1)
    with pytest.raises(SimcoreError, match="placed_s: expected a time for each entry"):
        PlacementLog.from_job_columns(table([[0], [0]], times=([0.0, 1.0], [5.0])), 1)
    with pytest.raises(SimcoreError, match="placed_at: expected the log's entries"):
        PlacementLog.from_job_columns(table([[0], [0]], at=([0], [2])), 1)
