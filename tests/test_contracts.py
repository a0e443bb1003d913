"""The contracts of the extension points: every registry row's module satisfies its
protocol, rows sharing a module differ by their variant alone, and a module that breaks
its contract is refused naming what it lacks."""

from __future__ import annotations

import ast
import inspect
import itertools
import subprocess
import sys
import types
from typing import get_args

import pytest

from simcore.base.contracts import members
from simcore.base.errors import SpecError
from simcore.base.fingerprint import module_file
from simcore.machines import flat
from simcore.machines.contract import AllocatorHooks, AllocatorModule
from simcore.machines.registry import ALLOCATORS, KINDS, Allocator
from simcore.policy import SCHEDULERS, Scheduler
from simcore.schedulers.contract import EngineModule, SchedulerHooks, SchedulerModule
from simcore.workload.synthetic import MODELS, Model, WorkloadModel

_fakes = itertools.count()


def fake_module(monkeypatch: pytest.MonkeyPatch, **functions: object) -> str:
    """A module of `functions` under a fresh name, importable for the test's duration."""
    name = f"tests.fake_module_{next(_fakes)}"
    module = types.ModuleType(name)
    module.__dict__.update(functions)
    monkeypatch.setitem(sys.modules, name, module)
    return name


def resolved(row: Allocator | Scheduler | Model) -> object:
    """The row's module, resolved against its contract."""
    return row.implementation


# --- every row fits its protocol ---------------------------------------------------------

def test_the_registries_import_no_module_they_name():
    """Rows name their modules by string; a module is imported when first resolved, so
    reading the registries (planning, the command line's help) loads no numba."""
    probe = ("import sys, simcore.machines.spec, simcore.policy, simcore.workload.synthetic; "
             "print(sorted(m for m in ('numba', 'simcore.machines.flat', "
             "'simcore.schedulers.phased') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", list(ALLOCATORS))
def test_every_allocator_module_satisfies_its_protocol(name):
    row = ALLOCATORS[name]
    implementation = row.implementation
    for function in members(AllocatorModule):
        assert callable(getattr(implementation.module, function))
    for hook in ("refused", "observables", "job_metrics", "failure_domains"):
        own = getattr(implementation.module, hook, None)
        assert getattr(implementation, hook) is (own or getattr(AllocatorHooks, hook))
    if row.ordered:
        assert row.ordering_module().DEFAULT_ORDERING in row.ordering_module().ORDERINGS


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_every_scheduler_module_satisfies_its_protocol(name):
    row = SCHEDULERS[name]
    implementation = row.implementation
    protocol = EngineModule if row.engine else SchedulerModule
    for function in members(protocol):
        assert callable(getattr(implementation.module, function))
    own = getattr(implementation.module, "observables", None)
    assert implementation.observables is (own or SchedulerHooks.observables)


def test_every_kind_grammar_wiring_and_model_satisfies_its_protocol():
    for kind in KINDS.values():
        if kind.grammar:
            assert callable(kind.grammar_module().parse_argument)
        if kind.wiring:
            assert callable(kind.wiring_module().load_wiring)
    for model in MODELS.values():
        assert callable(model.implementation.sample)
    assert MODELS["chu"].means({"distribution": "uniform", "side": 32, "square": False,
                                "load": 0.5, "mean_service_s": 10.0}) is not None
    assert MODELS["lublin"].means({}) is None  # no nominal: the default


# --- variants: rows and modules agree ------------------------------------------------------

def _variant_function(row: Allocator | Scheduler) -> tuple[object, int]:
    module = row.implementation.module
    if isinstance(row, Allocator):
        return module.build, 2
    return (module.simulate, 4) if row.engine else (module.kernel_policy, 2)


