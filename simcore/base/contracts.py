"""Modules named by registry rows, checked against the protocol of their extension point.

A registry row (an allocator, a scheduler, a machine kind's grammar, a workload model)
names the module that implements it by string, so that the registry stays cheap to
import. `load` imports such a module when it is first needed and checks it against a
`typing.Protocol` listing the functions (and values) the module must define: a module
missing one fails there, with a SpecError naming the module and what it lacks, instead
of wherever the missing function would first have been called. Optional functions are
declared apart, with the behaviour of a module that lacks them (`hooks`); the keyword
arguments a row passes to its module (its variant) are checked against the function
that takes them (`check_variant`).
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Literal

from simcore.base.errors import SpecError


def members(protocol: type) -> tuple[str, ...]:
    """The names a module must define to satisfy `protocol`: its public functions and
    annotated values."""
    names = [name for name, value in vars(protocol).items()
             if callable(value) and not name.startswith("_")]
    return (*names, *(name for name in vars(protocol).get("__annotations__", {})
                      if name not in names))


@functools.cache
def load(module: str, protocol: type, what: str) -> ModuleType:
    """Module `module` (named by `what`, e.g. "allocator ff"), checked against `protocol`;
    imported once. It must be part of the package: a run's key holds the code of the
    modules it executes, and the kernel cache the kernels they compile."""
    if not module.startswith(f"{__package__.partition('.')[0]}."):
        raise SpecError(f"{what}: module {module} is outside simcore; expected a module of "
                        "the package, such as simcore.machines.<family>.<name>")
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module + ".").startswith(exc.name + "."):
            raise
        raise SpecError(f"{what}: no module {module}") from None
    missing = [name for name in members(protocol) if not hasattr(found, name)]
    if missing:
        raise SpecError(f"{what}: module {module} does not define {', '.join(missing)}, "
                        f"which {protocol.__name__} requires")
    return found


def hooks(module: ModuleType, defaults: type) -> dict[str, Callable[..., Any]]:
    """The optional functions `defaults` declares (its static methods, each the behaviour
    of a module without it), taken from `module` where it defines them."""
    return {name: getattr(module, name, getattr(defaults, name))
            for name, value in vars(defaults).items() if isinstance(value, staticmethod)}


def check_variant(function: Callable[..., Any], positional: int, variant: Mapping[str, Any],
                  what: str) -> None:
    """Raise a SpecError naming `what` unless `function`, after `positional` arguments,
    takes the keyword arguments `variant` (a registry row's variant): each a parameter it
    has, of the builtin type or among the values of the module's `Literal` alias its
    annotation names."""
    signature = inspect.signature(function)
    try:
        signature.bind(*([None] * positional), **variant)
    except TypeError as exc:
        raise SpecError(f"{what}: {function.__module__}.{function.__name__} does not take "
                        f"the row's variant {dict(variant)}: {exc}") from None
    for name, value in variant.items():
        parameter = signature.parameters.get(name)
        expected = None if parameter is None else _annotation(function, parameter.annotation)
        if typing.get_origin(expected) is Literal:
            fits = value in typing.get_args(expected)
        else:
            fits = not isinstance(expected, type) or isinstance(value, expected)
        if not fits:
            raise SpecError(f"{what}: {function.__module__}.{function.__name__} takes "
                            f"{name}: {parameter.annotation}; the row passes {value!r}")


def _annotation(function: Callable[..., Any], annotation: Any) -> Any:
    """An annotation, a name (postponed annotations are strings) looked up among the
    function's module globals and the builtins; anything else as it is."""
    if not isinstance(annotation, str):
        return annotation
    return getattr(function, "__globals__", {}).get(annotation,
                                                   getattr(builtins, annotation, None))
