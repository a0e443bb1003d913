"""The code a result depends on is the import closure of its modules, never a hand-kept list:
an edit to any module a run imports re-simulates the runs it can affect."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simcore.base.caches import kernel_sources
from simcore.base.fingerprint import closure, module_name
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


RUN_SHARD = """
import io, sys, yaml
from pathlib import Path

import pytest
from simcore.sweep.experiments import plan
from simcore.sweep.runner import run_shard
from simcore.workload.io import write_workload
from simcore.workload.synthetic import synthesize

config = yaml.safe_load(Path(sys.argv[1]).read_text())
config["experiments"] = {"e": {"workloads": ["lublin16"], "machines": ["flat"],
                               "policies": ["fcfs"], "grid": {"offered_load": [0.9]},
                               "seeds": [1, 2]}}
shard = plan(config)[0]
root = Path(sys.argv[2])
for run in shard.runs:
    path = root / shard.source.path(run.seed)
    if not path.exists():
        write_workload(synthesize(shard.source.synthetic, run.seed), path)
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
