"""Dataset archives for deposit (e.g. on Zenodo): one reproducible tar file, verified on load.

An archive holds the given results (`store/`, `tables/`, `figures/`, `config/`, ... as the
caller names them) beside five generated members:

    MANIFEST.sha256   sha256 of every other member, `sha256sum -c` format, sorted by path
    manifest.json     archive format version, creation metadata, resolved config, members
                      (path, sha256, size) except manifest.json and MANIFEST.sha256
    environment.txt   `python -m pip freeze` of the packing interpreter
    README.md         data card: what, how produced, layout, loading, verifying, citing
    CITATION.cff      Citation File Format 1.2.0, citing the sources of the workloads the
                      configuration uses (Parallel Workloads Archive traces, workload models)

Members are regular files in sorted path order with mtime 0 (or a given epoch), mode 0644,
uid/gid 0 and no user or group names, so the same inputs give a byte-identical archive
(gzip without name or timestamp; xz single-threaded).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import platform
import re
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path, PurePosixPath
from typing import IO

import polars as pl
import yaml

from simcore.base.atomic import atomic_path
from simcore.base.checksums import recorded_digest, table_digest
from simcore.base.errors import ArchiveError, IntegrityError
from simcore.base.patterns import NAME_RULE, REPRODUCTION, is_name
from simcore.base.stamps import made_files, stamp_path, stamp_problems
from simcore.report.reproduction import verdict_paths
from simcore.sweep.store import (
    PARTITIONS,
    RESULT_SCHEMA_VERSION,
    SHARD_FILES,
    read_shard,
    shard_problem,
)

ARCHIVE_SCHEMA_VERSION = 1
MANIFEST = "MANIFEST.sha256"
MANIFEST_JSON = "manifest.json"
ENVIRONMENT = "environment.txt"
README = "README.md"
CITATION = "CITATION.cff"
GENERATED = (MANIFEST, MANIFEST_JSON, ENVIRONMENT, README, CITATION)

#: A compressed stream writing to a raw file (lzma's and gzip's are buffered streams).
_Stream = IO[bytes] | io.BufferedIOBase
_COMPRESSORS: dict[str, Callable[[IO[bytes]], AbstractContextManager[_Stream]]] = {
    # closed by pack's with statement
    ".tar.xz": lambda raw: lzma.LZMAFile(raw, "wb", format=lzma.FORMAT_XZ, preset=6),  # noqa: SIM115
    ".tar.gz": lambda raw: gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0),
    ".tar": nullcontext,
}
_METADATA: dict[str, type] = {
    "name": str, "version": str, "description": str, "authors": list, "git_commit": str,
    "config": Mapping, "simcore_version": str, "result_schema_version": int,
}
_PREFIX = re.compile(r"[A-Za-z0-9_.=-]+(/[A-Za-z0-9_.=-]+)*")
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64})  (.+)")
_CHUNK = 1 << 20
_MANIFEST_BYTES = 64 << 20  # what verify reads of each manifest into memory
_DESCRIPTION = (
    "Simulation results of torus-sweep: parameter sweeps of job scheduling and partition "
    "allocation on torus- and mesh-connected supercomputers such as Blue Gene/L."
)
_AUTHORS = [{"name": "The torus-sweep authors"}]  # CFF requires authors; pass real ones
_ABOUT = {
    "store": "hive-partitioned result store: `experiment=E/workload=W/machine=M/policy=P/` "
             "holds `summary.parquet` (one row per simulation) and, where kept, "
             "`jobs.parquet` (one row per job)",
    "tables": "aggregated tables (Parquet)",
    "figures": "figures",
    "schedules": "exported schedules with their pictures: `experiment=E/workload=W/machine=M/"
                 "policy=P/run=<i>/` (jobs.csv, placements.csv, machine_states.csv, "
                 "schedule.swf, resources.csv, run.json, pictures)",
    "config": "the configuration files the workflow was given, as written (the resolved "
              "configuration is above)",
    "reproduction.md": "the seed studies' published numbers beside this dataset's",
    verdict_paths(REPRODUCTION)[0].name: "reproduction.md's rows as data: statement, kind, "
                                         "n, ours, half-width, tolerance, verdict, why",
    verdict_paths(REPRODUCTION)[1].name: "the same, as Parquet",
}
#: The files and directories the workflow makes beside the store, as the archive holds them.
_MADE = ("tables", "figures", PurePosixPath(REPRODUCTION).name,
         *(path.name for path in verdict_paths(REPRODUCTION)))
_PWA_PAPER = {
    "type": "article",
    "title": "Experience with using the Parallel Workloads Archive",
    "authors": [
        {"family-names": "Feitelson", "given-names": "Dror G."},
        {"family-names": "Tsafrir", "given-names": "Dan"},
        {"family-names": "Krakov", "given-names": "David"},
    ],
    "journal": "Journal of Parallel and Distributed Computing",
    "volume": 74,
    "issue": 10,
    "start": 2967,
    "end": 2982,
    "year": 2014,
    "doi": "10.1016/j.jpdc.2014.06.013",
}
_LUBLIN_PAPER = {
    "type": "article",
    "title": "The workload on parallel supercomputers: modeling the characteristics of rigid "
             "jobs",
    "authors": [
        {"family-names": "Lublin", "given-names": "Uri"},
        {"family-names": "Feitelson", "given-names": "Dror G."},
    ],
    "journal": "Journal of Parallel and Distributed Computing",
    "volume": 63,
    "issue": 11,
    "year": 2003,
}
#: References of the synthetic models that have a published source beyond their summary.
_MODEL_PAPERS = {"lublin": _LUBLIN_PAPER}


def pack(out: str | os.PathLike[str], members: Mapping[str, str | os.PathLike[str]],
         metadata: Mapping[str, object], *, mtime: int = 0) -> Path:
    """Write one reproducible archive of `members` (archive prefix -> file or directory).
    A directory's files go under its prefix; a file goes under its prefix too, unless the
    prefix ends with the file's own name (`{"reproduction.md": path}`: `reproduction.md`).

    The suffix of `out` picks the compression: .tar.xz, .tar.gz or .tar. `metadata` needs
    `name`; optional: version, description, authors (CFF persons or entities), git_commit,
    config (resolved, JSON-compatible), simcore_version, result_schema_version (both default
    to this simcore's). `mtime` is every member's modification time (seconds since 1970).
    """
    out = Path(out)
    compressor = next((c for s, c in _COMPRESSORS.items() if out.name.endswith(s)), None)
    if compressor is None:
        raise ArchiveError(f"{out}: unsupported suffix; expected one of {', '.join(_COMPRESSORS)}")
    if not isinstance(mtime, int) or mtime < 0:
        raise ArchiveError(f"mtime {mtime!r}: expected a non-negative integer (seconds since 1970)")
    meta = _check_metadata(metadata)
    files = _collect(out, members)
    digests = {}
    for name, local in files.items():
        with local.open("rb") as source:
            digests[name] = _digest(source)
    generated = _generated(meta, digests)
    with atomic_path(out) as tmp, tmp.open("wb") as raw, compressor(raw) as stream, \
            tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted([*files, *generated]):
            if name in generated:
                tar.addfile(_info(name, len(generated[name]), mtime), io.BytesIO(generated[name]))
                continue
            sha256, size = digests[name]
            with files[name].open("rb") as source:
                reader = _HashingReader(source, files[name])
                tar.addfile(_info(name, size, mtime), reader)
            if reader.sha256.hexdigest() != sha256:
                raise ArchiveError(f"{files[name]}: changed while packing; pack again once "
                                   f"nothing writes to it")
    return out


def pack_dataset(out: str | os.PathLike[str], results: str | os.PathLike[str],
                 config: Mapping[str, object], *, name: str | None = None,
                 summaries: Sequence[str | os.PathLike[str]] | None = None,
                 configfiles: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Pack a dataset's directory `results` (`results/<dataset>/`): its store shards (those
    of `summaries`, else all), tables, figures, schedules, reproduction.md, and each of
    `configfiles` as written, under config/ by its own name; the resolved `config` (those
    files merged, with any --config) goes into the manifest and the README. `name`
    defaults to the config's `dataset`, else the directory's.

    Refused: a directory without store shards or tables, a name that is not a dataset
    name, any store file that `simcore.sweep.store.read_shard` refuses (damaged, or written
    for another shard), so that an archive never holds what the workflow would not read,
    and anything the workflow did not make (`_unmade`)."""
    results = Path(results)
    name = name or str(config.get("dataset") or results.name)
    if not is_name(name):
        raise ArchiveError(f"name {name!r}: expected a dataset name of {NAME_RULE}")
    shards = sorted({Path(f).parent for f in summaries} if summaries else
                    {p.parent for p in (results / "store").glob("**/summary.parquet")})
    if not shards or not (results / "tables").is_dir():
        raise ArchiveError(f"{results}: no store shards or no tables/; expected a dataset "
                           f"directory results/<dataset>/ that snakemake has made")
    given: dict[str, Path] = {}
    for file in map(Path, configfiles):
        if file.name in given:
            raise ArchiveError(f"{file}: the same name as {given[file.name]}; expected "
                               "configuration files of different names (both go to config/)")
        given[file.name] = file
    problems = []
    for shard in shards:
        for part in SHARD_FILES:
            try:
                read_shard(shard / part)
            except (FileNotFoundError, IntegrityError) as exc:
                problems.append(str(exc) if isinstance(exc, IntegrityError)
                                else f"{shard / part}: missing; run snakemake again to make it")
    if problems:
        raise ArchiveError("store files the archive would hold fail their checks: "
                           + " | ".join(problems))
    unmade = _unmade(results, shards)
    if unmade:
        raise ArchiveError(" | ".join(unmade))
    members: dict[str, str | os.PathLike[str]] = {
        item: results / item for item in (*_MADE, "schedules") if (results / item).exists()}
    for shard in shards:
        members[shard.relative_to(results).as_posix()] = shard
    for file_name, file in given.items():
        members[f"config/{file_name}"] = file
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or None
    return pack(out, members, {"name": name, "config": dict(config), "git_commit": commit})


def _unmade(results: Path, shards: Sequence[Path]) -> list[str]:
    """What differs from what the workflow made, each with how to make it again: a file in
    a shard directory that is not a store file; tables, figures or reproduction.md missing,
    edited or added to since they were stamped (`simcore.base.stamps`); the same of each
    schedule export, and a file under schedules/ in none."""
    problems = [f"{file}: not a store file; expected only {' and '.join(SHARD_FILES)} in a "
                f"shard directory: move it out of the store" for shard in shards
                for file in made_files(shard)
                if file.parent != shard or file.name not in SHARD_FILES]
    exports = sorted(f.parent for f in (results / "schedules").glob("**/run.json"))
    problems += [f"{file}: in no schedule export; expected only export directories "
                 f"(run=<i>/) under {results / 'schedules'}: move it out"
                 for file in made_files(results / "schedules")
                 if not any(file.is_relative_to(e) for e in exports)]
    for output in [*(results / item for item in _MADE), *exports]:
        found = (stamp_problems(output)
                 if output.exists() or stamp_path(output).exists() else [])
        if found:
            problems.append(f"{'; '.join(found)}; expected {output} as the workflow made it "
                            f"({stamp_path(output).name}): remove {output} and run snakemake "
                            f"again to make it afresh")
    return problems


def verify(path: str | os.PathLike[str],
           extract_to: str | os.PathLike[str] | None = None) -> dict[str, object]:
    """Check every member against MANIFEST.sha256 and manifest.json (which must agree with
    each other), every Parquet member against the content checksum in its own metadata
    (which every `store/` file must have, with the shard specification of its place), then
    reload the tables.

    The archive is read twice. The first pass hashes every member as it streams by and
    writes nothing: a member missing, unlisted, of another size or checksum is refused
    before anything is extracted. The second extracts the members the checks need (the
    Parquet ones, in a temporary directory), or every member into `extract_to` when given,
    each exactly as large as listed. Returns the archive path, dataset name, number of
    members, total bytes and each table's row count.
    """
    path = Path(path)
    if path.is_dir():
        raise ArchiveError(f"{path}: is a directory; expected an archive file (.tar.xz, "
                           ".tar.gz or .tar)")
    found, manifests = _scan(path)
    for name in (MANIFEST, MANIFEST_JSON):
        if name not in manifests:
            raise ArchiveError(f"{path}: no {name} member; not an archive written by "
                               f"simcore.report.archive.pack")
    listed = _read_manifest(path, manifests[MANIFEST])
    document, sizes = _read_manifest_json(path, manifests[MANIFEST_JSON])
    problems = _disagreements(listed, sizes)
    actual = {name: d for name, d in found.items() if name != MANIFEST}
    for name in sorted(listed.keys() | actual.keys()):
        if name not in actual:
            problems.append(f"{name}: listed in {MANIFEST} but missing")
        elif name not in listed:
            problems.append(f"{name}: present but not listed in {MANIFEST}")
        else:
            sha256, size = actual[name]
            differences = []
            if sha256 != listed[name]:
                differences.append(f"sha256 expected {listed[name]}, actual {sha256}")
            if sizes.get(name, (None, size))[1] != size:
                differences.append(f"size expected {sizes[name][1]}, actual {size}")
            if differences:
                problems.append(f"{name}: {' and '.join(differences)}")
    if problems:
        raise ArchiveError(f"{path}: {'; '.join(problems)}")
    with (nullcontext(str(extract_to)) if extract_to is not None
          else tempfile.TemporaryDirectory(prefix="simcore-verify-")) as where:
        dest = Path(where)
        wanted = set(found) if extract_to is not None else {
            n for n in found if n.endswith(".parquet")}
        if wanted:
            _extract(path, dest, {n: found[n] for n in wanted})
        problems = [p for name in sorted(actual) if name.endswith(".parquet")
                    if (p := _parquet_problem(name, dest / name)) is not None]
        if problems:
            raise ArchiveError(f"{path}: {'; '.join(problems)}")
        tables = {}
        for name in sorted(n for n in actual if _is_table(n)):
            try:
                tables[name] = pl.read_parquet(dest / name).height
            except (pl.exceptions.PolarsError, OSError) as exc:
                raise ArchiveError(f"{path}: {name}: not readable as Parquet ({exc})") from exc
    return {"archive": str(path), "dataset": document.get("name"), "members": len(found),
            "bytes": sum(size for _, size in found.values()), "tables": tables}


class _HashingReader:
    """Reads a file for the tar writer, hashing it and refusing to end early."""

    def __init__(self, source: IO[bytes], path: Path) -> None:
        self._source, self._path = source, path
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._source.read(size)
        if len(chunk) < size:
            raise ArchiveError(f"{self._path}: shrank while packing; pack again once nothing "
                               f"writes to it")
        self.sha256.update(chunk)
        return chunk


def _check_metadata(metadata: Mapping[str, object]) -> dict[str, object]:
    """Metadata with defaults for absent (or None) values; wrong keys or types raise."""
    from simcore import __version__

    metadata = {key: value for key, value in metadata.items() if value is not None}
    unknown = set(metadata) - set(_METADATA)
    if unknown:
        raise ArchiveError(f"metadata: unknown key(s) {sorted(unknown)}; expected some of "
                           f"{sorted(_METADATA)}")
    for key, value in metadata.items():
        if not isinstance(value, _METADATA[key]) or isinstance(value, bool):
            raise ArchiveError(f"metadata[{key!r}]: expected {_METADATA[key].__name__}, "
                               f"got {value!r}")
    if not metadata.get("name"):
        raise ArchiveError("metadata['name']: required, the dataset's title")
    authors = metadata.get("authors", _AUTHORS)
    if not isinstance(authors, list) or not authors or not all(
            isinstance(a, Mapping) and a for a in authors):
        raise ArchiveError(f"metadata['authors']: expected a non-empty list of CFF persons or "
                           f"entities, e.g. [{{'family-names': ..., 'given-names': ...}}], "
                           f"got {authors!r}")
    simcore_version = metadata.get("simcore_version", __version__)
    meta = {"version": simcore_version, "description": _DESCRIPTION, "git_commit": None,
            "config": None, "result_schema_version": RESULT_SCHEMA_VERSION,
            **metadata, "simcore_version": simcore_version, "authors": authors}
    try:  # JSON-compatible, with string keys: what manifest.json will hold
        meta["config"] = json.loads(json.dumps(meta["config"], allow_nan=False, sort_keys=True))
        meta["authors"] = json.loads(json.dumps(authors, allow_nan=False, sort_keys=True))
    except (TypeError, ValueError) as exc:
        raise ArchiveError(f"metadata: config and authors must be JSON-compatible ({exc})") from exc
    return meta


def _collect(out: Path, members: Mapping[str, str | os.PathLike[str]]) -> dict[str, Path]:
    """Archive path -> local file, sorted by archive path. Hidden files (a name starting with
    '.', such as Snakemake's directory timestamps or a killed write's temporary file) are
    bookkeeping, not data, and are left out. A symbolic link or a special file is refused
    rather than followed or left out: what it stands for is the packer's to decide."""
    files: dict[str, Path] = {}
    for prefix, given in members.items():
        local = Path(given)
        if not _PREFIX.fullmatch(prefix) or {".", ".."} & set(prefix.split("/")):
            raise ArchiveError(f"members[{prefix!r}]: expected a relative archive path such as "
                               f"'tables' or 'store'")
        if prefix.split("/")[0] in GENERATED:
            raise ArchiveError(f"members[{prefix!r}]: {prefix.split('/')[0]} is generated by "
                               f"pack")
        if local.is_symlink():
            raise ArchiveError(f"members[{prefix!r}]: {local} is a symbolic link; expected "
                               f"the file or directory it stands for")
        if local.is_file():  # under the prefix, unless the prefix is already its name
            name = prefix if PurePosixPath(prefix).name == local.name else f"{prefix}/{local.name}"
            found = {name: local}
        elif local.is_dir():
            found = {f"{prefix}/{p.relative_to(local).as_posix()}": p for p in made_files(local)}
        else:
            raise ArchiveError(f"members[{prefix!r}]: {local} is neither a file nor a directory")
        if not found:
            raise ArchiveError(f"members[{prefix!r}]: {local} holds no files")
        if out.resolve().is_relative_to(local.resolve()):
            raise ArchiveError(f"{out}: inside members[{prefix!r}] ({local}); write the archive "
                               f"elsewhere")
        for name, path in found.items():
            if path.is_symlink() or not path.is_file():
                what = "a symbolic link" if path.is_symlink() else "not a regular file"
                raise ArchiveError(f"{path}: {what}; expected a regular file, as an archive "
                                   f"holds only what a dataset made: copy the file in its "
                                   f"place or move it out of {local}")
            if {"\n", "\r", "\\"} & set(name):
                raise ArchiveError(f"{path}: a newline or backslash in its name cannot be "
                                   f"listed in {MANIFEST}")
            if name in files:
                raise ArchiveError(f"archive path {name} would hold both {files[name]} and {path}")
            files[name] = path
    return dict(sorted(files.items()))


def _generated(meta: Mapping[str, object], digests: Mapping[str, tuple[str, int]]
               ) -> dict[str, bytes]:
    """The generated members, each covering the ones made before it."""
    generated = {ENVIRONMENT: _pip_freeze().encode(), CITATION: _citation(meta).encode(),
                 README: _readme(meta, digests).encode()}
    members = {**digests, **{n: _digest(io.BytesIO(b)) for n, b in generated.items()}}
    manifest = {"archive_schema_version": ARCHIVE_SCHEMA_VERSION, **meta,
                "python": platform.python_version(),
                "members": [{"path": n, "sha256": s, "size": z}
                            for n, (s, z) in sorted(members.items())]}
    generated[MANIFEST_JSON] = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False)
                                + "\n").encode()
    members[MANIFEST_JSON] = _digest(io.BytesIO(generated[MANIFEST_JSON]))
    generated[MANIFEST] = "".join(f"{s}  {n}\n" for n, (s, _) in sorted(members.items())).encode()
    return generated


