"""The contracts of the extension points: every registry row's module satisfies its
protocol, rows sharing a module differ by their variant alone, a module that breaks its
contract is refused naming what it lacks, and the run metrics modules report reach the
summary through the run-metric registry."""

from __future__ import annotations

import ast
import inspect
import itertools
import subprocess
import sys
import types
from typing import get_args

import numpy as np
import pytest

from simcore.base.contracts import members
from simcore.base.errors import SimcoreError, SpecError
from simcore.base.fingerprint import module_file
from simcore.core import columns
from simcore.core.columns import MODULE_METRICS, OMITTED, RUN_METRICS, Column
from simcore.jobs.bsp import RING, BSPJobs
from simcore.jobs.jobs import Jobs
from simcore.machines import flat
from simcore.machines.contract import AllocatorHooks, AllocatorModule
from simcore.machines.registry import ALLOCATORS, KINDS, Allocator
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, START_DELAY, PolicySpec, Scheduler
from simcore.schedulers import phased
from simcore.schedulers.contract import EngineModule, SchedulerHooks, SchedulerModule
from simcore.simulate import simulate
from simcore.workload.synthetic import MODELS, Model, WorkloadModel

_fakes = itertools.count()


def fake_module(monkeypatch: pytest.MonkeyPatch, **functions: object) -> str:
    """A module of `functions` under a fresh name in the package, importable for the
    test's duration."""
    name = f"simcore.fake_module_{next(_fakes)}"  # rows name modules of the package
    module = types.ModuleType(name)
    module.__dict__.update(functions)
    monkeypatch.setitem(sys.modules, name, module)
    return name


def resolved(row: Allocator | Scheduler | Model) -> object:
    """The row's module, resolved against its contract."""
    return row.implementation


def same(a: dict, b: dict) -> bool:
    """Whether two summaries hold the same values (NaN equal to NaN)."""
    return {k: repr(v) for k, v in a.items()} == {k: repr(v) for k, v in b.items()}


def jobs(n: int = 4) -> Jobs:
    return Jobs.create(np.arange(1, n + 1), np.arange(n, dtype=float), np.full(n, 5.0),
                       np.full(n, 6.0), np.full(n, 2),
                       bsp=BSPJobs(np.full(n, RING), np.full(n, 1e-3), np.full(n, 2e-3),
                                   np.ones(n, dtype=np.int64), np.full(n, 5e-5)))


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
    with pytest.raises(SpecError, match=r"allocator a: no module simcore\.machines\.nowhere"):
        resolved(Allocator("a", "", ("flat",), "simcore.machines.nowhere", frozenset()))


# --- module metrics ------------------------------------------------------------------------

@pytest.fixture
def third_metric(monkeypatch):
    """A run metric registered besides the two the modules of this project report."""
    column = Column("fake_metric", int, "count", "a metric a test module reports")
    monkeypatch.setattr(columns, "RUN_METRICS", (*RUN_METRICS, column))
    return column.name


def fake_allocator(monkeypatch, **hooks: object) -> str:
    """A flat-machine allocator row whose module adds `hooks` to flat's functions."""
    module = fake_module(monkeypatch, build=flat.build, memory_bytes=flat.memory_bytes,
                         **hooks)
    monkeypatch.setitem(ALLOCATORS, "fake-free", Allocator(
        "fake-free", "flat, reporting metrics", ("flat",), module, frozenset({"counts"})))
    return "fake-free"


def fake_scheduler(monkeypatch, **hooks: object) -> str:
    """An FCFS scheduler row whose module adds `hooks` to the phased one's functions."""
    module = fake_module(monkeypatch, kernel_policy=phased.kernel_policy, **hooks)
    monkeypatch.setitem(SCHEDULERS, "fake-fcfs", Scheduler("fake-fcfs", "FCFS, reporting",
                                                           module, (START_DELAY,)))
    return "fake-fcfs"


def test_a_third_metric_of_an_allocator_module_reaches_the_summary(monkeypatch,
                                                                    third_metric):
    allocator = fake_allocator(monkeypatch, observables=lambda struct, span_s: {
        "cable_utilization": 0.25, third_metric: 7})
    summary = simulate(jobs(), MachineSpec.parse("flat:8", allocator), "fcfs").summary
    assert summary["cable_utilization"] == 0.25 and summary[third_metric] == 7
    assert summary["reservations_delayed"] is None  # no module reports it: its absent value
    keys = list(summary)  # after the metrics modules report, before the engine's last
    assert keys.index(third_metric) == keys.index("reservations_delayed") + 1
    plain = simulate(jobs(), "flat:8", "fcfs").summary
    assert same({k: v for k, v in summary.items() if k != third_metric},
                {**plain, "cable_utilization": 0.25, "machine": "flat:8 allocator=fake-free"})


def test_a_third_metric_of_a_scheduler_module_reaches_the_summary(monkeypatch, third_metric):
    scheduler = fake_scheduler(monkeypatch, observables=lambda struct: {third_metric: 3})
    summary = simulate(jobs(), "flat:8", PolicySpec(scheduler)).summary
    assert summary[third_metric] == 3
    assert same(summary, {**simulate(jobs(), "flat:8", "fcfs").summary, third_metric: 3,
                          "policy": {"scheduler": scheduler, "start_delay_s": 0.0}})


def test_an_unregistered_or_mistyped_module_metric_is_an_error_naming_it(monkeypatch):
    scheduler = fake_scheduler(monkeypatch, observables=lambda struct: {"queue_depth": 2})
    with pytest.raises(SimcoreError, match=r"scheduler fake-fcfs reports queue_depth, which "
                                           r"RUN_METRICS .* does not register"):
        simulate(jobs(), "flat:8", PolicySpec(scheduler))
    allocator = fake_allocator(monkeypatch, observables=lambda struct, span_s: {
        "cable_utilization": "high"})
    with pytest.raises(SimcoreError, match=r"allocator fake-free reports "
                                           r"cable_utilization='high'; RUN_METRICS registers "
                                           r"it as float"):
        simulate(jobs(), MachineSpec.parse("flat:8", allocator), "fcfs")


def test_an_unregistered_per_job_column_is_an_error_naming_it(monkeypatch):
    def job_metrics(struct, state, jobs):
        return {"nearness": np.zeros(len(jobs.submit))}, {}

    allocator = fake_allocator(monkeypatch, job_metrics=job_metrics)
    with pytest.raises(SimcoreError, match=r"allocator fake-free adds the per-job column\(s\) "
                                           r"nearness, which JOB_COLUMNS"):
        simulate(jobs(), MachineSpec.parse("flat:8", allocator), "fcfs")


def test_both_engines_report_every_metric_that_has_an_absent_value(monkeypatch):
    """The time-sharing engine names none of the event engine's metrics it lacks: they
    come from the registry, so a metric registered with an absent value reaches its
    summaries too."""
    absent = {c.name for c in RUN_METRICS if c.absent is not OMITTED}
    assert absent <= set(simulate(jobs(), "flat:8", "fcfs").summary)
    assert {c.name for c in MODULE_METRICS} <= absent
    column = Column("fake_count", int, "count", "counted by no engine", absent=0)
    monkeypatch.setattr(columns, "RUN_METRICS", (*RUN_METRICS, column))
    for scheduler in ("gang", "fcs"):
        summary = simulate(jobs(), "flat:8", scheduler).summary
        assert absent | {"fake_count"} <= set(summary)
        assert summary["fake_count"] == 0 and summary["blocked_links"] == 0
        assert summary["decisions"] > 0
