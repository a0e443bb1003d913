"""The run cache: every simulated run's summary row, and its per-job rows where its shard
keeps them, found by run key and shared by every dataset.

Runs are written in parts of batches, many runs to a file, never a file per run: under the
results root, `cache/batches/<definitions>/<batch>-<part>.parquet` holds the summary rows
of a part and `<batch>-<part>.jobs.parquet` beside it their per-job rows. `<definitions>`
is the digest of the rows and code the runs use (`simcore.sweep.identity.definitions`),
which every run key hashes, so a run can only be in its definitions' directory and a
shard looks in that one alone; `<batch>` is the digest of the batch's run keys, so a
batch simulated again after its worker was lost finds the parts it wrote
(`written_parts`). A part's metadata lists its run keys (and, for per-job rows, each
run's number of rows), sealed with its content's checksum (`simcore.sweep.store`): the
keys are read from a file's metadata alone when the cache is searched, and its content is
verified whenever its rows are read. A file written by a killed process is a temporary
that no search sees. Stores of an older simcore hold a file per run
(`cache/runs/<k0k1>/<key>.parquet`, `.jobs.parquet`): those are read, never written.

This module's paths sit beside `simcore.base.patterns`' CACHE_ENTRY, not in it: that
module is part of every run's code, and a path added there would change every run key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simcore.base import patterns
from simcore.base.atomic import remove_stale_temporaries
from simcore.base.errors import IntegrityError
from simcore.base.regular import open_regular
from simcore.sweep.store import (
    JOBS_SCHEMA,
    SEAL_KEY,
    SUMMARY_SCHEMA,
    metadata_seal,
    read_verified,
    summary_table,
    write_table,
)

BATCHES = "cache/batches"
#: Metadata keys of a part: its run keys (newline-separated), and in a per-job file each
#: run's number of rows (JSON list, in the keys' order).
KEYS = b"run_keys"
ROWS = b"run_rows"
SUFFIX, JOBS_SUFFIX = ".parquet", ".jobs.parquet"


@dataclass(frozen=True)
class Entry:
    """Where the cache keeps one run: the file of its summary row, and of its per-job rows
    if any were kept; in a part of a batch, or in a file of its own (an older store)."""

    summary: Path
    jobs: Path | None
    part: bool = True


def batch_directory(root: str | os.PathLike[str], definitions: str) -> Path:
    """The directory of the parts of runs with these `definitions`."""
    return Path(root) / BATCHES / definitions


def batch_name(keys: Sequence[str], per_job: bool = False) -> str:
    """A batch's name: the digest of its run keys, in order, and of whether it keeps their
    per-job rows."""
    return hashlib.sha256("\n".join([*keys, str(per_job)]).encode()).hexdigest()[:24]


def legacy_path(root: str | os.PathLike[str], key: str, per_job: bool = False) -> Path:
    """Where a store of an older simcore kept run `key` in a file of its own."""
    pattern = patterns.CACHE_JOBS if per_job else patterns.CACHE_ENTRY
    return Path(root) / pattern.format(prefix=key[:2], key=key)


def _legacy_directory(root: str | os.PathLike[str]) -> Path:
    """Where a store of an older simcore kept its runs, a file each (`legacy_path`)."""
    return (Path(root) / patterns.CACHE_ENTRY).parents[1]


def _jobs_file(part: Path) -> Path:
    """The file of a part's per-job rows, beside the file of its summary rows."""
    return part.with_name(part.name.removesuffix(SUFFIX) + JOBS_SUFFIX)


def find(root: str | os.PathLike[str], definitions: str, keys: Iterable[str],
         per_job: bool = False, log: TextIO = sys.stderr) -> dict[str, Entry]:
    """The entries of `keys` the cache holds (with per-job rows, if `per_job`): in the
    parts of the definitions' directory, else in a file of its own. A part whose metadata
    is damaged is reported in `log` and removed (its runs are simulated again)."""
    index = parts_index(batch_directory(root, definitions), log)
    found = {}
    legacy = _legacy_directory(root).is_dir()
    for key in keys:
        entry = index.get(key)
        if entry is None and legacy:
            entry = _legacy_entry(root, key)
        if entry is not None and (entry.jobs is not None or not per_job):
            found[key] = entry
    return found


def _legacy_entry(root: str | os.PathLike[str], key: str) -> Entry | None:
    summary = legacy_path(root, key)
    if not summary.is_file():
        return None
    jobs = legacy_path(root, key, per_job=True)
    return Entry(summary, jobs if jobs.is_file() else None, part=False)


