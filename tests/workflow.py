"""Helpers for tests that run the Snakemake workflow in a scratch copy of the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def scratch_workflow(tmp_path: Path) -> Path:
    """A copy of the workflow (Snakefile, workflow/, config/, profiles/) to run in isolation."""
    target = tmp_path / "wf"
    target.mkdir()
    shutil.copy(ROOT / "Snakefile", target)
    for folder in ("workflow", "config", "profiles"):
        if (ROOT / folder).exists():
            shutil.copytree(ROOT / folder, target / folder)
    return target


def snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None,
              check: bool = True, cores: int = 2) -> subprocess.CompletedProcess:
    """Run the snakemake CLI in `workdir`; fail with its output when `check` and it fails."""
    result = subprocess.run(
        ["snakemake", "--cores", str(cores), *args],
        cwd=workdir, capture_output=True, text=True, env={**os.environ, **(env or {})},
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def small_config(workdir: Path, name: str = "test.yaml", **sections: dict) -> str:
    """Write a complete config: config/test/small.yaml with some sections updated."""
    config = yaml.safe_load((workdir / "config/test/small.yaml").read_text())
    for section, values in sections.items():
        config[section] = {**config.get(section, {}), **values}
    (workdir / name).write_text(yaml.safe_dump(config))
    return name
