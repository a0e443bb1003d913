"""`simcore bench`: measured speed of the simulator and of the partition searches.

Simulation time is the kernel's wall time alone (the best of `repeat` runs), apart from
start-up (imports and numba compilation, reported once as `warmup_s`) and trace parsing
(`parse_s`). Nothing here is asserted: the numbers are for notes and regressions.

`bench_blocks` times the rack rules (Slurm's block, tree and ring, Kueue's TAS) on 64 racks:
each placement decision replayed on a recorded run's occupancies, with its percentiles.
`bench_mesh` times Chu's 2D-mesh allocators: one 50,000-job replication of BL with
Multiple Queues on 32 x 32 (Chu's setting, load 0.7), and each allocator's time per
allocation, replayed on the occupancies of a recorded run (`simcore.tools.probe`): on
meshes of several sides (Chu's decreasing sizes, load 0.6, Scan All), and on 32 x 32 by
the number of running jobs N_A (small jobs, sides 1..8, so that many run at once). They
show the complexity tiers: O(N) strategies grow with the mesh, busy-list ones with N_A.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simcore.base.errors import SimcoreError, SpecError

SPAN_JOBS = 10_000
CASES = [("torus:4x4x8", s) for s in ("fcfs", "backfill", "migration", "bm")] + [
    ("flat:128", s) for s in ("fcfs", "backfill")
]
LFP_DIMS = [(4, 4, 8), (8, 8, 8), (16, 16, 16)]
#: Node-level BG/L (and Blue Gene/Q's 5D shape): Lublin-Feitelson jobs of the machine's
#: size, placed by the maximal-box search; FCFS decisions are timed one by one.
NODE_JOBS = 10_000
NODE_CASES = [("torus:64x32x32", "fcfs"), ("torus:64x32x32", "backfill"),
              ("torus:16x16x16x12x2", "fcfs")]
#: Leung et al.'s setting: Sandia Ross (5,000 jobs, > 320 processors dropped) on 8x8x5,
#: Cplant's queue order, each curve allocator along the Hilbert curve; locality measured.
CPLANT_JOBS = 5_000
CPLANT_CASES = [("mesh:8x8x5", a, "hilbert", "cplant")
                for a in ("free-list", "first-fit", "best-fit", "sum-of-squares")]


def bench_cplant(trace: Path, repeat: int = 3) -> list[dict[str, object]]:
    """Best-of-`repeat` kernel and locality-measuring times of CPLANT_CASES on Sandia
    Ross (`trace`), after a first run that loads or compiles the kernels."""
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf
    from simcore.machines.spec import MachineSpec
    from simcore.simulate import simulate
    from simcore.workload.transforms import WorkloadSpec, prepare

    table = clean(read_swf(trace))
    rows = []
    for kind, allocator, ordering, scheduler in CPLANT_CASES:
        machine = MachineSpec.parse(kind, allocator, ordering=ordering)
        jobs = prepare(table, WorkloadSpec(first_jobs=CPLANT_JOBS, machine_fit="drop"), machine)
        simulate(jobs, machine, scheduler)
        timings = [simulate(jobs, machine, scheduler).timing for _ in range(repeat)]
        best = min(timings, key=lambda t: t["simulate_s"] + t["metrics_s"])
        rows.append({"case": f"ross-5k {machine} {scheduler}", "jobs": len(jobs),
                     "simulate_s": best["simulate_s"], "metrics_s": best["metrics_s"],
                     "jobs_per_s": len(jobs) / (best["simulate_s"] + best["metrics_s"])})
    return rows


def bench_node_level(jobs: int = NODE_JOBS) -> list[dict[str, object]]:
    """Simulation time of NODE_CASES (one run each, after a short one that loads or
    compiles the kernels) and, for FCFS, the wall time of every decision (one event time
    per kernel call, so each includes a call from Python: an upper bound)."""
    from simcore.machines.spec import MachineSpec
    from simcore.simulate import simulate
    from simcore.workload.sources import load_workload
    from simcore.workload.transforms import WorkloadSpec, prepare

    rows = []
    for machine, scheduler in NODE_CASES:
        spec = MachineSpec.parse(machine)
        table = load_workload(f"lublin:{spec.units}", jobs=jobs, seed=1)
        work = prepare(table, WorkloadSpec(), spec)
        simulate(prepare(table, WorkloadSpec(first_jobs=20), spec), spec, scheduler)
        row: dict[str, object] = {"case": f"lublin-{jobs // 1000}k {machine} {scheduler}",
                                  "jobs": len(work)}
        if scheduler == "fcfs":
            stamps: list[float] = []
            simulate(work, spec, scheduler, progress_step=1,
                     progress=lambda *_, tick=stamps.append: tick(time.perf_counter()))
            per = np.diff(np.array(stamps)) * 1e3
            row.update(decision_ms_median=float(np.median(per)),
                       decision_ms_p99=float(np.percentile(per, 99)),
                       decision_ms_max=float(per.max()))
        result = simulate(work, spec, scheduler)
        row.update(simulate_s=result.timing["simulate_s"],
                   jobs_per_s=len(work) / result.timing["simulate_s"],
                   decisions=result.summary["decisions"])
        rows.append(row)
    return rows


#: The rack rules on 64 NVL72 racks (allocator, options): SDSC Blue Horizon's jobs
#: (processors as nodes, `fit_to_machine`) at offered load 0.9, under FCFS so that every
#: placement is the rule's own (no reservation to avoid), replayed placement by placement.
BLOCK_JOBS = 10_000
BLOCK_MACHINE = "blocks:64x18"
_BLOCK_OPTIONS: tuple[dict[str, object], ...] = (
    {}, {"segment": "16"}, {"segment": "recommended"},
    {"segment": "4", "segment_placement": "spread"},
    {"segment": "16", "segment_placement": "consolidate"}, {"block_sizes": "16,64,256"})
BLOCK_CASES: tuple[tuple[str, dict[str, object]], ...] = (
    *(("slurm-block", options) for options in _BLOCK_OPTIONS),
    ("slurm-tree", {}), ("slurm-tree", {"tree_release": "22.05"}),
    ("slurm-tree", {"rack_groups": "2,8,32"}), ("slurm-ring", {}),
    ("slurm-ring", {"ring_racks": 8, "ring_segment": 16}),
    ("kueue-tas", {"tas_request": "required", "tas_level": "fit"}), ("kueue-tas", {}),
    ("kueue-tas", {"slice_size": 4}))


def bench_blocks(trace: Path, jobs: int = BLOCK_JOBS, calls: int = 5
                 ) -> list[dict[str, object]]:
    """Per case of BLOCK_CASES: the simulation's time and the time of each placement
    decision replayed on the recorded run's occupancies (`simcore.tools.probe.replay`),
    its percentiles."""
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf
    from simcore.machines.spec import MachineSpec
    from simcore.simulate import simulate
    from simcore.tools.probe import replay
    from simcore.workload.transforms import WorkloadSpec, prepare

    table = clean(read_swf(trace))
    rows = []
    for allocator, options in BLOCK_CASES:
        machine = MachineSpec.parse(BLOCK_MACHINE, allocator=allocator, options=options)
        work = prepare(table, WorkloadSpec(first_jobs=jobs, fit_to_machine=True,
                                           offered_load=0.9), machine, seed=1)
        tiny = prepare(table, WorkloadSpec(first_jobs=20, fit_to_machine=True), machine)
        replay(tiny, machine, simulate(tiny, machine, "fcfs"))  # compiled outside the timing
        result = simulate(work, machine, "fcfs")
        kept = work.select(~machine.implementation.refused(machine, work))
        timed = replay(kept, machine, result, repeat=calls).seconds * 1e3
        rows.append({"case": str(machine), "jobs": len(kept),
                     "simulate_s": result.timing["simulate_s"],
                     "placements": int(timed.size),
                     **{f"placement_ms_p{q}": float(np.percentile(timed, q))
                        for q in (50, 90, 99)},
                     "placement_ms_max": float(timed.max())})
    return rows


def catalogued_trace(catalogue: str | Path, name: str) -> Path:
    """Trace `name` of the catalogue at `catalogue`, acquired into resources/traces/
    (from the mirror directories of $TORUS_SWEEP_TRACE_DIR, else downloaded)."""
    from simcore.workload.traces import acquire, catalogued, mirror_dirs

    entry = catalogued(catalogue, name)
    return acquire(entry, Path("resources/traces") / entry.filename, mirror_dirs())


def run_bench(trace: Path, repeat: int = 3, occupancies: int = 5,
              ross: Path | None = None, node_level: bool = True) -> dict[str, object]:
    """Benchmark the simulator on SDSC-SP2 (`trace`), the curve allocators on Sandia Ross
    (`ross`, when given), node-level machines (`node_level`) and the LFP methods."""
    from simcore.jobs.cleaning import clean
    from simcore.jobs.swf import read_swf
    from simcore.machines.spec import MachineSpec
    from simcore.simulate import simulate
    from simcore.workload.transforms import WorkloadSpec, prepare

    began = time.perf_counter()
    table = clean(read_swf(trace))
    parse_s = time.perf_counter() - began

    began = time.perf_counter()
    tiny = prepare(table, WorkloadSpec(first_jobs=50), MachineSpec.parse("torus:4x4x8"))
    for machine, scheduler in CASES:
        simulate(tiny, machine, scheduler)
    warmup_s = time.perf_counter() - began

    results = []
    for machine, scheduler in CASES:
        jobs = prepare(table, WorkloadSpec(first_jobs=SPAN_JOBS), MachineSpec.parse(machine))
        best = min(simulate(jobs, machine, scheduler).timing["simulate_s"]
                   for _ in range(repeat))
        results.append({"case": f"sdsc-10k {machine} {scheduler}", "jobs": len(jobs),
                        "simulate_s": best, "jobs_per_s": len(jobs) / best})
    whole = prepare(table, WorkloadSpec(), MachineSpec.parse("flat:128"))
    best = min(simulate(whole, "flat:128", "backfill").timing["simulate_s"]
               for _ in range(repeat))
    results.append({"case": "sdsc-all flat:128 backfill (EASY)", "jobs": len(whole),
                    "simulate_s": best, "jobs_per_s": len(whole) / best})
    if ross is not None:
        results += bench_cplant(ross, repeat)
    if node_level:
        results += bench_node_level()
    return {
        "trace": str(trace),
        "parse_s": parse_s,
        "warmup_s": warmup_s,
        "simulations": results,
        "largest_free_partition": bench_partitions(occupancies),
    }


def bench_partitions(occupancies: int, fill: float = 0.5, seed: int = 1
                     ) -> list[dict[str, object]]:
    """Mean seconds per call of each method on random torus occupancies."""
    from simcore.machines.boxes import partitions
    from simcore.machines.boxes.allocator import box_table

    methods: dict[str, Callable[[np.ndarray, bool], int]] = {
        "bruteforce": partitions.bruteforce,
        "pop": partitions.pop,
        "boxscan": partitions.boxscan,
        "bitrows": partitions.bitrows,
    }
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for dims in LFP_DIMS:
        grids = [rng.random(dims) < fill for _ in range(occupancies)]
        answers = {}
        for name, method in methods.items():
            row: dict[str, object] = {"dims": "x".join(map(str, dims)), "method": name}
            try:
                if name == "boxscan":
                    began = time.perf_counter()
                    box_table(dims, True)
                    row["table_build_s"] = time.perf_counter() - began
                method(grids[0], True)  # compile / build outside the timing
            except SpecError as exc:
                rows.append({**row, "s_per_call": None, "note": str(exc)})
                continue
            began = time.perf_counter()
            answers[name] = [method(g, True) for g in grids]
            row["s_per_call"] = (time.perf_counter() - began) / len(grids)
            rows.append(row)
        if len({tuple(a) for a in answers.values()}) != 1:
            raise SimcoreError(f"largest free partition methods disagree on {dims}: {answers}")
    return rows


MESH_SIDES = (16, 32, 64)
MESH_JOBS = 2000
#: N_A buckets of the per-allocation times: [lo, hi) running jobs.
RUNNING_BUCKETS = ((0, 4), (4, 8), (8, 16), (16, 32), (32, 64), (64, 1 << 30))


def bench_mesh(repeat: int = 3, sides: tuple[int, ...] = MESH_SIDES, jobs: int = MESH_JOBS,
               calls: int = 10) -> dict[str, object]:
    """The BL + MQ replication and the time per allocation of every 2D-mesh allocator."""
    from simcore.jobs.jobs import Jobs
    from simcore.machines.registry import ALLOCATORS
    from simcore.machines.spec import MachineSpec
    from simcore.simulate import simulate
    from simcore.tools.probe import replay
    from simcore.workload.synthetic import SyntheticSpec, synthesize
    from simcore.workload.transforms import WorkloadSpec, prepare

    def workload(distribution: str, side: int, n: int, load: float, machine: MachineSpec
                 ) -> Jobs:
        spec = SyntheticSpec.create("chu", {"distribution": distribution, "jobs": n,
                                            "side": side})
        return prepare(synthesize(spec, 1), WorkloadSpec(offered_load=load,
                                                         warmup_jobs=min(1000, n // 10)),
                       machine)

    machine = MachineSpec.parse("mesh:32x32", "bl")
    big = workload("uniform", 32, 50_000, 0.7, machine)
    simulate(big, machine, "mq")  # compiled outside the timing
    best = min(simulate(big, machine, "mq").timing["simulate_s"] for _ in range(repeat))
    rows = []
    for name, row in ALLOCATORS.items():
        if "submeshes" not in row.capabilities:
            continue
        for side in sides:
            machine = MachineSpec.parse(f"mesh:{side}x{side}", name)
            sample = workload("decreasing", side, jobs, 0.6, machine)
            result = simulate(sample, machine, "scan-all")
            timed = replay(sample, machine, result, repeat=calls)
            entry = {"allocator": name, "side": side, "allocations": int(timed.seconds.size),
                     "mean_running": float(timed.running.mean()),
                     "us_per_allocation": float(timed.seconds.mean() * 1e6)}
            if side == 32:  # small jobs (sides 1..8): many running at once
                small = workload("uniform", 8, jobs, 0.6, machine)
                timed = replay(small, machine, simulate(small, machine, "scan-all"),
                               repeat=calls)
                entry["us_by_running"] = {
                    f"{lo}-{hi - 1}" if hi < 1 << 30 else f"{lo}+":
                    float(timed.seconds[(timed.running >= lo) & (timed.running < hi)].mean()
                          * 1e6)
                    for lo, hi in RUNNING_BUCKETS
                    if ((timed.running >= lo) & (timed.running < hi)).sum() >= 20}
            rows.append(entry)
    return {"bl_mq_50k_s": best, "bl_mq_50k_jobs": len(big), "allocators": rows}
