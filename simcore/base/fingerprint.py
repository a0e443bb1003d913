"""Which source files a computation depends on: the import closure of its modules.

A result depends on the code of every simcore module that the modules computing it import,
directly or through others, at the top of a file or inside a function. `closure` finds
them by reading the sources (nothing is imported or run), so the lists are derived from
the code and never kept by hand: the run key's code component, the numba cache directory
and the code inputs of the workflow's rules all come from here.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]
ROOT_NAME = PACKAGE.name
#: Fields of registry rows that only describe them (help text, examples): never part of
#: what a result depends on.
DESCRIPTIVE = frozenset({"summary", "meaning", "example", "description", "caption"})


def module_file(name: str) -> Path | None:
    """Source file of simcore module `name` (a package's __init__.py), or None."""
    if name != ROOT_NAME and not name.startswith(ROOT_NAME + "."):
        return None
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    """The dotted name of a source file of the package."""
    relative = path.resolve().relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Dotted names the file at `path` imports anywhere, at the top or inside a function
    (`from package import name` gives both `package` and `package.name`), except under
    `if TYPE_CHECKING:`, which never runs."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@functools.lru_cache(maxsize=512)
def _dependencies(path: Path, mtime_ns: int) -> tuple[Path, ...]:
    """Source files of the simcore modules the file at `path` imports, and of the packages
    that contain it (whose __init__ runs on import)."""
    name = module_name(path)
    found = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
    found |= imported_modules(path)
    return tuple(sorted({file for file in map(module_file, found) if file is not None}))


def closure(modules: Iterable[str], stop: Iterable[str] = ()) -> list[Path]:
    """Source files of `modules`, of every simcore module they import transitively, and of
    the packages that contain them, sorted. Modules named in `stop` are neither included
    nor followed (registries, whose part in a result is the rows it uses)."""
    stopped = {path for path in map(module_file, stop) if path is not None}
    todo = []
    for name in modules:
        path = module_file(name)
        if path is None:
            raise ValueError(f"{name} is not a module of {ROOT_NAME}")
        todo.append(path)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path not in seen and path not in stopped:
            seen.add(path)
            todo.extend(_dependencies(path, path.stat().st_mtime_ns))
    return sorted(seen)


def definition(row: Any) -> Any:
    """The canonical form of a registry row (a dataclass: a row, a parameter) as JSON
    values, without the fields that only describe it to people (DESCRIPTIVE): what a run
    that uses the row depends on, defaults included."""
    if dataclasses.is_dataclass(row) and not isinstance(row, type):
        return {f.name: definition(getattr(row, f.name)) for f in dataclasses.fields(row)
                if f.name not in DESCRIPTIVE}
    if isinstance(row, Mapping):
        return {str(k): definition(v) for k, v in sorted(row.items())}
    if isinstance(row, (frozenset, set)):
        return sorted(definition(v) for v in row)
    if isinstance(row, (tuple, list)):
        return [definition(v) for v in row]
    if isinstance(row, type):
        return row.__name__
    if isinstance(row, float) and not math.isfinite(row):
        return repr(row)
    return row


def digest(paths: Iterable[Path]) -> str:
    """sha256 over the package-relative path and the bytes of each file."""
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        sha.update(path.read_bytes())
    return sha.hexdigest()
