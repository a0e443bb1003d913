"""On-disk caches: compiled numba kernels and BG/L link tables.

Numba invalidates a cached function only when its own file changes, not when a function it
calls (in another module) does, and simcore's kernels call across modules. So the kernel
cache lives in a directory named by a hash of every source file that defines compiled code
(or constants compiled into it): a change there means a fresh directory, never a stale
kernel, while editing, say, the plotting code keeps the compiled kernels.
`configure_numba` must run before any module with `@njit(cache=True)` is imported;
`simcore/__init__.py` does that first.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CACHE_ENV = "TORUS_SWEEP_CACHE"
PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """Base of simcore's caches: $TORUS_SWEEP_CACHE, else ~/.cache/torus-sweep."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "torus-sweep")


# Compile options, and modules whose constants kernels import (frozen in at compile time).
COMPILED_ALSO = ("jit.py", "machines/wiring.py")


def kernel_sources() -> list[Path]:
    """Source files of compiled code: those defining numba functions, and COMPILED_ALSO."""
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "@kernel" in (text := p.read_text()) or "@njit" in text
                  or p.relative_to(PACKAGE).as_posix() in COMPILED_ALSO)


def sources_digest() -> str:
    """sha256 over the path and bytes of every kernel source file."""
    digest = hashlib.sha256()
    for path in kernel_sources():
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def configure_numba() -> Path:
    """Point numba's cache at <$NUMBA_CACHE_DIR or cache_dir()/numba>/simcore-<digest>."""
    import numba

    base = os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba"
    path = Path(base) / f"simcore-{sources_digest()[:16]}"
    numba.config.CACHE_DIR = str(path)
    return path
