"""How simulation kernels are compiled, and how one kernel operation serves many types.

`kernel` compiles without numba's runtime (NRT): the arrays a simulation touches are all
allocated by the Python caller and outlive the run, so the kernels never allocate and need
no reference counting. With the runtime, every call that receives the state namedtuple
increments and decrements the reference count of each of its arrays atomically, which was
most of the run time of a simulation. A kernel therefore must not create arrays (views and
scalars are fine; scratch space lives in the simulation state).

`generic` and `implements` let the engine and the schedulers call an operation such as
`place(m, ...)` on whatever struct they are given: each machine kind (or scheduler) is a
NamedTuple class, and its own module implements the operations for it. numba picks the
implementation from the type of the first argument while it compiles, so every machine
kind and scheduler gets its own specialised engine, with no run-time switch and no
central list of kinds to keep in sync.

Compiled kernels are cached on disk, per engine (`simcore.base.caches`): `engine_cache`
points every cached kernel of the engine's modules at the engine's directory while the
engine is compiled, loaded and run; other kernels, and all of them outside the context,
use the default directory `NUMBA_CACHE`.
"""

from __future__ import annotations

import contextlib
import fcntl
import inspect
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from numba import njit, typeof
from numba.core import sigutils
from numba.extending import overload

from simcore.base.caches import configure_numba, engine_directory, module_directory

#: numba's default cache directory for simcore's compiled code (kernels compiled outside
#: any engine): set here, before any of it is defined, so that merely importing simcore (a
#: workflow parsing its rules) loads no numba.
NUMBA_CACHE = configure_numba()

_OPTIONS = {"nogil": True, "_nrt": False}


def _cached(**options: Any) -> Callable[[Callable], Any]:
    """numba's `njit(cache=True)`, reading and writing the cache directory of the engine
    the calling thread runs (`engine_cache`), and with writes serialised across processes.
    numba saves a compiled signature by reading the function's cache index, choosing a free
    data file name and writing both back: two processes compiling different signatures of
    one function at once (two engines) would otherwise pick the same data file, and the
    index would point one signature at the other's code. Reads need no lock (numba
    replaces each file atomically and ignores an entry whose data file is missing)."""
    compile_cached = njit(cache=True, **options)

    def decorate(fn: Callable) -> Any:
        dispatcher = compile_cached(fn)
        _Cached(dispatcher, fn.__module__)
        return dispatcher

    return decorate


class _Cached:
    """A cached dispatcher whose cache files live in the directory of the engine running
    it. numba fixes a function's cache directory when it is decorated
    (`numba.core.caching`: the cache's `_cache_path`, its locator's and its
    index-and-data file's, and the index path), so each load and save of a compiled
    signature first points them at the directory it belongs in (`cache_directory`); the
    part below the root (numba's subdirectory for the source file's directory) stays."""

    def __init__(self, dispatcher: Any, module: str) -> None:
        self.module = module
        self.cache = dispatcher._cache  # numba's FunctionCache
        self.file = self.cache._cache_file  # numba's IndexDataCacheFile
        self.below = Path(self.cache._cache_path).relative_to(NUMBA_CACHE)
        self.root = NUMBA_CACHE
        self.point(NUMBA_CACHE)  # fails now, not in a run, if numba's layout changed
        load, save = self.cache.load_overload, self.cache.save_overload

        def load_overload(sig: Any, target_context: Any) -> Any:
            with _pointing:
                self.point(self.directory(sig))
                return load(sig, target_context)

        def save_overload(sig: Any, data: Any) -> None:
            with _pointing:
                root = self.directory(sig)
                self.point(root)
                with cache_lock(root):
                    save(sig, data)

        self.cache.load_overload = load_overload
        self.cache.save_overload = save_overload

    def directory(self, sig: Any) -> Path:
        """Where this kernel's signature `sig` is cached. A signature taking an allocator's
        or scheduler's struct is compiled with the struct's implementations of the
        operations (`implements`), so it belongs to the engine running it
        (`cache_directory`); any other depends on its module's code alone, and is cached
        under that module's import closure, once for every engine."""
        args = sigutils.normalize_signature(sig)[0]
        if any(_takes_struct(t) for t in args):
            return cache_directory(self.module)
        return module_directory(self.module)

    def point(self, root: Path) -> None:
        if root == self.root:
            return
        path = str(root / self.below)
        self.cache._cache_path = path
        self.cache._impl.locator._cache_path = path  # where numba makes the directory
        self.file._cache_path = path  # the data files are found relative to it
        self.file._index_path = os.path.join(path, self.file._index_name)
        self.root = root


