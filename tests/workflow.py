"""Helpers for tests that run the Snakemake workflow in a scratch copy of the repository."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

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


def dry_run(workdir: Path, configfile: str, cores: int = 2,
            targets: tuple[str, ...] = ("all",)) -> Any:
    """The DAG a dry run of `workdir` plans, through Snakemake's Python API (no subprocess,
    nothing written but Snakemake's own bookkeeping)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    with contextlib.chdir(workdir), SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=cores),
            config_settings=ConfigSettings(configfiles=[workdir / configfile]),
            snakefile=workdir / "Snakefile", workdir=workdir)
        workflow.dag(DAGSettings(targets=set(targets))).execute_workflow(executor="dryrun")
        return workflow._workflow.dag


def planned_rules(workdir: Path, configfile: str) -> Counter:
    """Jobs a dry run would run, by rule."""
    dag = dry_run(workdir, configfile)
    return Counter(job.rule.name for job in dag.needrun_jobs(exclude_finished=False))
