"""A synthetic workload's samples in the results, many seeds to a file, and the job table
a run reads, from a sample file or a converted trace.

A workload's directory of samples (patterns.SYNTHETIC_SAMPLES) holds a file per range of
seeds, `seeds=<a>-<b>.parquet`, with the samples of the seeds in a..b the configuration
uses. A range spans SAMPLE_ROWS jobs' worth of seeds, rounded down to a power of ten
(1,000 seeds of 300 jobs, 10 of 50,000), so each process that simulates one of its seeds
reads the file whole, once. A file's rows are its samples one after the other, each
exactly the table `simcore.workload.synthetic.synthesize` makes; its metadata lists each
sample's seed, rows and own metadata (its content checksum among them, which run keys
hash) and is sealed with the file's content checksum (`simcore.sweep.store.sealed`), so
the keys of a million runs are read from the files' metadata alone, and a sample read
for a run is verified with its file.

The file name pattern lives here, not in `simcore.base.patterns`: that module is part of
every run's code, and a path added there would change every run key.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from simcore.base.atomic import atomic_path
from simcore.base.checksums import DIGEST_KEY, recorded_digest, with_digest
from simcore.base.errors import IntegrityError
from simcore.base.regular import open_regular
from simcore.sweep.store import SEAL_KEY, metadata_seal, read_verified, sealed
from simcore.workload.io import read_workload
from simcore.workload.synthetic import JOBS, SyntheticSpec, synthesize

if TYPE_CHECKING:
    from simcore.sweep.experiments import Source

SAMPLE_FILE = "seeds={first}-{last}.parquet"  # in patterns.SYNTHETIC_SAMPLES
#: Jobs a sample file holds at most, over all its seeds.
SAMPLE_ROWS = 1_000_000
#: Metadata key of a sample file's listing: [{"seed", "rows", "metadata"}, ...].
SAMPLES = b"samples"
REBUILD = "remove it and run snakemake again to make the workload's samples again"
#: What was read of workload files, by path: a sample file's listing (seed -> its entry),
#: a converted trace's digest, or why it could not be read.
Listings = dict[str, "dict[int, dict[str, Any]] | str | Exception"]


@functools.cache
def seeds_per_file(spec: SyntheticSpec) -> int:
    """How many consecutive seeds share a file: SAMPLE_ROWS over the jobs of a sample,
    rounded down to a power of ten."""
    jobs = max(1, int(dict(spec.params).get(JOBS.name) or 1))
    return 10 ** int(math.log10(max(1, SAMPLE_ROWS // jobs)))


def sample_name(spec: SyntheticSpec, seed: int) -> str:
    """The name of the sample file holding `seed`'s sample, in the workload's directory
    of samples (patterns.SYNTHETIC_SAMPLES)."""
    width = seeds_per_file(spec)
    first = seed // width * width
    return SAMPLE_FILE.format(first=first, last=first + width - 1)


def write_samples(spec: SyntheticSpec, seeds: Iterable[int],
                  directory: str | os.PathLike[str]) -> dict[Path, list[int]]:
    """Sample `spec` for each seed into the sample files in `directory` (each written
    atomically); returns each file's seeds."""
    files: dict[Path, list[int]] = {}
    for seed in sorted(set(seeds)):
        files.setdefault(Path(directory) / sample_name(spec, seed), []).append(seed)
    for path, group in files.items():
        tables = [synthesize(spec, seed) for seed in group]
        listing = [{"seed": seed, "rows": table.num_rows,
                    "metadata": {k.decode(): v.decode()
                                 for k, v in (with_digest(table).schema.metadata or {}).items()}}
                   for seed, table in zip(group, tables, strict=True)]
        table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])
        table = sealed(table.replace_schema_metadata({SAMPLES: json.dumps(listing).encode()}))
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
    return files


def listed(path: str | os.PathLike[str]) -> dict[int, dict[str, Any]]:
    """Seed -> {"rows", "metadata"} of a sample file, from its metadata alone, checked
    against its seal (its rows are verified when a run reads them): FileNotFoundError if
    it is missing, IntegrityError if it is not a sample file or is damaged."""
    try:
        with open_regular(path) as handle:
            meta = pq.read_schema(handle).metadata or {}
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise IntegrityError(f"{path}: not a readable sample file ({exc}); {REBUILD}") from None
    return _listing(meta, path)


def _listing(meta: Mapping[bytes, bytes],
             path: str | os.PathLike[str]) -> dict[int, dict[str, Any]]:
    """A sample file's listing from its metadata `meta`, checked against its seal."""
    if SAMPLES not in meta or meta.get(SEAL_KEY, b"").decode() != metadata_seal(meta):
        raise IntegrityError(f"{path}: its listing of samples does not match its checksum; "
                             f"{REBUILD}")
    return {entry["seed"]: entry for entry in json.loads(meta[SAMPLES])}