@pytest.mark.parametrize("rows", [ALLOCATORS, SCHEDULERS], ids=["allocators", "schedulers"])
def test_rows_sharing_a_module_differ_by_their_variant_and_set_what_it_requires(rows):
    by_module: dict[str, list] = {}
    for row in rows.values():
        by_module.setdefault(row.module, []).append(row)
    for module, shared in by_module.items():
        variants = [dict(row.variant) for row in shared]
        assert all(a != b for a, b in itertools.combinations(variants, 2)), module
        function, positional = _variant_function(shared[0])
        keywords = list(inspect.signature(function).parameters.values())[positional:]
        required = {p.name for p in keywords if p.default is inspect.Parameter.empty
                    and p.kind is inspect.Parameter.KEYWORD_ONLY}
        for row in shared:
            assert required <= set(row.variant), f"{row.name} leaves out {required}"


def _names_tested(tree: ast.AST, attribute: str) -> list[int]:
    """Lines where a comparison or a subscript uses `<something>.<attribute>`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare | ast.Subscript):
            parts = [node.left, *node.comparators] if isinstance(node, ast.Compare) \
                else [node.slice]
            if any(isinstance(p, ast.Attribute) and p.attr == attribute for p in parts):
                found.append(node.lineno)
    return found


def test_no_module_a_row_names_tests_the_row_name():
    """Variants are row data: no module compares its allocator's or scheduler's name, or
    looks it up in a table of its own."""
    for rows, attribute in ((ALLOCATORS, "allocator"), (SCHEDULERS, "scheduler")):
        for module in {row.module for row in rows.values()}:
            path = module_file(module)
            assert path is not None
            lines = _names_tested(ast.parse(path.read_text()), attribute)
            assert not lines, f"{module} tests .{attribute} on lines {lines}"


def test_an_enumerated_variant_is_checked_against_the_module_vocabulary(monkeypatch):
    from simcore.machines.mesh2d import lookahead

    assert {row.variant["rule"] for row in ALLOCATORS.values()
            if row.module == lookahead.__name__} == set(get_args(lookahead.Rule))
    row = Allocator("la-nope", "a rule the module lacks", ("mesh",), lookahead.__name__,
                    frozenset(), variant={"rule": "nearest"})
    with pytest.raises(SpecError, match=r"allocator la-nope: .*lookahead\.build takes rule: "
                                        r"Rule; the row passes 'nearest'"):
        resolved(row)


# --- modules that break their contract ----------------------------------------------------

def test_an_allocator_module_without_a_required_function_is_refused(monkeypatch):
    module = fake_module(monkeypatch, build=flat.build)
    row = Allocator("broken", "no memory_bytes", ("flat",), module, frozenset())
    with pytest.raises(SpecError, match=rf"allocator broken: module {module} does not define "
                                        r"memory_bytes, which AllocatorModule requires"):
        resolved(row)


def test_a_row_whose_variant_the_module_does_not_take_is_refused(monkeypatch):
    module = fake_module(monkeypatch, build=flat.build, memory_bytes=flat.memory_bytes)
    row = Allocator("odd", "a variant flat lacks", ("flat",), module, frozenset(),
                    variant={"rotate": True})
    with pytest.raises(SpecError, match=r"allocator odd: simcore\.machines\.flat\.build does "
                                        r"not take the row's variant \{'rotate': True\}"):
        resolved(row)


def test_scheduler_and_model_modules_without_their_functions_are_refused(monkeypatch):
    empty = fake_module(monkeypatch)
    with pytest.raises(SpecError, match=rf"scheduler s: module {empty} does not define "
                                        r"kernel_policy, which SchedulerModule requires"):
        resolved(Scheduler("s", "", empty, ()))
    with pytest.raises(SpecError, match=r"does not define simulate, which EngineModule"):
        resolved(Scheduler("e", "", empty, (), engine=True))
    with pytest.raises(SpecError, match=rf"model m: module {empty} does not define sample, "
                                        rf"which {WorkloadModel.__name__} requires"):
        resolved(Model("m", "", (), empty))


def test_a_row_naming_no_module_is_refused():
    with pytest.raises(SpecError, match=r"allocator a: no module simcore\.machines\.nowhere"):
        resolved(Allocator("a", "", ("flat",), "simcore.machines.nowhere", frozenset()))
