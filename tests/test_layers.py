"""The package's layers: every import runs downward or within a layer, and none forms a
cycle. Imports are read from the sources anywhere in a module (inside functions too, not
under `if TYPE_CHECKING:`), and a registry row naming a module by string counts as an
import of that module by the registry. docs/architecture.md describes the layers."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from simcore.base.fingerprint import PACKAGE, imported_modules, module_file, module_name
from simcore.machines.registry import ALLOCATORS, KINDS
from simcore.policy import SCHEDULERS
from simcore.workload.synthetic import MODELS

#: Bottom to top; a module belongs to the layer of its longest matching prefix.
LAYERS = (
    ("simcore.base",),
    ("simcore.jobs",),
    ("simcore.core",),
    ("simcore.machines", "simcore.machines.contract", "simcore.machines.descriptions",
     "simcore.machines.submesh"),
    ("simcore.machines.flat", "simcore.machines.boxes", "simcore.machines.bgl",
     "simcore.machines.mesh2d", "simcore.machines.curves", "simcore.machines.slurm",
     "simcore.machines.cubes"),
    ("simcore.machines.registry",),
    ("simcore.machines.spec",),
    ("simcore.workload",),
    ("simcore.schedulers", "simcore.timeshare"),
    ("simcore.policy",),
    ("simcore.simulate",),
    ("simcore.fidelity",),
    ("simcore.sweep",),
    ("simcore.report",),
    ("simcore.fidelity.pictures",),
    ("simcore.schedules",),
    ("simcore.tools",),
    ("simcore.cli",),
    ("simcore", "simcore.__main__"),
)


def modules() -> list[str]:
    return sorted(module_name(p) for p in PACKAGE.rglob("*.py"))


def layer(name: str) -> int:
    best, found = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, f"{name} is in no layer of LAYERS"
    return found


def registry_rows() -> Iterator[tuple[str, str]]:
    """(registry module, module a row names) for every module named by string."""
    for row in ALLOCATORS.values():
        for named in (row.module, row.ordering):
            if named:
                yield "simcore.machines.registry", named
    for kind in KINDS.values():
        for named in kind.modules:
            yield "simcore.machines.registry", named
    for scheduler in SCHEDULERS.values():
        yield "simcore.schedulers.registry", scheduler.module
    for model in MODELS.values():
        yield "simcore.workload.synthetic", model.module


def imports() -> dict[str, set[str]]:
    """Each module's simcore imports (modules, not the names taken from them)."""
    known = set(modules())
    graph = {name: set() for name in known}
    for name in known:
        path = module_file(name)
        assert path is not None
        graph[name] = {m for m in imported_modules(path) if m in known and m != name} - {
            "simcore"} if name != "simcore" else set()
    for source, target in registry_rows():
        assert target in known, f"{source} names {target}, which is no module"
        graph[source].add(target)
    return graph


def test_every_import_runs_down_the_layers() -> None:
    upward = [f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
              for source, targets in imports().items() for target in targets
              if layer(target) > layer(source)]
    assert not upward, "\n".join(sorted(upward))


def test_no_imports_form_a_cycle() -> None:
    graph = imports()
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target):], target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_the_walk_reads_imports_inside_functions_and_skips_type_checking(tmp_path) -> None:
    source = (PACKAGE / "machines" / "flat.py")
    tree = ast.parse(source.read_text())
    guarded = [node for node in ast.walk(tree) if isinstance(node, ast.If)
               and getattr(node.test, "id", "") == "TYPE_CHECKING"]
    assert guarded, "flat.py names the spec for type checkers only"
    found = imported_modules(source)
    assert "simcore.machines.spec" not in found and "simcore.core.allocate" in found
    runner = imported_modules(PACKAGE / "sweep" / "runner.py")
    assert "simcore.simulate" in runner  # imported inside a function


def test_no_flat_module_crowds_the_top_and_no_package_dominates() -> None:
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 10, top

    def lines(path) -> int:
        return sum(1 for line in path.read_text().splitlines()
                   if line.strip() and not line.strip().startswith("#"))

    total = sum(lines(p) for p in PACKAGE.rglob("*.py"))
    for folder in {p.parent for p in PACKAGE.rglob("*.py")} - {PACKAGE}:
        share = sum(lines(p) for p in folder.glob("*.py")) / total
        assert share <= 0.2, f"{folder.relative_to(PACKAGE)} holds {share:.0%} of the lines"
