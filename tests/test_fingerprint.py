"""The code a result depends on is the import closure of its modules, never a hand-kept list:
an edit to any module a run imports re-simulates the runs it can affect."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simcore.base.caches import kernel_sources
from simcore.base.fingerprint import closure, module_name
from simcore.machines.registry import ALLOCATORS
from simcore.policy import SCHEDULERS
from simcore.simulate import engine_modules
from tests.conftest import ROOT

PACKAGE = ROOT / "simcore"


def names(paths: list[Path]) -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in paths}


def test_closure_follows_imports_anywhere_in_a_module():
    files = names(closure(["simcore.workload.io"]))
    assert {"workload/io.py", "workload/__init__.py", "__init__.py", "jobs/swf.py",
            "jobs/cleaning.py", "base/checksums.py", "base/atomic.py", "base/errors.py"} <= files
    assert "simulate.py" not in files
    # runner imports simulate inside a function: still part of what a run depends on
    assert "simulate.py" in names(closure(["simcore.sweep.runner"]))
    assert module_name(PACKAGE / "machines" / "boxes" / "allocator.py") == \
        "simcore.machines.boxes.allocator"


def test_closure_leaves_out_imports_only_type_checkers_run():
    # allocator modules name the spec above them for type hints alone
    files = names(closure(["simcore.machines.flat"]))
    assert "machines/flat.py" in files
    assert not {"machines/spec.py", "machines/registry.py"} & files


def test_kernel_cache_covers_the_modules_kernels_import():
    files = names(kernel_sources())
    assert {"base/jit.py", "core/engine.py", "machines/bgl/wiring.py",
            "schedulers/conservative.py"} <= files
    assert not {"report/plots.py", "report/tables.py", "cli/main.py"} & files


def engine_module_sets() -> dict[tuple[str, str], tuple[str, ...]]:
    return {(a, s): engine_modules(ALLOCATORS[a], SCHEDULERS[s])
            for a in ALLOCATORS for s in SCHEDULERS}


def test_an_engine_cache_covers_its_kernels_and_no_registry():
    sets = engine_module_sets()
    assert sets["any-free", "backfill"] == ("simcore.core.engine", "simcore.machines.flat",
                                            "simcore.schedulers.phased")
    assert "simcore.machines.curves.orderings" in sets["first-fit", "fcfs"]
    assert sets["any-free", "gang"] == ("simcore.timeshare.engine",)
    for modules in set(sets.values()):
        files = names(closure(modules))
        assert {"core/state.py", "base/jit.py"} <= files, modules
        # a registry row compiles nothing: adding one must keep every compiled engine
        assert not {"machines/registry.py", "schedulers/registry.py", "policy.py",
                    "machines/spec.py", "simulate.py"} & files, modules
        assert not {f for f in files if f.split("/")[0] in (
            "tools", "report", "sweep", "cli", "schedules", "workload")}, modules


ENGINE_DIRECTORIES = """
import json
from simcore.base.caches import engine_directories
from simcore.machines.registry import ALLOCATORS
from simcore.policy import SCHEDULERS
from simcore.simulate import engine_modules
from simcore.sweep.runner import engines_digest

sets = {f"{a} {s}": engine_modules(ALLOCATORS[a], SCHEDULERS[s])
        for a in ALLOCATORS for s in SCHEDULERS}
directories = engine_directories(sets.values())
found = {pair: directories[modules][0].name for pair, modules in sets.items()}
found["warmed"] = engines_digest([(a, s) for a in ALLOCATORS for s in SCHEDULERS
                                  if not a.endswith("-too") and not s.endswith("-too")])
print(json.dumps(found))
"""

NEW_ALLOCATOR = '''    Allocator("any-free-too", "a second row of the flat allocator", ("flat",),
              "simcore.machines.flat", frozenset({"counts"})),
'''
NEW_SCHEDULER = '''    Scheduler("fcfs-too", "a second row of FCFS", _PHASED, (START_DELAY,)),
'''


def test_an_engine_cache_changes_only_with_the_code_it_compiles(tmp_path):
    """In a copy of the package: registry rows leave every engine's directory alone, an
    allocator's edit moves that allocator's engines only, core/state.py's every engine."""
    copy = tmp_path / "code"
    shutil.copytree(PACKAGE, copy / "simcore", ignore=shutil.ignore_patterns("__pycache__"))

    def directories() -> dict[str, str]:
        out = subprocess.run(
            [sys.executable, "-c", ENGINE_DIRECTORIES],
            env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                 "TORUS_SWEEP_CACHE": str(tmp_path / "cache")},
            cwd=tmp_path, capture_output=True, text=True, check=True)  # not this tree
        return json.loads(out.stdout)

    def edit(relative: str, old: str, new: str) -> None:
        path = copy / "simcore" / relative
        text = path.read_text()
        assert text.count(old) == 1, (relative, old)
        path.write_text(text.replace(old, new))

    before = directories()
    assert len(set(before.values())) > 10
    edit("machines/registry.py", '    Allocator("free-list", ',
         NEW_ALLOCATOR + '    Allocator("free-list", ')
    edit("schedulers/registry.py", '    Scheduler("fcfs", ',
         NEW_SCHEDULER + '    Scheduler("fcfs", ')
    added = directories()
    assert len(added) > len(before)
    # a row compiles nothing new, and the workflow does not warm the engines again
    assert {pair: added[pair] for pair in before} == before
    assert added["any-free-too fcfs-too"] == before["any-free fcfs"]

    edit("machines/flat.py", '"""Flat machines:', '"""Edited. Flat machines:')
    flat_edited = directories()
    assert flat_edited["warmed"] != before.pop("warmed")
    changed = {pair for pair in before if flat_edited[pair] != before[pair]}
    flat = {pair for pair in before if ALLOCATORS[pair.split()[0]].module ==
            "simcore.machines.flat" and not SCHEDULERS[pair.split()[1]].engine}
    assert flat and changed == flat

    edit("core/state.py", '"""Simulation state', '"""Edited. Simulation state')
    state_edited = directories()
    assert all(state_edited[pair] != flat_edited[pair] for pair in before)


