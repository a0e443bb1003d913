"""Placement menu search: candidate Slurm torus3d menus for a workload, and the Pareto set
of the menus a sweep measured.

Candidates (`candidates`): for a torus of X x Y x Z nodes and a workload's job sizes (in
nodes), every combination of

- a size set: `pow2` (every power of two up to the torus, and the torus), `pow4` (1, 4,
  16, ... and the torus), `quantiles` (the sizes at the 10th, 20th, ..., 90th, 95th and
  99th percentiles of the jobs, each rounded up to the least volume some box has, with 1
  and the torus) or `work` (the same percentiles of the work, size x run time, so that
  sizes holding much of the machine's work get a placement);
- per size the most cubic box that fits the torus (least longest side, then least sum of
  sides, then the longer sides along x, then y), anchored at 0, 0, 0;
- a spacing: `full` (the box: anchors tile the torus without overlap) or `half` (half the
  box per side, at least 1: twice as many anchors per axis, overlapping).

`pareto` reads the store of a sweep of such menus at one offered load and reports each
menu's utilization and mean wait, the Pareto set (no other menu has at least the
utilization and at most the wait, one of them strictly) and the recommended menu: the
Pareto menu of highest utilization (ties: the lower wait), as a ready-to-use topology.yaml
fragment with the measured figures beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from simcore.base.atomic import atomic_write_bytes
from simcore.base.errors import SimcoreError, SpecError
from simcore.base.regular import read_text
from simcore.machines.slurm.menu import load_menu, write_fragment

if TYPE_CHECKING:
    from simcore.machines.spec import MachineSpec
    from simcore.workload.spec import WorkloadSpec

SIZE_SETS = ("pow2", "pow4", "quantiles", "work")
SPACINGS = ("full", "half")
PERCENTILES = (10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99)


def box_shape(size: int, dims: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The most cubic box of `size` nodes fitting `dims` (module docstring), or None."""
    fits = [(a, b, size // (a * b)) for a in range(1, dims[0] + 1)
            for b in range(1, dims[1] + 1)
            if size % (a * b) == 0 and size // (a * b) <= dims[2]]
    if not fits:
        return None
    return min(fits, key=lambda s: (max(s), sum(s), -s[0], -s[1]))


def box_volume_at_least(size: int, dims: tuple[int, int, int]) -> int:
    """The least volume >= size that some box fitting `dims` has."""
    v = size
    while box_shape(v, dims) is None:
        v += 1
    return v


def size_set(name: str, size: np.ndarray, run_s: np.ndarray,
             dims: tuple[int, int, int]) -> list[int]:
    """The placement sizes of size set `name` (module docstring), ascending."""
    units = dims[0] * dims[1] * dims[2]
    if name in ("pow2", "pow4"):
        step = 2 if name == "pow2" else 4
        sizes = {step ** k for k in range(units.bit_length()) if step ** k <= units}
    elif name in ("quantiles", "work"):
        weights = size * run_s if name == "work" else np.ones_like(size, dtype=float)
        order = np.argsort(size, kind="stable")
        cumulative = np.cumsum(weights[order]) / weights.sum()
        picks = [size[order][min(int(np.searchsorted(cumulative, p / 100)), size.size - 1)]
                 for p in PERCENTILES]
        sizes = {1, *(box_volume_at_least(int(v), dims) for v in picks)}
    else:
        raise SpecError(f"size set {name!r}; expected one of {', '.join(SIZE_SETS)}")
    return sorted(sizes | {units})


def placements(sizes: list[int], dims: tuple[int, int, int],
               spacing: str) -> list[dict[str, dict[str, int]]]:
    """The menu's placements: the most cubic box per size, spaced by `spacing`."""
    out = []
    for size in sizes:
        shape = box_shape(size, dims)
        assert shape is not None, size
        entry = {"dims": dict(zip("xyz", shape, strict=True))}
        if spacing == "half":
            entry["anchor_spacing"] = {a: max(1, s // 2) for a, s in zip("xyz", shape,
                                                                          strict=True)}
        out.append(entry)
    return out


@dataclass(frozen=True)
class Candidate:
    name: str  # <prefix>-<size set>-<spacing>
    sizes: list[int]
    spacing: str


def candidates(prefix: str, size: np.ndarray, run_s: np.ndarray,
               dims: tuple[int, int, int]) -> list[Candidate]:
    """Every candidate menu for jobs of `size` nodes and `run_s` seconds on `dims`."""
    return [Candidate(f"{prefix}-{s}-{spacing}", size_set(s, size, run_s, dims), spacing)
            for s in SIZE_SETS for spacing in SPACINGS]


def menu_text(candidate: Candidate, dims: tuple[int, int, int], note: str) -> str:
    """A candidate as a topology.yaml fragment."""
    units = dims[0] * dims[1] * dims[2]
    width = len(str(units - 1))
    nodes = f"n[{0:0{width}d}-{units - 1:0{width}d}]"
    return write_fragment(candidate.name, "t0", dims,
                          placements(candidate.sizes, dims, candidate.spacing), nodes,
                          [f"{candidate.name}: sizes {candidate.sizes}, spacing "
                           f"{candidate.spacing}", note])


def write_candidates(prefix: str, size: np.ndarray, run_s: np.ndarray,
                     dims: tuple[int, int, int], out_dir: str | os.PathLike[str],
                     note: str) -> list[Path]:
    """Write every candidate menu to `out_dir`/<name>.yaml; returns the paths."""
    paths = []
    for candidate in candidates(prefix, size, run_s, dims):
        path = Path(out_dir) / f"{candidate.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, menu_text(candidate, dims, note).encode())
        paths.append(path)
    return paths


def write_workload_candidates(workload: str, jobs: int | None, seed: int, spec: WorkloadSpec,
                              machine: MachineSpec, prefix: str,
                              out_dir: str | os.PathLike[str], command: str) -> list[Path]:
    """Write every candidate menu (`write_candidates`) for the jobs of `workload` (as
    `--workload` names it, sampled with `jobs` and `seed` if a model) prepared by `spec`
    for `machine`; each menu notes the jobs and the `command` that made it."""
    from simcore.workload.sources import load_workload
    from simcore.workload.transforms import prepare

    prepared = prepare(load_workload(workload, jobs, seed), spec, machine, seed)
    note = f"for {len(prepared)} jobs of {workload}: {command}"
    return write_candidates(prefix, prepared.size, prepared.run_s, machine.dims3, out_dir,
                            note)


def pareto(summaries: pl.DataFrame, experiment: str) -> pl.DataFrame:
    """Per machine of `experiment` (menus): mean utilization and mean wait over its runs,
    whether it is on the Pareto front, and which one is recommended (module docstring)."""
    rows = summaries.filter(pl.col("experiment") == experiment)
    if rows.is_empty():
        raise SimcoreError(f"no runs of experiment {experiment!r} in the store")
    loads = rows["offered_load"].unique().to_list()
    if len(loads) != 1 or len(rows["workload"].unique()) != 1:
        raise SimcoreError(f"experiment {experiment}: expected one workload at one offered "
                           f"load, found workloads {rows['workload'].unique().to_list()} and "
                           f"loads {loads}")
    from simcore.machines.registry import KINDS

    menus = {name for name, kind in KINDS.items() if kind.grammar == load_menu.__module__}
    others = sorted(spec for spec in rows["machine_spec"].unique().to_list()
                    if spec.partition(":")[0] not in menus)
    if others:
        raise SimcoreError(f"experiment {experiment}: machines {others} are no placement "
                           "menus; expected a menu-search experiment, whose machines are")
    table = (rows.group_by("machine", "machine_spec")
             .agg(pl.col("utilization").mean(), pl.col("mean_wait_s").mean(),
                  pl.col("workload").first(), pl.col("offered_load").first(),
                  pl.len().alias("runs"))
             .sort("utilization", "mean_wait_s", "machine", descending=[True, False, False]))
    util, wait = table["utilization"].to_numpy(), table["mean_wait_s"].to_numpy()
    front = [not any((util[k] >= util[i] and wait[k] <= wait[i])
                     and (util[k] > util[i] or wait[k] < wait[i]) for k in range(len(util)))
             for i in range(len(util))]
    table = table.with_columns(pl.Series("pareto", front))
    first = table.filter(pl.col("pareto"))["machine"][0]
    return table.with_columns((pl.col("machine") == first).alias("recommended"))


def write_pareto(store: str | os.PathLike[str], experiment: str,
                 out_dir: str | os.PathLike[str]) -> list[Path]:
    """`pareto.md` (every menu with its figures) and the recommended menu as
    `<experiment>.topology.yaml` under `out_dir`; returns the paths."""
    from simcore.machines.spec import MachineSpec
    from simcore.sweep.store import read_summaries

    table = pareto(read_summaries(store), experiment)
    best = table.filter(pl.col("recommended")).row(0, named=True)
    lines = [f"# Menu search: {experiment}", "",
             f"Workload {best['workload']} at {_load(best['offered_load'])}; "
             "utilization and mean wait are means over the runs of each menu. Pareto: no "
             "other menu has at least the utilization and at most the wait.", "",
             "| menu | sizes | spacing | utilization | mean wait (s) | Pareto | recommended |",
             "|---|---|---|--:|--:|---|---|"]
    for row in table.iter_rows(named=True):
        menu = load_menu(MachineSpec.parse(row["machine_spec"]).argument)
        torus = menu.toruses[0]
        sizes = sorted({p.size for p in torus.placements})
        spacing = "full" if all(p.spacing == p.dims for p in torus.placements) else "half"
        lines.append(f"| {row['machine']} | {sizes} | {spacing} | {row['utilization']:.3f} | "
                     f"{row['mean_wait_s']:.0f} | {'yes' if row['pareto'] else ''} | "
                     f"{'yes' if row['recommended'] else ''} |")
    out = Path(out_dir)
    report = out / "pareto.md"
    atomic_write_bytes(report, ("\n".join(lines) + "\n").encode())
    source = load_menu(MachineSpec.parse(best["machine_spec"]).argument).path
    head = [f"Recommended by menu search {experiment}: {best['machine']}",
            f"measured on {best['workload']} at {_load(best['offered_load'])}: "
            f"utilization {best['utilization']:.3f}, mean wait {best['mean_wait_s']:.0f} s",
            f"(the Pareto menu of highest utilization among {table.height} candidates)", ""]
    fragment = out / f"{experiment}.topology.yaml"
    atomic_write_bytes(fragment, ("".join(f"# {line}\n" if line else "#\n" for line in head)
                                  + read_text(source)).encode())
    return [report, fragment]


def _load(offered: float | None) -> str:
    """The load of a menu search's runs, in words."""
    return "its own load" if offered is None else f"offered load {offered:g}"
