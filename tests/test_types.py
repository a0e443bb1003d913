"""The packages and modules listed under [tool.mypy] in pyproject.toml type-check cleanly.

mypy keeps its incremental cache in .mypy_cache at the repository root, so a run after a
small change rechecks only what the change touches."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def test_configured_packages_type_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # mypy finds the configured packages from the working directory
    report, errors, status = api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, f"mypy found errors:\n{report}{errors}"