def _pip_freeze() -> str:
    """`python -m pip freeze` of this interpreter, or why it could not be run."""
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True,
                              text=True, timeout=300, check=True)
    except subprocess.CalledProcessError as exc:
        reason = f"exit status {exc.returncode}: {exc.stderr.strip()[-500:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    else:
        return f"# python -m pip freeze (Python {platform.python_version()})\n{done.stdout}"
    return f"# python -m pip freeze failed, no package list recorded: {reason}\n"


def _citation(meta: Mapping[str, object]) -> str:
    """CITATION.cff (CFF 1.2.0) of the dataset, citing the sources of its workloads."""
    traces, models = _sources(meta["config"])
    references = ([_PWA_PAPER] if traces else []) + [
        _MODEL_PAPERS[m] for m in models if m in _MODEL_PAPERS]
    message = "If you use this dataset, please cite it using these metadata"
    if traces:
        message += ", and cite the Parallel Workloads Archive, whose traces drove the simulations"
    if any(m in _MODEL_PAPERS for m in models):
        message += ", and the workload models' authors"
    document: dict[str, object] = {
        "cff-version": "1.2.0",
        "message": message + ".",
        "type": "dataset",
        "title": meta["name"],
        "version": meta["version"],
        "abstract": f"{meta['description']} {_sources_sentence(traces, models)}",
        "authors": meta["authors"],
    }
    if meta["git_commit"]:
        document["commit"] = meta["git_commit"]
    if references:
        document["references"] = references
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _sources(config: object) -> tuple[list[str], list[str]]:
    """The traces and the workload models that the experiments of a configuration read."""
    if not isinstance(config, Mapping) or not isinstance(config.get("workloads"), Mapping):
        return [], []
    workloads, experiments = config["workloads"], config.get("experiments")
    used = ({name for e in experiments.values() if isinstance(e, Mapping)
             for name in e.get("workloads", [])} if isinstance(experiments, Mapping)
            else set(workloads))
    traces, models = set(), set()
    for name in used:
        source = workloads.get(name)
        if isinstance(source, Mapping) and "trace" in source:
            traces.add(str(source["trace"]))
        elif isinstance(source, Mapping) and isinstance(source.get("synthetic"), Mapping):
            models.add(str(source["synthetic"].get("model")))
    return sorted(traces), sorted(models)