def parts_index(directory: Path, log: TextIO = sys.stderr,
                prefix: str = "") -> dict[str, Entry]:
    """Run key -> entry, of every part in `directory` (whose name starts with `prefix`),
    from their metadata; a part holding per-job rows wins over one without."""
    index: dict[str, Entry] = {}
    for summary, keys in _parts(directory, log, prefix):
        jobs = _jobs_file(summary)
        entry = Entry(summary, jobs if jobs.is_file() else None)
        for key in keys:
            if key not in index or index[key].jobs is None:
                index[key] = entry
    return index


def _parts(directory: Path, log: TextIO, prefix: str) -> list[tuple[Path, list[str]]]:
    """Each part's summary file in `directory` and its run keys, read from its metadata and
    checked against its seal; stale temporaries of killed writers are removed."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    parts = []
    for name in names:
        if name.startswith(".") and name.endswith(".tmp"):
            remove_stale_temporaries(directory / name[1:].split("~", 1)[0])
            continue
        if not name.startswith(prefix) or not name.endswith(SUFFIX) \
                or name.endswith(JOBS_SUFFIX):
            continue
        path = directory / name
        try:
            meta = _metadata(path)
            seal = meta.get(SEAL_KEY, b"").decode()
            if KEYS not in meta or seal != metadata_seal(meta):
                raise IntegrityError("metadata does not match its checksum")
        except FileNotFoundError:
            continue
        except (IntegrityError, pa.ArrowException, OSError) as exc:
            forget_part(path, f"{path}: {exc}", log)
            continue
        parts.append((path, meta[KEYS].decode().split("\n")))
    return parts


def forget_part(path: Path, problem: str, log: TextIO) -> None:
    """Remove a damaged part (its summary and per-job files), saying why in `log`: its runs
    are simulated again."""
    print(f"cache: {problem}; removed: its runs are simulated again", file=log, flush=True)
    for file in (path, _jobs_file(path)):
        file.unlink(missing_ok=True)


def written_parts(root: str | os.PathLike[str], definitions: str,
                  batch: str) -> tuple[set[str], int]:
    """The run keys the parts of `batch` already hold, and the number of its next part:
    what a batch simulated again (its worker lost) need not simulate."""
    index = parts_index(batch_directory(root, definitions), prefix=f"{batch}-")
    parts = {entry.summary.name for entry in index.values()}
    numbers = [int(name.removesuffix(SUFFIX).rsplit("-", 1)[1]) for name in parts]
    return set(index), max(numbers, default=-1) + 1


def write_part(root: str | os.PathLike[str], definitions: str, batch: str, part: int,
               rows: Sequence[Mapping[str, object]],
               jobs: Sequence[pa.Table] | None = None) -> Path:
    """Write one part of a batch: the runs' summary rows and, if given, their per-job rows
    (tables of JOBS_SCHEMA, in the rows' order). The per-job file is written first, so
    that a part a search finds is whole. Returns the summary file's path."""
    keys = [str(row["run_key"]) for row in rows]
    path = batch_directory(root, definitions) / f"{batch}-{part:05d}{SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {KEYS.decode(): "\n".join(keys)}
    if jobs is not None:
        table = pa.concat_tables(jobs) if jobs else JOBS_SCHEMA.empty_table()
        write_table(table, _jobs_file(path),
                    {**meta, ROWS.decode(): [t.num_rows for t in jobs]})
    write_table(summary_table(rows), path, meta)
    return path


@dataclass(frozen=True)
class Runs:
    """Runs read from the cache, verified: the summary rows of the files read in one
    table and each run's row in it, and their per-job rows (where read) in another with
    each run's first row and count. Files are kept whole, never split into a table per
    run: a hundred thousand runs are a few tables, not a hundred thousand."""

    summary: pa.Table
    rows: Mapping[str, int]
    jobs: pa.Table
    spans: Mapping[str, tuple[int, int]]

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def row(self, key: str) -> dict[str, object]:
        """The summary row of run `key`."""
        return self.summary.slice(self.rows[key], 1).to_pylist()[0]

    def job_rows(self, key: str) -> pa.Table:
        """The per-job rows of run `key`."""
        return self.jobs.slice(*self.spans[key])

    def ordered(self, keys: Sequence[str]) -> tuple[pa.Table, pa.Table]:
        """The summary rows and the per-job rows (those read) of `keys`, in their order."""
        summary = self.summary.take(pa.array([self.rows[k] for k in keys], pa.int64()))
        spans = [self.spans[k] for k in keys if k in self.spans]
        rows = (np.concatenate([np.arange(s, s + n, dtype=np.int64) for s, n in spans])
                if spans else np.zeros(0, np.int64))
        return summary.combine_chunks(), self.jobs.take(pa.array(rows)).combine_chunks()

    def merged(self, other: Runs) -> Runs:
        """These runs and `other`'s (which win where both hold a run)."""
        shift, jobs_shift = self.summary.num_rows, self.jobs.num_rows
        return Runs(pa.concat_tables([self.summary, other.summary]),
                    {**self.rows, **{k: i + shift for k, i in other.rows.items()}},
                    pa.concat_tables([self.jobs, other.jobs]),
                    {**self.spans, **{k: (s + jobs_shift, n)
                                      for k, (s, n) in other.spans.items()}})


def read_entries(entries: Mapping[str, Entry], per_job: bool = False,
                 log: TextIO = sys.stderr) -> Runs:
    """The summary rows of the runs of `entries` and, with `per_job`, their per-job rows,
    every file read once and verified. A part whose content is damaged is reported in
    `log` and removed, and its runs are left out (the caller simulates them again); a
    damaged file of an older store is reported and left out too."""
    by_file: dict[Path, list[str]] = {}
    for key, entry in entries.items():
        by_file.setdefault(entry.summary, []).append(key)
    summaries, jobs = [SUMMARY_SCHEMA.empty_table()], [JOBS_SCHEMA.empty_table()]
    rows: dict[str, int] = {}
    spans: dict[str, tuple[int, int]] = {}
    n_rows = n_jobs = 0
    for path, keys in by_file.items():
        entry = entries[keys[0]]
        try:
            if entry.part:
                table, listed, _ = _read_part(path, SUMMARY_SCHEMA)
                job_rows, counted, counts = (_read_part(entry.jobs, JOBS_SCHEMA) if per_job
                                             else (None, [], []))
            else:
                table, listed = read_verified(path, SUMMARY_SCHEMA, keys[0]), keys[:1]
                job_rows = (read_verified(entry.jobs, JOBS_SCHEMA, keys[0])
                            if per_job and entry.jobs is not None else None)
                counted = listed
                counts = [] if job_rows is None else [job_rows.num_rows]
        except FileNotFoundError as exc:
            print(f"cache: {exc.filename}: gone; its runs are simulated again", file=log)
            continue
        except IntegrityError as exc:
            if entry.part:
                forget_part(path, str(exc), log)
            else:
                print(f"cache entry {exc}; simulating the run again", file=log, flush=True)
            continue
        wanted = set(keys)
        rows.update((key, n_rows + i) for i, key in enumerate(listed) if key in wanted)
        summaries.append(table.replace_schema_metadata(None))
        n_rows += table.num_rows
        if job_rows is not None:
            starts = np.concatenate([[0], np.cumsum(counts)])
            spans.update((key, (n_jobs + int(start), int(count)))
                         for key, start, count in zip(counted, starts, counts, strict=False)
                         if key in wanted)
            jobs.append(job_rows.replace_schema_metadata(None))
            n_jobs += job_rows.num_rows
    return Runs(pa.concat_tables(summaries), rows, pa.concat_tables(jobs), spans)


def _read_part(path: Path | None, schema: pa.Schema) -> tuple[pa.Table, list[str], list[int]]:
    """A part's rows, verified, with the run keys its metadata lists and each one's rows:
    content and metadata match their checksums, and its `run_key` column is the listed
    keys, each repeated its listed count. A part without per-job rows has no such file
    (`path` None: FileNotFoundError)."""
    if path is None:
        raise FileNotFoundError("no per-job rows")
    table = read_verified(path, schema)
    meta = table.schema.metadata or {}
    keys = meta[KEYS].decode().split("\n")
    counts = json.loads(meta[ROWS]) if ROWS in meta else [1] * len(keys)
    if len(counts) != len(keys) or sum(counts) != table.num_rows or not table.column(
            "run_key").equals(pa.chunked_array([np.repeat(keys, counts).astype(object)],
                                               pa.string())):
        raise IntegrityError(f"{path}: rows are not those of the runs its metadata lists")
    return table, keys, counts


def forget(root: str | os.PathLike[str], definitions: str, keys: Iterable[str],
           log: TextIO = sys.stderr) -> int:
    """Remove runs from the cache: their files of their own, and each part holding any of
    them, after its other runs are written to a new part (a part that cannot be read is
    removed whole). Returns how many of `keys` the cache held."""
    keys = set(keys)
    entries = find(root, definitions, keys, log=log)
    for entry in set(entries.values()):
        if entry.part:
            kept = [k for k in _listed_keys(entry.summary) if k not in keys]
            per_job = entry.jobs is not None
            runs = read_entries(dict.fromkeys(kept, entry), per_job, log)
            if kept and len(runs) == len(kept):
                write_part(root, definitions, batch_name(kept, per_job), 0,
                           [runs.row(k) for k in kept],
                           [runs.job_rows(k) for k in kept] if per_job else None)
        for file in (entry.summary, entry.jobs):
            if file is not None:
                file.unlink(missing_ok=True)
    return len(entries)


def _listed_keys(path: Path) -> list[str]:
    """The run keys a part's metadata lists."""
    return _metadata(path)[KEYS].decode().split("\n")


def _metadata(path: Path) -> Mapping[bytes, bytes]:
    """The schema metadata of a Parquet file, its rows left unread."""
    with open_regular(path) as handle:
        return pq.read_schema(handle).metadata or {}


#: Most runs, and per-job rows, a part written by `compact` holds (a part is read whole).
PART_RUNS = 100_000
PART_ROWS = 2_000_000


def compact(root: str | os.PathLike[str], used: Mapping[str, Iterable[str]],
            log: TextIO = sys.stderr) -> dict[str, int]:
    """Keep in the run cache under `root` only the runs `used` names (definitions -> run
    keys), each read and verified, in as few parts as their rows allow: the new parts are
    written first, then every file that was there before is removed (files of their own
    included), so an interruption loses nothing; a damaged file's runs are dropped. Run it
    while no sweep writes to the cache. Returns the files and runs before and after."""
    root = Path(root)
    owner = {key: definitions for definitions, keys in used.items() for key in keys}
    batches = root / BATCHES
    before = sorted(_legacy_directory(root).glob("*/*.parquet"))
    before += sorted(batches.glob("*/*.parquet"))
    held: dict[str, dict[str, Entry]] = {}
    for file in before:
        name = file.name.removesuffix(SUFFIX)
        if file.parent.parent == batches or name.endswith(".jobs") or name not in owner:
            continue
        entry = _legacy_entry(root, name)
        if entry is not None:
            held.setdefault(owner[name], {})[name] = entry
    for directory in sorted({file.parent for file in before if file.parent.parent == batches}):
        for key, entry in parts_index(directory, log).items():
            if owner.get(key) == directory.name:
                held.setdefault(directory.name, {})[key] = entry
    written: set[Path] = set()
    for definitions, entries in sorted(held.items()):
        written |= _rewrite(root, definitions, entries, log)
    for file in before:
        if file not in written:
            file.unlink(missing_ok=True)
    for directory in {file.parent for file in before}:
        with contextlib.suppress(OSError):
            directory.rmdir()  # if empty
    after = sorted(batches.glob("*/*.parquet"))
    return {"files_before": len(before), "files_after": len(after),
            "runs_kept": sum(len(_listed_keys(f)) for f in after
                             if not f.name.endswith(JOBS_SUFFIX))}


def _rewrite(root: Path, definitions: str, entries: Mapping[str, Entry],
             log: TextIO) -> set[Path]:
    """Write the runs of `entries` (verified) to new parts of the definitions' directory,
    those with per-job rows apart; returns the files written."""
    written: set[Path] = set()
    for with_jobs in (True, False):
        keys = sorted(k for k, e in entries.items() if (e.jobs is not None) == with_jobs)
        rows: list[dict[str, object]] = []
        jobs: list[pa.Table] = []
        job_rows = 0  # in `jobs`
        for start in range(0, len(keys), 1000):
            chunk = {key: entries[key] for key in keys[start:start + 1000]}
            runs = read_entries(chunk, with_jobs, log)
            for key in chunk:
                if key in runs:
                    rows.append(runs.row(key))
                    if with_jobs:
                        jobs.append(runs.job_rows(key))
                        job_rows += jobs[-1].num_rows
                if len(rows) >= PART_RUNS or job_rows >= PART_ROWS:
                    written |= _write_compacted(root, definitions, rows, jobs, with_jobs)
                    job_rows = 0
        written |= _write_compacted(root, definitions, rows, jobs, with_jobs)
    return written


def _write_compacted(root: Path, definitions: str, rows: list[dict[str, object]],
                     jobs: list[pa.Table], with_jobs: bool) -> set[Path]:
    """Write `rows` (and `jobs`) as one part, emptying them; the files written."""
    if not rows:
        return set()
    keys = [str(row["run_key"]) for row in rows]
    path = write_part(root, definitions, batch_name(keys, with_jobs), 0, rows,
                      jobs if with_jobs else None)
    rows.clear()
    jobs.clear()
    return {path, _jobs_file(path)}
