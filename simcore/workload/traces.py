"""Trace catalogue and acquisition: mirror directories first, then the archive, sha256 always.

The catalogue (`config/traces.yaml`) pins every Parallel Workloads Archive trace by URL and
sha256. `acquire` copies a trace from the first mirror directory that has it, or downloads
it, and verifies the checksum before the file appears under its final name; a mismatch or a
failed transfer leaves nothing behind and says how to provide a mirror.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from simcore.base.atomic import atomic_path
from simcore.base.checksums import file_digest
from simcore.base.errors import TraceError
from simcore.base.yamlfiles import read_yaml

MIRROR_ENV = "TORUS_SWEEP_TRACE_DIR"
_REQUIRED = {"url": str, "sha256": str, "jobs": int, "max_procs": int, "machine_size": int}


@dataclass(frozen=True)
class TraceEntry:
    """One catalogued trace: where it comes from and what it must hash to."""

    name: str
    url: str
    sha256: str
    jobs: int
    max_procs: int
    machine_size: int
    notes: str = ""

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]


def load_catalogue(path: str | os.PathLike[str]) -> dict[str, TraceEntry]:
    """Read and validate a trace catalogue; errors name the file and key."""
    path = Path(path)
    document = read_yaml(path, TraceError)
    traces = document.get("traces") if isinstance(document, dict) else None
    if not isinstance(traces, dict) or not traces:
        raise TraceError(f"{path}: key 'traces' must map trace names to entries")
    catalogue = {}
    for name, entry in traces.items():
        where = f"{path}: traces.{name}"
        if not isinstance(entry, dict):
            raise TraceError(f"{where}: expected a mapping with keys {sorted(_REQUIRED)}")
        for key, kind in _REQUIRED.items():
            if not isinstance(entry.get(key), kind):
                raise TraceError(f"{where}.{key}: expected {kind.__name__}, got {entry.get(key)!r}")
        unknown = set(entry) - {*_REQUIRED, "notes"}
        if unknown:
            raise TraceError(f"{where}: unknown key(s) {sorted(unknown)}")
        digest = entry["sha256"].lower()
        if len(digest) != 64 or set(digest) - set("0123456789abcdef"):
            raise TraceError(f"{where}.sha256: expected 64 hex digits")
        catalogue[name] = TraceEntry(name=name, **{**entry, "sha256": digest})
    return catalogue


def catalogued(catalogue: str | os.PathLike[str], name: str) -> TraceEntry:
    """The entry of trace `name` in the catalogue at `catalogue`."""
    entries = load_catalogue(catalogue)
    if name not in entries:
        raise TraceError(
            f"{catalogue}: no trace named {name!r}; expected one of {sorted(entries)}")
    return entries[name]


def mirror_dirs(configured: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Mirror directories to search: the configured ones, then those in $TORUS_SWEEP_TRACE_DIR."""
    from_env = [p for p in os.environ.get(MIRROR_ENV, "").split(os.pathsep) if p]
    return [Path(p) for p in [*configured, *from_env]]


def acquire(
    entry: TraceEntry,
    destination: str | os.PathLike[str],
    mirrors: Sequence[str | os.PathLike[str]] = (),
    timeout_s: float = 60.0,
    deadline_s: float = 1800.0,
) -> Path:
    """Place the verified trace at `destination` from a mirror or the archive. A download
    gives up when a read waits `timeout_s` or the whole transfer takes `deadline_s`."""
    destination = Path(destination)
    if destination.is_file() and file_digest(destination) == entry.sha256:
        return destination
    for mirror in mirrors:
        candidate = Path(mirror) / entry.filename
        if candidate.is_file():
            with atomic_path(destination) as tmp:
                shutil.copyfile(candidate, tmp)
                _verify(tmp, entry, f"mirror copy {candidate}")
            return destination
    with atomic_path(destination) as tmp:
        try:
            _download(entry.url, tmp, timeout_s, deadline_s)
        except (OSError, ValueError) as exc:  # URLError is an OSError
            raise TraceError(
                f"cannot download trace {entry.name} from {entry.url} ({exc}); "
                f"{_mirror_hint(entry, mirrors)}"
            ) from exc
        _verify(tmp, entry, f"download of {entry.url}")
    return destination


def _download(url: str, out: Path, timeout_s: float, deadline_s: float) -> None:
    """Copy `url` to `out`; a TimeoutError when the whole transfer passes `deadline_s`."""
    import urllib.request  # only downloads need it

    began = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout_s) as response, open(out, "wb") as sink:
        while block := response.read1(1 << 16):  # what has arrived, not a full block
            sink.write(block)
            if time.monotonic() - began > deadline_s:
                raise TimeoutError(f"the transfer took more than {deadline_s:g} s")


def _verify(path: Path, entry: TraceEntry, source: str) -> None:
    actual = file_digest(path)
    if actual != entry.sha256:
        raise TraceError(
            f"{source} has sha256 {actual}, expected {entry.sha256} for trace {entry.name}; "
            f"the file is corrupt or a different version. {_mirror_hint(entry, ())}"
        )


def _mirror_hint(entry: TraceEntry, mirrors: Sequence[str | os.PathLike[str]]) -> str:
    searched = ", ".join(str(m) for m in mirrors) or "none"
    return (
        f"To work offline, put {entry.filename} (sha256 {entry.sha256}) in a directory named "
        f"by ${MIRROR_ENV} or the config key traces.mirrors (searched: {searched})."
    )