def _sources_sentence(traces: list[str], models: list[str]) -> str:
    """Where the workloads came from, in one sentence."""
    parts = []
    if traces:
        parts.append(f"job traces from the Parallel Workloads Archive ({', '.join(traces)})")
    if models:
        parts.append(f"samples of the synthetic workload model(s) {', '.join(models)}")
    if not parts:
        return "The configuration records no workload sources."
    return f"The workloads are {' and '.join(parts)}."


def _readme(meta: Mapping[str, object], digests: Mapping[str, tuple[str, int]]) -> str:
    """README.md: the data card."""
    groups: dict[str, list[int]] = {}
    for name, (_, size) in digests.items():
        count_bytes = groups.setdefault(name.split("/")[0], [0, 0])
        count_bytes[0] += 1
        count_bytes[1] += size
    folders = {name.split("/")[0] for name in digests if "/" in name}
    layout = "\n".join(f"| `{g}{'/' if g in folders else ''}` | {n} | {b} | {_ABOUT.get(g, '')} |"
                       for g, (n, b) in sorted(groups.items()))
    tables = "".join(f"- `{n}`\n" for n in digests if _is_table(n)) or "none\n"
    config = ("```yaml\n" + yaml.safe_dump(meta["config"], sort_keys=True, allow_unicode=True)
              + "```" if meta["config"] else "Not recorded.")
    traces, models = _sources(meta["config"])
    citing = f"See `{CITATION}`. {_sources_sentence(traces, models)}"
    if traces:
        citing += _PWA_CITING
    store = ('runs = pl.read_parquet(\n    "store/**/summary.parquet", hive_partitioning=True,\n'
             f"    hive_schema={{c: pl.String for c in {json.dumps(list(PARTITIONS))}}},\n)\n"
             if "store" in groups else "")
    return f"""# {meta["name"]}

{meta["description"]}

Version {meta["version"]}, packed by `simcore.report.archive.pack` (archive format \
{ARCHIVE_SCHEMA_VERSION}).

## How it was produced

- simcore version: {meta["simcore_version"]}
- result schema version: {meta["result_schema_version"]}
- git commit: {meta["git_commit"] or "not recorded"}
- Python {platform.python_version()}; installed packages in `{ENVIRONMENT}`

Resolved workflow configuration (also under `config` in `{MANIFEST_JSON}`):

{config}

## Layout

| path | files | bytes | contents |
|---|---:|---:|---|
{layout}

Tables:

{tables}
Generated beside them:

- `{MANIFEST}`: sha256 of every other member, in `sha256sum -c` format
- `{MANIFEST_JSON}`: archive format version, the metadata above, the resolved configuration \
and every member except itself and `{MANIFEST}` with its sha256 and size in bytes
- `{ENVIRONMENT}`: `python -m pip freeze` of the interpreter that packed the archive
- `{README}`: this data card; `{CITATION}`: how to cite the dataset

## Loading

The archive has no top-level directory; extract it into one of its own:

```
mkdir dataset && tar -xf <archive> -C dataset && cd dataset
```

```python
from pathlib import Path

import polars as pl

tables = {{p.stem: pl.read_parquet(p) for p in sorted(Path("tables").rglob("*.parquet"))}}
{store}```

## Verifying

In the extracted directory:

```
sha256sum -c {MANIFEST}
```

Or, with simcore installed, without extracting (also checks `{MANIFEST_JSON}` against
`{MANIFEST}` and each Parquet member against its own checksum, and reloads every table):

```
python -c "from simcore.report.archive import verify; print(verify('<archive>'))"
```

## Citing

{citing}
"""


