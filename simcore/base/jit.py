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
central list of kinds to keep in sync; the compiled kernels are cached as usual.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from numba import njit, typeof
from numba.extending import overload

from simcore.base.caches import configure_numba

#: numba's cache directory for simcore's compiled code: set here, before any of it is
#: defined, so that merely importing simcore (a workflow parsing its rules) loads no numba.
NUMBA_CACHE = configure_numba()

_OPTIONS = {"nogil": True, "_nrt": False}


def _cached(**options: Any) -> Callable[[Callable], Any]:
    """numba's `njit(cache=True)`, with writes to the on-disk cache serialised across
    processes. numba saves a compiled signature by reading the function's cache index,
    choosing a free data file name and writing both back: two processes compiling
    different signatures of one function at once (two engines) would otherwise pick the
    same data file, and the index would point one signature at the other's code. Reads
    need no lock (numba replaces each file atomically and ignores an entry whose data file
    is missing)."""
    compile_cached = njit(cache=True, **options)

    def decorate(fn: Callable) -> Any:
        dispatcher = compile_cached(fn)
        cache_file = dispatcher._cache._cache_file  # numba's IndexDataCacheFile
        save = cache_file.save

        @functools.wraps(save)
        def locked_save(key: Any, data: Any) -> None:
            with cache_lock():
                save(key, data)

        cache_file.save = locked_save
        return dispatcher

    return decorate


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """An exclusive lock on the kernel cache, across processes (POSIX record locks, which
    network file systems also honour)."""
    NUMBA_CACHE.mkdir(parents=True, exist_ok=True)
    with open(NUMBA_CACHE / ".write-lock", "a+b") as handle:
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
