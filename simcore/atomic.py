"""Atomic file output: a reader sees the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _read_umask() -> int:
    """The process's umask. Reading it means setting it, so this runs once, at import."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it over `path`, else delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide results from a group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write `payload` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
