"""Shared fixtures: the real PWA traces beside the repository (../shared/traces)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _trace_dir() -> Path:
    configured = os.environ.get("TORUS_SWEEP_TEST_TRACES")
    return Path(configured) if configured else ROOT.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def trace_dir() -> Path:
    """Directory holding the PWA .swf.gz files (tests fail, not skip, without it)."""
    path = _trace_dir()
    assert path.is_dir(), f"trace mirror {path} missing; set TORUS_SWEEP_TEST_TRACES"
    return path


@pytest.fixture(scope="session")
def trace_path(trace_dir: Path):
    """trace_path(name) -> path of that trace's .swf.gz."""
    return lambda name: trace_dir / f"{name}.swf.gz"