_PWA_CITING = """ Please also cite the Parallel Workloads Archive
(https://www.cs.huji.ac.il/labs/parallel/workload/): D. G. Feitelson, D. Tsafrir and
D. Krakov, "Experience with using the Parallel Workloads Archive", J. Parallel Distrib.
Comput. 74(10):2967-2982, 2014, doi:10.1016/j.jpdc.2014.06.013, and acknowledge the people
each log names in its header."""


def _info(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    """A regular-file header that says nothing about who packed it or when."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _digest(source: IO[bytes], target: Path | None = None) -> tuple[str, int]:
    """sha256 and size of a stream, copied to `target` when given."""
    sha256, size = hashlib.sha256(), 0
    with (target.open("wb") if target is not None else nullcontext()) as sink:
        while chunk := source.read(_CHUNK):
            sha256.update(chunk)
            size += len(chunk)
            if sink is not None:
                sink.write(chunk)
    return sha256.hexdigest(), size


def _scan(path: Path) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """sha256 and size of every file member, read as it streams by, and the text of the
    two manifests (each at most _MANIFEST_BYTES); nothing is written."""
    found: dict[str, tuple[str, int]] = {}
    manifests: dict[str, str] = {}
    with _unreadable_as_archive_error(path):
        for member, source in _members(path):
            name = member.name
            if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
                raise ArchiveError(f"{path}: {name}: unsafe member path")
            if name in found:
                raise ArchiveError(f"{path}: {name}: present twice")
            if name not in (MANIFEST, MANIFEST_JSON):
                found[name] = _digest(source)
                continue
            if member.size > _MANIFEST_BYTES:
                raise ArchiveError(f"{path}: {name}: {member.size} bytes; expected at most "
                                   f"{_MANIFEST_BYTES}")
            text = source.read()
            found[name] = _digest(io.BytesIO(text))
            try:
                manifests[name] = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ArchiveError(f"{path}: {name}: not UTF-8 text ({exc})") from exc
    return found, manifests


def _extract(path: Path, dest: Path, wanted: Mapping[str, tuple[str, int]]) -> None:
    """Write the members `wanted` (path -> sha256 and size, as the first pass found them)
    under `dest`, each hashed as it is written; anything else changed since is refused."""
    left = set(wanted)
    with _unreadable_as_archive_error(path):
        for member, source in _members(path):
            if member.name not in left:
                continue
            left.remove(member.name)
            if member.size != wanted[member.name][1]:
                raise ArchiveError(f"{path}: {member.name}: changed while being verified")
            target = dest.joinpath(*PurePosixPath(member.name).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            if _digest(source, target) != wanted[member.name]:
                raise ArchiveError(f"{path}: {member.name}: changed while being verified")
    if left:
        raise ArchiveError(f"{path}: {min(left)}: changed while being verified")


def _members(path: Path) -> Iterator[tuple[tarfile.TarInfo, IO[bytes]]]:
    """Each regular file member of a tar archive (any compression) with its reader, in
    archive order; directory entries are passed over, anything else is refused. Iterate
    inside `_unreadable_as_archive_error`, which also covers reading the readers."""
    with tarfile.open(path, "r|*") as tar:
        for member in tar:
            if member.isdir():
                continue
            if not member.isfile():
                raise ArchiveError(f"{path}: {member.name}: not a regular file; dataset "
                                   f"archives hold regular files only")
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has a reader
            yield member, source


@contextmanager
def _unreadable_as_archive_error(path: Path) -> Iterator[None]:
    """Turn a damaged archive's read errors into one ArchiveError naming it."""
    try:
        yield
    except (tarfile.TarError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise ArchiveError(f"{path}: not a readable tar archive ({exc})") from exc


def _read_manifest(path: Path, text: str) -> dict[str, str]:
    """MANIFEST.sha256 as member path -> sha256."""
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _MANIFEST_LINE.fullmatch(line)
        if match is None:
            raise ArchiveError(f"{path}: {MANIFEST} line {number}: expected '<sha256>  <path>', "
                               f"got {line[:200]!r}")
        if match[2] in listed or match[2] == MANIFEST:
            raise ArchiveError(f"{path}: {MANIFEST} line {number}: {match[2]} listed twice "
                               f"(or {MANIFEST} listing itself)")
        listed[match[2]] = match[1]
    return listed


def _read_manifest_json(path: Path, text: str
                        ) -> tuple[dict[str, object], dict[str, tuple[str, int]]]:
    """manifest.json and its members as path -> (sha256, size), each listed once."""
    try:
        document = json.loads(text)
        members = {}
        for m in document["members"]:
            if not (isinstance(m["path"], str) and isinstance(m["sha256"], str)
                    and isinstance(m["size"], int) and not isinstance(m["size"], bool)):
                raise TypeError(f"member {m!r:.200}: expected a string path and sha256 and "
                                f"an integer size")
            if m["path"] in members or m["path"] in (MANIFEST, MANIFEST_JSON):
                raise ValueError(f"member {m['path']!r:.200} listed twice (or a manifest "
                                 f"listed as a member)")
            members[m["path"]] = (m["sha256"], m["size"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"{path}: {MANIFEST_JSON}: expected an object whose 'members' list "
                           f"path, sha256 and size of each member once ({exc!r:.300})") from exc
    return document, members


def _disagreements(listed: Mapping[str, str], members: Mapping[str, tuple[str, int]]
                   ) -> list[str]:
    """Where MANIFEST.sha256 and manifest.json's members (which leaves out itself) differ."""
    problems = []
    for name in sorted((listed.keys() - {MANIFEST_JSON}) | members.keys()):
        if name not in members:
            problems.append(f"{name}: listed in {MANIFEST} but not in {MANIFEST_JSON}")
        elif name not in listed:
            problems.append(f"{name}: listed in {MANIFEST_JSON} but not in {MANIFEST}")
        elif listed[name] != members[name][0]:
            problems.append(f"{name}: sha256 {listed[name]} in {MANIFEST} but "
                            f"{members[name][0]} in {MANIFEST_JSON}")
    return problems


def _parquet_problem(name: str, local: Path) -> str | None:
    """What is wrong with a Parquet member by its own metadata: content not matching its
    recorded checksum, or under store/, what `simcore.sweep.store.shard_problem` finds
    (None if nothing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(local)
    except (pa.ArrowException, OSError) as exc:
        return f"{name}: not readable as Parquet ({exc})"
    if name.startswith("store/"):
        problem = shard_problem(table, PurePosixPath(name))
        return None if problem is None else f"{name}: {problem}"
    recorded = recorded_digest(table)
    if recorded is not None and recorded != table_digest(table):
        return f"{name}: content does not match its checksum"
    return None


def _is_table(name: str) -> bool:
    """Whether an archive path is a table that verify reloads."""
    return name.startswith("tables/") and name.endswith(".parquet")
