"""Where machine description files are found: wired machines' `<kind>.yaml` and Slurm
menus, in `$TORUS_SWEEP_MACHINES` and then the repository's `config/machines`."""

from __future__ import annotations

import os
from pathlib import Path

from simcore.base.patterns import MACHINE_DESCRIPTIONS

MACHINES_ENV = "TORUS_SWEEP_MACHINES"


def machines_dirs(machines_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where wired machine descriptions are searched, in order."""
    dirs = [Path(machines_dir)] if machines_dir else []
    dirs += [Path(p) for p in os.environ.get(MACHINES_ENV, "").split(os.pathsep) if p]
    dirs.append(MACHINE_DESCRIPTIONS)
    return dirs
