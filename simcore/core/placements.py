"""The placement log of a simulation, and resource usage over time derived from it.

Every run logs every start and every migration move: from `time_s` on, job `job_id`
holds the resources of that entry (a bitset: unit bits, then on wired machines each
line's cable slot), until its next entry or its end. The kernel keeps each entry's bitset
as a code of a few words (`simcore.core.state.encode_resources`: the runs of its set
bits, or the bitset where that is shorter), so that a log costs memory in proportion to
its entries and the runs of each placement, not to the machine's size.

On a machine that fails, a run a failure cuts short ends at that failure
instead; the log keeps the outage events the run applied (`OutageEvents`), so that a
replay finds which run each failure cut short. Usage over time needs no extra work in the
kernel: it is a replay of the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array
from simcore.base.errors import SimcoreError
from simcore.base.jit import kernel
from simcore.core.state import decode_resources, encode_resources


@dataclass(frozen=True, eq=False)
class OutageEvents:
    """The outage events a run applied, in the order it applied them (`simcore.core.failures`):
    at `time_s` a failure domain fails or, where `repair`, comes back; `masks` and `units`
    are that domain's resources and units, `draw` the uniform number that picks the run a
    failure hits where units have no bits (flat machines); `drain`: the failures drained
    their units (`on_failure: drain`), which went out of service when runs freed them,
    at times the events do not record."""

    time_s: np.ndarray  # (events,) float64
    repair: np.ndarray  # (events,) bool
    draw: np.ndarray  # (events,) float64
    masks: np.ndarray  # (events, words) uint64
    units: np.ndarray  # (events,) int64
    drain: bool = False


@dataclass(frozen=True, eq=False)
class PlacementLog:
    time_s: np.ndarray  # (entries,) float64
    job_id: np.ndarray  # (entries,) int64
    at: np.ndarray  # (entries + 1,) int64: where each entry's code begins in `code`
    code: np.ndarray  # (code words,) int64: the entries' codes (`encode_resources`)
    words: int  # words of a decoded bitset
    outages: OutageEvents | None = None  # None: the machine never fails

    @property
    def nbytes(self) -> int:
        """Memory the log takes."""
        return self.time_s.nbytes + self.job_id.nbytes + self.at.nbytes + self.code.nbytes

    @cached_property
    def masks(self) -> np.ndarray:
        """(entries, words) uint64: each entry's resources as a bitset."""
        masks = np.zeros((self.time_s.shape[0], self.words), dtype=np.uint64)
        decode_all(self.code, self.at, masks)
        return masks

    def resource_bits(self, entry: int) -> np.ndarray:
        """(64 * words,) bool: the resources of one entry, bit b at index b."""
        mask = np.zeros(self.words, dtype=np.uint64)
        decode_resources(self.code, self.at[entry], mask)
        return np.unpackbits(mask.astype("<u8").view(np.uint8), bitorder="little").astype(bool)

    def job_columns(self, rows: np.ndarray, n_rows: int) -> dict[str, pa.Array]:
        """The log as per-job list columns (`placed_at`, `placed_s`, `placed_code` of
        JOB_COLUMNS), entry e belonging to the row rows[e] of a table of `n_rows`."""
        order = np.argsort(rows, kind="stable")
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=offsets[1:])
        lengths = np.diff(self.at)[order]
        before = np.r_[0, np.cumsum(lengths)]  # code words of the entries before, in order
        gather = np.repeat(self.at[order] - before[:-1], lengths) + np.arange(before[-1])

        def lists(starts: np.ndarray, values: np.ndarray) -> pa.Array:
            return pa.ListArray.from_arrays(arrow_array(starts.astype(np.int32)),
                                            arrow_array(values))

        return {"placed_at": lists(offsets, order),
                "placed_s": lists(offsets, self.time_s[order]),
                "placed_code": lists(before[offsets], self.code[gather])}

    @classmethod
    def of_masks(cls, time_s: np.ndarray, job_id: np.ndarray, masks: np.ndarray) -> PlacementLog:
        """A log whose entry e says that job job_id[e] holds masks[e] from time_s[e] on."""
        at = np.zeros(masks.shape[0] + 1, dtype=np.int64)
        code = np.zeros(masks.shape[0] * (1 + masks.shape[1]), dtype=np.int64)
        encode_all(masks, code, at)
        return cls(np.asarray(time_s, dtype=np.float64), np.asarray(job_id, dtype=np.int64),
                   at, code[: at[-1]].copy(), masks.shape[1])

    @classmethod
    def from_job_columns(cls, table: pa.Table, words: int) -> PlacementLog:
        """The log a table's `placed_at`, `placed_s` and `placed_code` columns hold
        (`job_columns`), its jobs named by the table's `job_id`."""
        import pyarrow.compute as pc  # not on a run's path: it imports pandas

        def flat(name: str) -> tuple[np.ndarray, np.ndarray]:
            column = table.column(name)
            return (pc.list_value_length(column).to_numpy(zero_copy_only=False),
                    pc.list_flatten(column).to_numpy())

        counts, entry = flat("placed_at")
        if not np.array_equal(flat("placed_s")[0], counts):
            raise SimcoreError("placed_s: expected a time for each entry of placed_at")
        if np.sort(entry).tolist() != list(range(entry.size)):
            raise SimcoreError("placed_at: expected the log's entries 0, 1, ... once each")
        time_s = np.empty(entry.size)
        time_s[entry] = flat("placed_s")[1]
        ids = table.column("job_id").to_numpy()
        job_id = np.empty(entry.size, dtype=np.int64)
        job_id[entry] = np.repeat(ids, counts)
        lengths, codes = flat("placed_code")
        code_end, entry_end = np.cumsum(lengths), np.cumsum(counts)
        pieces: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * entry.size
        k = 0
        for row in range(counts.size):
            for e in entry[entry_end[row] - counts[row]:entry_end[row]].tolist():
                pieces[e] = _checked_code(codes[k:code_end[row]], words)
                k += pieces[e].size
            if k != code_end[row]:
                raise SimcoreError(f"placed_code of job {ids[row]}: {code_end[row] - k} words "
                                   "its entries' codes do not take")
        at = np.zeros(entry.size + 1, dtype=np.int64)
        np.cumsum([p.size for p in pieces], out=at[1:])
        code = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return cls(time_s, job_id, at, code, words)

    def held_until(self, job_ids: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """When each entry's resources are released: the job's next entry, else its end."""
        end_of = dict(zip(job_ids.tolist(), end_s.tolist(), strict=True))
        until = np.empty(self.time_s.shape[0])
        following: dict[int, float] = {}
        for i in range(self.time_s.shape[0] - 1, -1, -1):
            job = int(self.job_id[i])
            until[i] = following.get(job, end_of[job])
            following[job] = float(self.time_s[i])
        return until

    def bits(self) -> np.ndarray:
        """(entries, 64 * words) bool: bit b of a mask is column b."""
        little = self.masks.astype("<u8").view(np.uint8).reshape(self.masks.shape[0], -1)
        return np.unpackbits(little, axis=1, bitorder="little").astype(bool)


def usage_series(log: PlacementLog, job_ids: np.ndarray, end_s: np.ndarray,
                 resources: slice) -> tuple[np.ndarray, np.ndarray]:
    """(times, busy): how many of the bits in `resources` are held from each time on."""
    held = log.bits()[:, resources].sum(axis=1)
    until = log.held_until(job_ids, end_s)
    times = np.concatenate([log.time_s, until])
    delta = np.concatenate([held, -held])
    order = np.argsort(times, kind="stable")
    times, busy = times[order], np.cumsum(delta[order])
    last = np.r_[times[1:] != times[:-1], True]  # one value per distinct time
    return times[last], busy[last]


def _checked_code(words_left: np.ndarray, words: int) -> np.ndarray:
    """The code at the start of `words_left` (`encode_resources`), checked to fit a bitset
    of `words` words; a SimcoreError says what is wrong."""
    if words_left.size == 0:
        raise SimcoreError("placed_code: an entry has no code")
    head = int(words_left[0])
    length = 1 + (words if head < 0 else 2 * head)
    if (head < 0 and head != -words) or length > words_left.size:
        raise SimcoreError(f"placed_code: a code of header {head} does not fit the "
                           f"{words_left.size} words left for a bitset of {words} words")
    if head > 0:
        first, runs = words_left[1:length:2], words_left[2:length:2]
        if (first < 0).any() or (runs < 1).any() or (first + runs > 64 * words).any():
            raise SimcoreError(f"placed_code: runs outside a bitset of {words} words")
    return words_left[:length]


@kernel
def encode_all(masks, code, at):
    """Each bitset's code, one after another in `code`, entry e's from code[at[e]] on."""
    for e in range(masks.shape[0]):
        at[e + 1] = at[e] + encode_resources(masks[e], code, at[e])


@kernel
def decode_all(code, at, masks):
    """Each entry's bitset (masks[e]) from its code at code[at[e]]."""
    for e in range(masks.shape[0]):
        decode_resources(code, at[e], masks[e])
