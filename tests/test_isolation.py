"""The test suite needs nothing beside the clone and changes nothing outside it: tests of
real jobs run on the committed excerpts (whole-trace tests are skipped, saying how to run
them), and the Slurm tests neither start Slurm nor submit jobs unless asked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SLURM_ENV
from tests.excerpts import TRACE_DIR_ENV

pytestmark = pytest.mark.slow


def pytest_run(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """pytest in a subprocess, without this project's addopts (no workers, no -r flags)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider",
         "-q", "-rs", *args], cwd=cwd, env=env, capture_output=True, text=True,
        check=False, timeout=600)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in (TRACE_DIR_ENV, SLURM_ENV, "PYTEST_ADDOPTS")
           and not k.startswith("PYTEST_XDIST")}
    return {**env, **extra}


def test_trace_tests_pass_in_a_clone_with_nothing_beside_it(tmp_path):
    clone = tmp_path / "clone"  # ../shared/traces does not exist beside it
    clone.mkdir()
    for folder in ("tests", "config"):
        shutil.copytree(ROOT / folder, clone / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", clone)
    result = pytest_run(clone, "tests/test_excerpts.py", "tests/test_cleaning.py",
                        "tests/test_swf.py", "-k", "excerpt or real_trace or header or "
                        "missing_values or truncated or cleaning_keeps or whole",
                        env=clean_env())
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert " error" not in out and "passed" in out
    assert f"skipped without {TRACE_DIR_ENV}" in out
    assert "tests/test_swf.py::test_real_trace_counts[SDSC-BLUE-2000-4.2-cln]" in out
    assert f"set {TRACE_DIR_ENV} to a directory holding the PWA traces" in out


def test_an_installed_package_named_tests_does_not_shadow_the_suite(tmp_path):
    """Some packages (evalys among them) install a top-level `tests` package; the suite's
    own `tests` package is found first, so its modules still import."""
    site = tmp_path / "site"
    (site / "tests").mkdir(parents=True)
    (site / "tests" / "__init__.py").write_text('"""Another project."""\n')
    result = pytest_run(ROOT, "--collect-only", "tests/test_cleaning.py",
                        env=clean_env(PYTHONPATH=str(site)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tests collected" in result.stdout


def fake_commands(bin_dir: Path, sinfo_answers: bool) -> Path:
    """sinfo (answering or not), and bash, snakemake, sbatch, apt-get that only record
    their calls: a test that started, installed or submitted anything leaves a line."""
    bin_dir.mkdir()
    calls = bin_dir / "calls"
    calls.touch()
    scripts = {"sinfo": "echo idle" if sinfo_answers else "exit 1"}
    for name in ("bash", "snakemake", "sbatch", "apt-get"):
        scripts[name] = f'echo "{name} $*" >> {calls}; exit 1'
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return calls


@pytest.mark.parametrize("sinfo_answers", [False, True])
def test_slurm_tests_start_and_submit_nothing_unasked(tmp_path, sinfo_answers):
    calls = fake_commands(tmp_path / "bin", sinfo_answers)
    env = clean_env(PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = pytest_run(ROOT, "tests/test_slurm.py", env=env)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "2 skipped" in out and "passed" not in out
    assert f"set {SLURM_ENV}=1" in out
    assert calls.read_text() == "", "nothing installed, started or submitted"