def workload_digest(root: str | os.PathLike[str], source: Source, seed: int,
                    listings: Listings) -> str:
    """The content digest of the job table a run of `source` with `seed` reads (which its
    key hashes): a sample's from its file's listing, a converted trace's from its file.
    FileNotFoundError where the file is missing; IntegrityError where it is damaged, is
    not the one the source makes or lacks the seed. `listings` keeps what was read
    between calls, by file."""
    (found,) = workload_digests(root, source, [seed], listings)
    if isinstance(found, Exception):
        raise found
    return found


def workload_digests(root: str | os.PathLike[str], source: Source, seeds: Sequence[int],
                     listings: Listings) -> list[str | Exception]:
    """`workload_digest` of each seed, or the exception it raises, each file's path found
    once (a million seeds take a second)."""
    width = 0 if source.synthetic is None else seeds_per_file(source.synthetic)
    paths: dict[int, str] = {}  # by range of seeds (0: a trace's one file)
    out: list[str | Exception] = []
    for seed in seeds:
        group = seed // width if width else 0
        if group not in paths:
            paths[group] = os.path.join(root, source.path(seed))
        path = paths[group]
        if path not in listings:
            try:
                listings[path] = (listed(path) if source.synthetic is not None else
                                  _trace_digest(path, source, seed))
            except (FileNotFoundError, IntegrityError) as exc:
                listings[path] = exc
        listing = listings[path]
        if not isinstance(listing, dict):
            out.append(listing)
            continue
        entry = listing.get(seed)
        if entry is None or not _made_by(entry, source, seed):
            out.append(IntegrityError(f"{path}: holds no sample of {source.name} with seed "
                                      f"{seed}; {REBUILD}"))
        else:
            out.append(entry["metadata"][DIGEST_KEY.decode()])
    return out


def _trace_digest(path: str, source: Source, seed: int) -> str:
    """The content digest a converted trace records, the file verified against it."""
    digest = recorded_digest(read_workload(path, source.provenance(seed)))
    assert digest is not None  # read_workload refuses a file without one
    return digest


def _made_by(entry: Mapping[str, Any], source: Source, seed: int) -> bool:
    """Whether a listed sample says it was made by `source` with `seed`."""
    try:
        made = json.loads(entry["metadata"]["source"])
    except (KeyError, TypeError, ValueError):
        return False
    return all(made.get(k) == v for k, v in source.provenance(seed).items())


def run_table(root: str | os.PathLike[str], source: Source, seed: int) -> pa.Table:
    """The job table a run of `source` with `seed` reads, verified, read once per process
    while its file stays the same (an IntegrityError, saying how to rebuild it, where the
    file is damaged or made by another source)."""
    path = Path(root) / source.path(seed)
    stat = path.stat()
    if source.synthetic is None:
        return _trace_once(str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino)
    table = _samples_once(str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino).get(seed)
    if table is None or not _made_by({"metadata": {k.decode(): v.decode() for k, v in (
            table.schema.metadata or {}).items()}}, source, seed):
        raise IntegrityError(f"{path}: holds no sample of {source.name} with seed {seed}; "
                             f"{REBUILD}")
    return table


@functools.lru_cache(maxsize=4)
def _trace_once(path: str, mtime_ns: int, size: int, inode: int) -> pa.Table:
    return read_workload(path)


@functools.lru_cache(maxsize=4)
def _samples_once(path: str, mtime_ns: int, size: int, inode: int) -> dict[int, pa.Table]:
    """Each seed's table in a sample file, the file verified once."""
    try:
        table = read_verified(path)  # content and metadata matching their checksums
    except IntegrityError as exc:
        raise IntegrityError(f"{exc}; {REBUILD}") from None
    entries = _listing(table.schema.metadata or {}, path)
    bare = table.replace_schema_metadata(None)
    samples, start = {}, 0
    for seed, entry in entries.items():
        meta = {k.encode(): v.encode() for k, v in entry["metadata"].items()}
        samples[seed] = bare.slice(start, entry["rows"]).replace_schema_metadata(meta)
        start += entry["rows"]
    if start != table.num_rows:
        raise IntegrityError(f"{path}: holds {table.num_rows} rows, its listing "
                             f"{start}; {REBUILD}")
    return samples


def parse_spans(text: str) -> list[int]:
    """The seeds of a text `seed_spans` wrote; a ValueError says what is wrong."""
    seeds: list[int] = []
    for span in text.split(","):
        first, _, last = span.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            low, high = -1, -1
        if low < 0 or high < low:
            raise ValueError(f"{span!r}: expected SEED or FIRST-LAST with 0 <= FIRST <= LAST")
        seeds.extend(range(low, high + 1))
    return seeds


def seed_spans(seeds: Sequence[int]) -> str:
    """Seeds as a short text of ranges, e.g. `1-1000,2001,3000-3999` (`parse_spans`)."""
    spans: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if spans and seed == spans[-1][1] + 1:
            spans[-1][1] = seed
        else:
            spans.append([seed, seed])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