def test_a_run_loads_its_engine_from_the_engine_directory():
    from simcore.base import jit
    from simcore.base.caches import engine_directory
    from simcore.jobs.jobs import Jobs
    from simcore.simulate import simulate

    jobs = Jobs.create([1, 2, 3], [0, 1, 2], [5, 5, 5], [6, 6, 6], [2, 1, 2])
    modules = engine_modules(ALLOCATORS["any-free"], SCHEDULERS["fcfs"])
    directory, members = engine_directory(modules)
    simulate(jobs, "flat:8", "fcfs")
    assert sorted(directory.rglob("engine.run_events-*.nbi")), "run_events is cached there"
    assert {"simcore.core.engine", "simcore.machines.flat"} <= members
    assert not list(jit.NUMBA_CACHE.rglob("engine.run_events-*.nbi")), \
        "the default directory holds no engine"
    assert jit.cache_directory("simcore.core.engine") == jit.NUMBA_CACHE, "the context was left"
    with jit.engine_cache(modules) as inside:
        assert inside == directory == jit.cache_directory("simcore.core.engine")
        assert jit.cache_directory("simcore.timeshare.engine") == jit.NUMBA_CACHE, \
            "a kernel the engine does not compile keeps the default directory"
        with pytest.raises(RuntimeError, match="cannot switch"), \
                jit.engine_cache(("simcore.timeshare.engine",)):
            pass
    assert jit.cache_directory() == jit.NUMBA_CACHE


RUN_SHARD = """
import io, sys, yaml
from pathlib import Path

import pytest
from simcore.sweep.experiments import plan
from simcore.sweep.runner import run_shard
from simcore.sweep.samples import write_samples

config = yaml.safe_load(Path(sys.argv[1]).read_text())
config["experiments"] = {"e": {"workloads": ["lublin16"], "machines": ["flat"],
                               "policies": ["fcfs"], "grid": {"offered_load": [0.9]},
                               "seeds": [1, 2]}}
shard = plan(config)[0]
root = Path(sys.argv[2])
write_samples(shard.source.synthetic, [run.seed for run in shard.runs],
              (root / shard.source.path(1)).parent)
report = run_shard(shard, root, log=io.StringIO())
print(report.simulated)
"""


@pytest.mark.slow
def test_editing_a_non_kernel_module_re_simulates(tmp_path):
    """A copy of the package in which swf.job_size (not a kernel) changes every size:
    the same shard is simulated again, not read back from the run cache."""
    copy = tmp_path / "code"
    shutil.copytree(PACKAGE, copy / "simcore", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "run.py").write_text(RUN_SHARD)
    results = tmp_path / "results"

    def simulated() -> int:
        out = subprocess.run(
            [sys.executable, str(tmp_path / "run.py"), str(ROOT / "config/test/small.yaml"),
             str(results)], env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin",
                                 "HOME": str(Path.home()),
                                 "TORUS_SWEEP_MACHINES": str(ROOT / "config/machines")},
            capture_output=True, text=True, check=True)
        return int(out.stdout.split()[-1])

    assert simulated() == 2
    assert simulated() == 0, "unchanged code reads the runs back"
    swf = copy / "simcore" / "jobs" / "swf.py"
    text = swf.read_text()
    edited = text.replace("    return np.where(allocated > 0, allocated, requested)",
                          "    return np.maximum(np.where(allocated > 0, allocated, requested), 2)")
    assert edited != text
    swf.write_text(edited)
    assert simulated() == 2, "a run reads sizes through swf.job_size: its key changed"
    swf.write_text(text)
    assert simulated() == 0, "the original code's entries are still there"
