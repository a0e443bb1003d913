"""Input files must be regular files: a device such as /dev/zero never ends and a FIFO
blocks until something writes to it, so reading either whole exhausts memory or waits
forever."""

from __future__ import annotations

import errno
import os
import stat
from typing import IO


def open_regular(path: str | os.PathLike[str], mode: str = "rb",
                 encoding: str | None = None, newline: str | None = None) -> IO:
    """`path` opened for reading; an OSError naming it if it is a directory or not a
    regular file (opened without blocking, so a FIFO is refused, not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise IsADirectoryError(errno.EISDIR, "is a directory; expected a file",
                                    str(path))
        raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket); expected "
                                    "a file", str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode, encoding=encoding, newline=newline)


def read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of the regular file `path`; an OSError naming it otherwise."""
    with open_regular(path) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OSError(errno.EILSEQ, f"not UTF-8 text (byte {exc.start}); expected a text "
                                    "file", str(path)) from None
