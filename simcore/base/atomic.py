"""Atomic file output: a reader sees the old file or the whole new one, never a part
(`atomic_directory`: the old directory or the whole new one, never a mix of both).

A file is written under a temporary name beside its target, `.<name>~<host>~<pid>~....tmp`,
and renamed over the target when complete; on an exception (or SIGTERM, which the command
line turns into one) the temporary file is deleted. A writer killed outright leaves its
temporary file behind: the next writer of the same target removes it once it is safe, when
its process is gone on this host or it is older than a day (another host's writer may
still be running).
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
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


def _prefix(path: Path) -> str:
    """The start of the name of a temporary beside `path`: `.<name>~<host>~<pid>~`, which
    `remove_stale_temporaries` reads back."""
    return f".{path.name}~{_HOST}~{os.getpid()}~"


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it over `path`, else delete it.
    A directory at `path` is refused first (an OSError naming `path`, not the temporary)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory; expected a file name",
                                str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_prefix(path), suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide results from a group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new temporary directory beside `path`; on success put it in place of
    `path`, replacing a directory there whole (renamed aside, then deleted: a reader sees
    the old directory, for an instant none, or the whole new one, never a mix), else
    delete it. A file at `path` is refused first (an OSError naming `path`)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "is a file; expected a directory name",
                                 str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=_prefix(path), suffix=".tmp"))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp's 0700 would hide results from a group
        try:
            os.rename(tmp, path)  # no directory there, or an empty one
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=_prefix(path), suffix=".tmp"))
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
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
            if Path(candidate).is_dir():  # an `atomic_directory`'s
                shutil.rmtree(candidate, ignore_errors=True)
            else:
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
