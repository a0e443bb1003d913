"""On-disk caches: compiled numba kernels and BG/L link tables.

Numba invalidates a cached function only when its own file changes, not when a function it
calls (in another module) does, and simcore's kernels call across modules. So the kernel
cache lives in a directory named by a hash of every module that defines compiled code and
of everything those modules import (constants are compiled in): a change there means a
fresh directory, never a stale kernel, while editing, say, the plotting code keeps the
compiled kernels.
`configure_numba` must run before any cached function is defined: `simcore.jit`, through
which every compiled function of simcore is declared, calls it first.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TORUS_SWEEP_CACHE"
PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """Base of simcore's caches: $TORUS_SWEEP_CACHE, else ~/.cache/torus-sweep."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "torus-sweep")


def kernel_sources() -> list[Path]:
    """Source files of compiled code: the modules defining numba functions and their
    import closure."""
    from simcore.fingerprint import closure, module_name

    compiled = [module_name(p) for p in PACKAGE.rglob("*.py")
                if "@kernel" in (text := p.read_text()) or "@njit" in text]
    return closure(compiled)


def sources_digest() -> str:
    """sha256 over the path and bytes of every kernel source file.

    Finding those files parses every module, a large part of a short run's start-up, so
    the digest is remembered in the cache under a stamp of the package's files (path,
    size, modification time): any edit gives a new stamp and a fresh computation."""
    import hashlib
    import json

    from simcore.fingerprint import digest

    stamp = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        info = path.stat()
        stamp.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    memo = cache_dir() / "kernel-digests.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    key = stamp.hexdigest()
    if not isinstance(known, dict):
        known = {}
    if not isinstance(known.get(key), str):  # keep a few: checkouts may share the cache
        known = {**dict(list(known.items())[-7:]), key: digest(kernel_sources())}
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known))
            tmp.replace(memo)
        except OSError:  # a read-only cache: compute it every time
            pass
    return known[key]


def configure_numba() -> Path:
    """Point numba's cache at <$NUMBA_CACHE_DIR or cache_dir()/numba>/simcore-<digest>."""
    import numba

    base = os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba"
    path = Path(base) / f"simcore-{sources_digest()[:16]}"
    numba.config.CACHE_DIR = str(path)
    return path
