"""On-disk caches: compiled numba kernels, BG/L link tables and values derived from the
package's source.

Numba invalidates a cached function only when its own file changes, not when a function it
calls (in another module) does, and simcore's kernels call across modules. So kernels are
cached in directories named by a hash of the modules whose code they compile and of
everything those modules import (constants are compiled in): a change there means a fresh
directory, never a stale kernel.

Each engine, the event loop specialised for one allocator module and one scheduler module
(numba compiles their `@implements` kernels into it), has a directory of its own,
`<numba base>/simcore-<digest>`, the digest taken over the import closure of the modules
it compiles (`engine_directory`; `simcore.simulate.engine_modules` names them). Editing an
allocator then recompiles only the engines of that allocator, and adding a row to a
registry (which no kernel imports) recompiles nothing. Only the signatures that take an
allocator's or scheduler's struct go there (`simcore.base.jit`, while `engine_cache` says
which engine runs); a kernel taking no struct depends on its own module's code alone and
is cached once under that module's import closure (`module_directory`), for every engine.
Struct-taking kernels compiled outside any engine (decoders, tools) use the default
directory, named by a hash of every module that defines compiled code and of their
imports (`configure_numba`), as safe as it is coarse.
`configure_numba` must run before any cached function is defined: `simcore.base.jit`, through
which every compiled function of simcore is declared, calls it first.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

CACHE_ENV = "TORUS_SWEEP_CACHE"
PACKAGE = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """Base of simcore's caches: $TORUS_SWEEP_CACHE, else ~/.cache/torus-sweep."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "torus-sweep")


def kernel_sources() -> list[Path]:
    """Source files of compiled code: the modules defining numba functions and their
    import closure."""
    from simcore.base.fingerprint import closure, module_name

    compiled = [module_name(p) for p in PACKAGE.rglob("*.py")
                if "@kernel" in (text := p.read_text()) or "@njit" in text]
    return closure(compiled)


def sources_digest() -> str:
    """sha256 over the path and bytes of every kernel source file."""
    from simcore.base.fingerprint import digest

    return _remembered({"kernels": lambda: digest(kernel_sources())})["kernels"]


def remembered(name: str, compute: Callable[[], str]) -> str:
    """`compute()`, remembered under `name` until the package's source changes: for a
    result determined by the source and by what `name` states (e.g. a content hash)."""
    return _remembered({name: compute})[name]


def closure_digests(module_sets: Iterable[tuple[str, ...]],
                    stop: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """For each set of modules, the sha256 of its import closure's sources
    (`simcore.base.fingerprint`; the modules in `stop` neither included nor followed): a
    run key's code and a workflow's code parameters."""
    from simcore.base.fingerprint import closure, digest

    def compute(modules: tuple[str, ...]) -> str:
        return digest(closure(modules, stop))

    prefix = f"{','.join(stop)}|" if stop else ""
    sets = {prefix + ",".join(modules): modules for modules in module_sets}
    found = _remembered({name: functools.partial(compute, modules)
                         for name, modules in sets.items()})
    return {modules: found[name] for name, modules in sets.items()}


def _remembered(computations: Mapping[str, Callable[[], str]]) -> dict[str, str]:
    """Values derived from the package's source, remembered in the cache under a stamp of
    its files (path, size, modification time): any edit gives a new stamp and fresh
    computations. Finding import closures parses every module, a large part of a short
    run's start-up and of a workflow's planning."""
    stamp = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        info = path.stat()
        stamp.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    memo = cache_dir() / "code-digests.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    entry = known.get(stamp.hexdigest())
    entry = dict(entry) if isinstance(entry, dict) else {}
    missing = [name for name in computations if not isinstance(entry.get(name), str)]
    if missing:  # keep a few stamps: checkouts may share the cache
        entry.update((name, computations[name]()) for name in missing)
        known = {**dict(list(known.items())[-7:]), stamp.hexdigest(): entry}
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known))
            tmp.replace(memo)
        except OSError:  # a read-only cache: compute it every time
            pass
    return {name: entry[name] for name in computations}


def numba_base() -> Path:
    """Where simcore's kernel cache directories are: $NUMBA_CACHE_DIR or cache_dir()/numba."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba")


def configure_numba() -> Path:
    """Point numba's cache at the default directory, numba_base()/simcore-<digest> of every
    kernel source (`sources_digest`): kernels compiled outside any engine live there."""
    import numba

    path = numba_base() / f"simcore-{sources_digest()[:16]}"
    numba.config.CACHE_DIR = str(path)
    return path


@functools.lru_cache(maxsize=256)
def engine_directory(modules: tuple[str, ...]) -> tuple[Path, frozenset[str]]:
    """The kernel cache directory of the engine compiling `modules` (its kernel modules:
    the allocator's, the scheduler's, the event loop's), numba_base()/simcore-<digest> of
    their import closure, and the names of the modules in that closure, whose kernels it
    holds. Found once per process: every run enters it, and the code a process runs is
    the code it imported."""
    return engine_directories([modules])[modules]


def module_directory(module: str) -> Path:
    """The kernel cache directory of the kernels of `module` that no engine's structs
    specialise: numba_base()/simcore-<digest> of the module's import closure."""
    return engine_directory((module,))[0]


def engine_directories(module_sets: Iterable[tuple[str, ...]]
                       ) -> dict[tuple[str, ...], tuple[Path, frozenset[str]]]:
    """`engine_directory` of each set of modules, all remembered until the package's source
    changes (`_remembered`), so a run's start-up parses no module. A module with no source
    file (one made in memory) has no kernels numba could cache and is left out."""
    from simcore.base.fingerprint import closure, digest, module_file, module_name

    def names(modules: tuple[str, ...]) -> str:
        return json.dumps([module_name(p) for p in closure(modules)])

    keys = {modules: ",".join(sorted({m for m in modules if module_file(m) is not None}))
            for modules in module_sets}
    computations: dict[str, Callable[[], str]] = {}
    for key in keys.values():  # the digest under the name closure_digests gives it
        canonical = tuple(key.split(","))
        computations[key] = functools.partial(lambda m: digest(closure(m)), canonical)
        computations[f"modules:{key}"] = functools.partial(names, canonical)
    found = _remembered(computations)
    return {modules: (numba_base() / f"simcore-{_named(found[key], key)[:16]}",
                      frozenset(json.loads(found[f"modules:{key}"])))
            for modules, key in keys.items()}


def _named(digest: str, modules: str) -> str:
    """A closure's digest joined with the names its modules are imported under: numba's
    cached code refers to a module by name, so the same source imported under another name
    (a test module once `test_x`, then `tests.test_x`) must not read it."""
    return hashlib.sha256(f"{digest}\0{modules}".encode()).hexdigest()
