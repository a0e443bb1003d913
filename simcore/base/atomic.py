"""Atomic file output: a reader sees the old file or the whole new one, never a part.

A file is written under a temporary name beside its target, `.<name>~<host>~<pid>~....tmp`,
and renamed over the target when complete; on an exception (or SIGTERM, which the command
line turns into one) the temporary file is deleted. A writer killed outright leaves its
temporary file behind: the next writer of the same target removes it once it is safe, when
its process is gone on this host or it is older than a day (another host's writer may
still be running).
"""

from __future__ import annotations

import glob
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STALE_AFTER_S = 86_400.0
_HOST = socket.gethostname().replace("~", "-")


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
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}~{_HOST}~{os.getpid()}~",
                               suffix=".tmp")
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


def remove_stale_temporaries(path: str | os.PathLike[str]) -> int:
    """Delete temporary files of writers of `path` that were killed: those of a process
    that no longer runs on this host, and any older than STALE_AFTER_S. Returns how many."""
    path = Path(path)
    removed = 0
    for candidate in glob.glob(glob.escape(str(path.parent / f".{path.name}~")) + "*.tmp"):
        parts = Path(candidate).name.rsplit("~", 3)
        if len(parts) != 4:
            continue
        _, host, pid, _ = parts
        try:
            age = time.time() - os.stat(candidate).st_mtime
        except FileNotFoundError:
            continue
        if (host == _HOST and pid.isdigit() and not _alive(int(pid))) or age > STALE_AFTER_S:
            Path(candidate).unlink(missing_ok=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