def _takes_struct(kind: Any) -> bool:
    """Whether a numba type is, or holds, a struct some module implements operations for."""
    if getattr(kind, "instance_class", None) in _STRUCTS:
        return True
    return any(_takes_struct(t) for t in getattr(kind, "types", ()))


#: The structs (machine and policy NamedTuples) that modules implement operations for.
_STRUCTS: set[type] = set()
#: Held while a kernel is pointed at a directory and loaded from or saved to it.
_pointing = threading.RLock()
#: The engine the calling thread runs: (its directory, the modules whose kernels it holds).
_thread = threading.local()


@contextlib.contextmanager
def engine_cache(modules: Iterable[str]) -> Iterator[Path]:
    """Within it, the calling thread's kernels of `modules` and of the modules they import
    are read from and written to the engine's directory
    (`simcore.base.caches.engine_directory`), which it yields; kernels of other modules
    use the default one. `modules` are the kernel modules an engine compiles
    (`simcore.simulate.engine_modules`): numba compiles the allocator's and the
    scheduler's kernels into the event loop, so its cached code is valid only while all of
    them are unchanged. Entering costs nothing per kernel: a kernel is pointed at its
    directory only when numba loads or saves it. Re-entrant for the same engine."""
    root, members = engine_directory(tuple(modules))
    held = getattr(_thread, "engine", None)
    if held is not None:
        if held[0] != root:
            raise RuntimeError(f"kernel cache {held[0]} is in use by this thread; cannot "
                               f"switch to {root} inside it")
        yield root
        return
    _thread.engine = (root, members)
    try:
        yield root
    finally:
        _thread.engine = None


def cache_directory(module: str | None = None) -> Path:
    """Where the calling thread's kernels of `module` are cached: the directory of the
    engine it runs if that engine compiles the module (any module, if None), else the
    default `NUMBA_CACHE`."""
    engine = getattr(_thread, "engine", None)
    if engine is None or (module is not None and module not in engine[1]):
        return NUMBA_CACHE
    return engine[0]


@contextlib.contextmanager
def cache_lock(directory: Path | None = None) -> Iterator[None]:
    """An exclusive lock on a kernel cache directory (by default the calling thread's
    engine's), across processes (POSIX record locks, which network file systems also
    honour)."""
    directory = cache_directory() if directory is None else directory
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".write-lock", "a+b") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


kernel = _cached(**_OPTIONS)
#: Compiled, cached helpers that may allocate (table builders), with numba's runtime.
njit_cached = _cached()


def generic(stub: Callable | None = None, *, default: bool = False) -> Any:
    """Declare a kernel operation implemented per struct type (see `implements`).

    The decorated function documents the operation and fixes its parameter names; with
    `default=True` its body is also the implementation for types that have none (e.g. a
    neutral answer), otherwise such a type fails to compile with numba's "no
    implementation" error naming the operation and the type.
    """
    if stub is None:
        return lambda fn: generic(fn, default=default)
    table: dict[type | None, Callable] = {}
    if default:
        table[None] = _copy(stub)

    def typer(*args: Any) -> Callable | None:
        owner = getattr(args[0], "instance_class", None)
        return table.get(owner, table.get(None))

    typer.__signature__ = inspect.signature(stub)  # numba checks it against the stub's
    overload(stub, jit_options=_OPTIONS)(typer)
    stub.implementations = table
    return stub


def implements(operation: Callable, struct: type) -> Callable[[Callable], Callable]:
    """Decorator: the kernel it decorates is `operation` for first arguments of class
    `struct` (a NamedTuple). Its parameters must be named as the operation's."""

    def register(fn: Callable) -> Callable:
        impl = getattr(fn, "py_func", fn)
        if list(inspect.signature(impl).parameters) != list(
                inspect.signature(operation).parameters):
            raise TypeError(f"{impl.__qualname__} implements {operation.__qualname__}: "
                            "expected the same parameter names")
        operation.implementations[struct] = impl
        _STRUCTS.add(struct)
        return fn

    return register


def _copy(fn: Callable) -> Callable:
    """A plain copy of a function, so that an operation's default body can be compiled as
    an implementation of the operation itself."""
    import types

    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    clone.__qualname__ = fn.__qualname__
    return clone


def kernel_ready(kernel: Any, *args: Any) -> float:
    """Compile `kernel` (a numba dispatcher) for the types of `args`, or load it from
    numba's cache, without running it; returns the seconds that took (next to nothing
    once it is loaded), so that a run's time does not count the compiler's."""
    began = time.perf_counter()
    kernel.compile(tuple(typeof(a) for a in args))
    return time.perf_counter() - began
