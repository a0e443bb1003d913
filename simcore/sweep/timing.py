"""What a sweep cost, from the measurements its jobs left: `simcore plan --timing`.

Snakemake writes each job's benchmark (`benchmarks/<rule>/<job>.tsv`: wall seconds, peak
memory); a shard also writes how many runs it simulated, the seconds its batches took and
where they went (`benchmarks/simulate_shard/<shard>.json`, PHASES). Per experiment this
gives the shards' wall time, the core-seconds they held, the seconds of each phase, and
the share of those core-seconds spent outside every phase (starting processes and
workers, checking cache entries, assembling result files). Timings describe one
execution on one machine; they never enter the result store, whose contents stay
deterministic.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcore.base import patterns
from simcore.base.regular import open_regular, read_text
from simcore.base.texttable import text_table
from simcore.sweep.experiments import Shard

SHARD_RULE = "simulate_shard"
#: Where a simulated run's seconds go, in order: reading its workload file (once per
#: process), `prepare`, loading the engine (on the first call of `simcore.simulate.simulate`
#: in a process), the rest of that call, the fidelity metrics after it, writing its cache
#: entry.
PHASES = ("read_s", "prepare_s", "engine_s", "in_simulate_s", "fidelity_s", "store_s")
#: A shard job's own start (interpreter, kernels, Dask workers), in seconds, and the
#: margin a request keeps over a measured run.
STARTUP_S = 60.0
MARGIN = 2.0
#: Requests of a shard that was never measured: minutes, and MB per process.
UNMEASURED_MINUTES = 60
UNMEASURED_MB_PER_PROCESS = 750


@dataclass(frozen=True)
class Benchmark:
    """A job's wall seconds and peak memory (MB, None where not measured)."""

    s: float
    max_rss: float | None


def read_benchmark(path: Path) -> Benchmark | None:
    """What one Snakemake benchmark file measured, or None where the file is missing or
    not a benchmark."""
    try:
        with open_regular(path, "r", encoding="utf-8", newline="") as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        return Benchmark(float(row["s"]), _number(row.get("max_rss")))
    except (OSError, StopIteration, KeyError, ValueError):
        return None


def measured(root: Path,
             shard: Shard) -> tuple[Benchmark, dict[str, float]] | None:
    """The shard's last measurements, Snakemake's benchmark and its own timing file
    (`simulated`, `workers`, `batches_s` and each of PHASES), or None where either is
    missing or holds anything but numbers of the right kind (a file damaged by hand is no
    measurement). A file written before phases were measured gives its `simulation_s`
    (the seconds of its batches) as `batches_s`, and no phases."""
    job = patterns.SHARD_JOB.format(dataset=shard.dataset, **shard.names)
    bench = read_benchmark(root / patterns.BENCHMARK.format(rule=SHARD_RULE, job=job))
    try:
        own = json.loads(read_text(root / patterns.SHARD_TIMING.format(
            dataset=shard.dataset, **shard.names)))
        seconds = ({name: float(own[name]) for name in ("batches_s", *PHASES)}
                   if "batches_s" in own else {"batches_s": float(own["simulation_s"])})
        own = {"simulated": int(own["simulated"]),
               "workers": max(1, int(own.get("workers", 1))), **seconds}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if (bench is None or own["simulated"] < 0
            or not all(math.isfinite(v) and v >= 0 for v in seconds.values())):
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
    per_run_s = own["batches_s"] / own["simulated"]
    seconds = STARTUP_S + per_run_s * len(shard.runs) / threads
    per_process_mb = (bench.max_rss or 0.0) / (own["workers"] + 1)
    return {"runtime": max(2, math.ceil(MARGIN * seconds / 60)) * attempt,
            "mem_mb": max(1000, math.ceil(MARGIN * per_process_mb * processes))}


def timing_report(shards: Sequence[Shard], root: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Per experiment: shards, how many were measured, runs simulated, the shards' wall
    seconds and the core-seconds they held (wall times workers), the seconds of each of
    PHASES summed over runs (None where a measured shard's file has no phases), the share
    of the core-seconds outside every phase (`other_share`) and the core-seconds per
    second inside `simulate` (`per_simulate`); then every other rule's job count and wall
    seconds. `root` holds `benchmarks/`."""
    root = Path(root)
    experiments: dict[str, dict[str, Any]] = {}
    for shard in shards:
        row = experiments.setdefault(shard.experiment, {
            "experiment": shard.experiment, "shards": 0, "measured": 0, "simulated": 0,
            "wall_s": 0.0, "core_s": 0.0, **dict.fromkeys(PHASES, 0.0)})
        row["shards"] += 1
        found = measured(root, shard)
        if found is None:
            continue
        bench, own = found
        row["measured"] += 1
        row["simulated"] += own["simulated"]
        row["wall_s"] += bench.s
        row["core_s"] += bench.s * own["workers"]
        for name in PHASES:
            row[name] = (None if row[name] is None or name not in own
                         else row[name] + own[name])
    for row in experiments.values():
        known = row["core_s"] > 0 and row[PHASES[0]] is not None
        row["other_share"] = (max(0.0, 1 - sum(row[name] for name in PHASES) / row["core_s"])
                              if known else None)
        row["per_simulate"] = (row["core_s"] / row["in_simulate_s"]
                               if known and row["in_simulate_s"] > 0 else None)
    rules = {}
    for folder in sorted((root / "benchmarks").glob("*/")):
        if folder.name == SHARD_RULE:
            continue
        figures = [b for b in map(read_benchmark, folder.rglob("*.tsv")) if b is not None]
        if figures:
            rules[folder.name] = {"jobs": len(figures),
                                  "wall_s": sum(b.s for b in figures)}
    return {"experiments": list(experiments.values()), "rules": rules}


def format_report(report: dict[str, Any]) -> str:
    """The report as a table a person reads."""
    rows: list[tuple[object, ...]] = []
    unmeasured: set[int] = set()
    for row in report["experiments"]:
        if row["measured"] == 0:
            unmeasured.add(len(rows))
            rows.append((row["experiment"], row["shards"], 0, *"-" * (len(PHASES) + 5)))
            continue
        share, ratio = row["other_share"], row["per_simulate"]
        rows.append((row["experiment"], row["shards"], row["measured"], row["simulated"],
                     f"{row['wall_s']:.1f}", f"{row['core_s']:.1f}",
                     *("-" if row[name] is None else f"{row[name]:.1f}" for name in PHASES),
                     "-" if share is None else f"{share:.0%}",
                     "-" if ratio is None else f"{ratio:.1f}x"))
    header, *body = text_table(("experiment", "shards", "measured", "simulated", "wall s",
                                "core s", "read s", "prepare s", "engine s", "simulate s",
                                "fidelity s", "store s", "other", "core/sim"), rows)
    lines = [header] + [line + ("  not measured yet" if i in unmeasured else "")
                        for i, line in enumerate(body)]
    if report["rules"]:
        lines.append("other rules: " + "; ".join(
            f"{name} {v['jobs']} job(s) {v['wall_s']:.1f} s"
            for name, v in report["rules"].items()))
    else:
        lines.append("other rules: not measured yet")
    lines += ["wall s: the shards' jobs end to end; core s: wall s times their workers",
              "read s to store s, summed over runs: reading workloads, prepare, loading the "
              "engine, the rest of simulate, fidelity metrics, writing cache entries",
              "other: the share of core s in none of these (starting workers, checking the "
              "cache, writing the shard's files); core/sim: core s / simulate s"]
    return "\n".join(lines)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "NA", "-") else None
    except ValueError:
        return None
