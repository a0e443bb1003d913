"""What a sweep cost, from the measurements its jobs left: `simcore plan --timing`.

Snakemake writes each job's benchmark (`benchmarks/<rule>/<job>.tsv`: wall seconds, peak
memory); a shard also writes how many runs it simulated and the seconds spent inside those
simulations (`benchmarks/simulate_shard/<shard>.json`). Per experiment this gives the
shards' wall time, their simulation seconds, and the share of the cores they held that went
to anything else (starting processes and workers, loading kernels, reading workloads,
writing results). Timings describe one execution on one machine; they never enter the
result store, whose contents stay deterministic.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simcore.base import patterns
from simcore.base.regular import open_regular, read_text
from simcore.base.texttable import text_table
from simcore.sweep.experiments import Shard

SHARD_RULE = "simulate_shard"
#: A shard job's own start (interpreter, kernels, Dask workers), in seconds, and the
#: margin a request keeps over a measured run.
STARTUP_S = 60.0
MARGIN = 2.0
#: Requests of a shard that was never measured: minutes, and MB per process.
UNMEASURED_MINUTES = 60
UNMEASURED_MB_PER_PROCESS = 750


def read_benchmark(path: Path) -> dict[str, float] | None:
    """Wall seconds (`s`) and peak memory (`max_rss`, MB) of one Snakemake benchmark file,
    or None where the file is missing or not a benchmark."""
    try:
        with open_regular(path, "r", encoding="utf-8", newline="") as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        return {"s": float(row["s"]), "max_rss": _number(row.get("max_rss"))}
    except (OSError, StopIteration, KeyError, ValueError):
        return None


def measured(root: Path, shard: Shard) -> tuple[dict[str, float], dict[str, float]] | None:
    """The shard's last measurements, Snakemake's benchmark and its own timing file
    (`simulated`, `simulation_s`, `workers`), or None where either is missing or holds
    anything but numbers of the right kind (a file damaged by hand is no measurement)."""
    job = patterns.SHARD_JOB.format(dataset=shard.dataset, **shard.names)
    bench = read_benchmark(root / patterns.BENCHMARK.format(rule=SHARD_RULE, job=job))
    try:
        own = json.loads(read_text(root / patterns.SHARD_TIMING.format(
            dataset=shard.dataset, **shard.names)))
        own = {"simulated": int(own["simulated"]), "simulation_s": float(own["simulation_s"]),
               "workers": max(1, int(own.get("workers", 1)))}
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if bench is None or own["simulated"] < 0 or not math.isfinite(own["simulation_s"]):
        return None
    return bench, own


def shard_request(root: str | os.PathLike[str], shard: Shard, threads: int,
                  attempt: int = 1) -> dict[str, int]:
    """Slurm's `runtime` (minutes) and `mem_mb` for a shard's job with `threads` workers,
    from what its last run measured (`root` holds `benchmarks/`): the seconds per
    simulated run times all of its runs, spread over the workers, plus the start, with a
    margin of MARGIN; memory per process as measured, for `threads` workers and the shard's
    own process. A retry (`attempt`) asks for that much more time. Never measured: an
    hour and UNMEASURED_MB_PER_PROCESS per process."""
    found = measured(Path(root), shard)
    processes = threads + 1
    if found is None or found[1]["simulated"] == 0:
        return {"runtime": UNMEASURED_MINUTES * attempt,
                "mem_mb": 250 + UNMEASURED_MB_PER_PROCESS * processes}
    bench, own = found
    per_run_s = own["simulation_s"] / own["simulated"]
    seconds = STARTUP_S + per_run_s * len(shard.runs) / threads
    per_process_mb = (bench["max_rss"] or 0.0) / (own["workers"] + 1)
    return {"runtime": max(2, math.ceil(MARGIN * seconds / 60)) * attempt,
            "mem_mb": max(1000, math.ceil(MARGIN * per_process_mb * processes))}


def timing_report(shards: Sequence[Shard], root: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Per experiment: shards, how many were measured, runs simulated, the shards' wall
    seconds, simulation seconds and the share of held core-seconds outside simulations;
    then every other rule's job count and wall seconds. `root` holds `benchmarks/`."""
    root = Path(root)
    experiments: dict[str, dict[str, Any]] = {}
    for shard in shards:
        row = experiments.setdefault(shard.experiment, {
            "experiment": shard.experiment, "shards": 0, "measured": 0, "simulated": 0,
            "wall_s": 0.0, "simulation_s": 0.0, "core_s": 0.0})
        row["shards"] += 1
        found = measured(root, shard)
        if found is None:
            continue
        bench, own = found
        row["measured"] += 1
        row["simulated"] += own["simulated"]
        row["wall_s"] += bench["s"]
        row["simulation_s"] += own["simulation_s"]
        row["core_s"] += bench["s"] * own["workers"]
    for row in experiments.values():
        core_s = row.pop("core_s")
        row["outside_share"] = (max(0.0, 1 - row["simulation_s"] / core_s) if core_s > 0
                                else None)
    rules = {}
    for folder in sorted((root / "benchmarks").glob("*/")):
        if folder.name == SHARD_RULE:
            continue
        figures = [b for b in map(read_benchmark, folder.rglob("*.tsv")) if b is not None]
        if figures:
            rules[folder.name] = {"jobs": len(figures), "wall_s": sum(b["s"] for b in figures)}
    return {"experiments": list(experiments.values()), "rules": rules}


def format_report(report: dict[str, Any]) -> str:
    """The report as a table a person reads."""
    rows, unmeasured = [], set()
    for row in report["experiments"]:
        if row["measured"] == 0:
            unmeasured.add(len(rows))
            rows.append((row["experiment"], row["shards"], 0, "-", "-", "-", "-"))
            continue
        share = row["outside_share"]
        rows.append((row["experiment"], row["shards"], row["measured"], row["simulated"],
                     f"{row['wall_s']:.1f}", f"{row['simulation_s']:.1f}",
                     "-" if share is None else f"{share:.0%}"))
    header, *body = text_table(("experiment", "shards", "measured", "simulated", "wall s",
                                "simulation s", "outside"), rows)
    lines = [header] + [line + ("  not measured yet" if i in unmeasured else "")
                        for i, line in enumerate(body)]
    if report["rules"]:
        lines.append("other rules: " + "; ".join(
            f"{name} {v['jobs']} job(s) {v['wall_s']:.1f} s"
            for name, v in report["rules"].items()))
    else:
        lines.append("other rules: not measured yet")
    lines.append("wall s: the shards' jobs end to end; simulation s: inside simulations, summed "
                 "over workers; outside: the share of the cores the shards held that went to "
                 "anything else")
    return "\n".join(lines)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "NA", "-") else None
    except ValueError:
        return None
