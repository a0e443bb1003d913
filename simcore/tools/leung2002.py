"""The analogues of Leung et al. (2002)'s Figure 1 and Table 1 (docs/leung2002.md).

Figure 1 (simulation): locality against the work multiple for every ordering x curve
allocator, from the store of the `leung2002` experiment (config/papers.yaml):
`figure1_rows` reduces the runs, `simcore.report.plots.locality_vs_work_multiple` draws them.

Table 1 (the paper's measurements on a 128-processor Cplant): the makespan of one job
stream under six strategies. The stream is the `cplant-stream` workload model
(`simcore.workload.cplant_stream`, which says what the paper states and what is chosen
here); experiment `leung2002-table1` of config/papers.yaml runs it at dilation 0 and 1.5,
and `table1` sweeps the dilation.

The machine (`TABLE1_MACHINE`): an 8x8 torus of switches whose four compute rows hold 4
processors per switch, modelled as torus:4x8x4 (x: the processor's slot in its switch,
y: the switch's column, z: its compute row), so that row-major order is Cplant 1.9's
left-to-right, top-to-bottom order with each switch's processors together. "Hilbert" is
the paper's curve over switches: the 2D Hilbert curve of the 8x4 switch grid (8x8 curve,
rows beyond 4 dropped), each switch's four processors in turn, given as an ordering file.
The scheduler is Cplant's queue order (`cplant`). The paper's makespans come from a real
machine whose run times depend on the placement; here they do so only through the
run-time dilation model (allocator option `dilation`), swept by `table1`.
"""

from __future__ import annotations

import itertools
import math
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from simcore.jobs.jobs import Jobs
from simcore.machines.curves.orderings import hilbert, write_ordering_file
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.workload import cplant_stream

TABLE1_MACHINE = cplant_stream.MACHINE
SWITCH_GRID = (8, 4)  # switch columns x compute rows
SLOTS = 4  # processors per switch
#: The paper's Table 1: average makespan (h:mm:ss) and standard deviation per strategy.
PAPER = {
    "Free List (no curve)": ("5:46:31", "0:10:10"),
    "Best Fit (no curve)": ("5:27:58", "0:05:48"),
    "Free List (Hilbert)": ("4:58:52", "0:07:37"),
    "Sum of Squares (Hilbert)": ("4:32:09", "0:03:16"),
    "First Fit (Hilbert)": ("4:30:22", "0:06:09"),
    "Best Fit (Hilbert)": ("4:25:23", "0:03:00"),
}
#: Each strategy as (allocator, ordering: "row-major" or "hilbert" over switches).
STRATEGIES = {
    "Free List (no curve)": ("free-list", "row-major"),
    "Best Fit (no curve)": ("best-fit", "row-major"),
    "Free List (Hilbert)": ("free-list", "hilbert"),
    "Sum of Squares (Hilbert)": ("sum-of-squares", "hilbert"),
    "First Fit (Hilbert)": ("first-fit", "hilbert"),
    "Best Fit (Hilbert)": ("best-fit", "hilbert"),
}


def table1_stream(seed: int, noise: float = 0.05, release_s: float = 60.0,
                  seconds_per_processor: float = 36.0) -> Jobs:
    """The test stream (`simcore.workload.cplant_stream`); `seed` draws the run-time
    variation."""
    columns, _ = cplant_stream.sample({"noise": noise, "release_s": release_s,
                                       "seconds_per_processor": seconds_per_processor}, seed)
    return Jobs.create(columns["job_number"], columns["submit_time"], columns["run_time"],
                       columns["requested_time"], columns["allocated_processors"])


def switch_hilbert(path: str | Path) -> Path:
    """Write the ordering file of Cplant's Hilbert curve over switches for TABLE1_MACHINE
    (module docstring) to `path`; return it."""
    columns, rows = SWITCH_GRID
    switches = hilbert((columns, rows, 1))  # switch index c + columns * r, in curve order
    order = np.array([SLOTS * s + slot for s in switches.tolist() for slot in range(SLOTS)])
    write_ordering_file(path, order, comment=(
        f"{TABLE1_MACHINE}: the Hilbert curve of the {columns}x{rows} switch grid, "
        f"{SLOTS} processors per switch in turn"))
    return Path(path)


def table1(dilations: Sequence[float], seeds: Sequence[int], workdir: str | Path
           ) -> pl.DataFrame:
    """One row per dilation x strategy x seed: the makespan (s) of the stream. The Hilbert
    ordering file is written to `workdir`."""
    from simcore.simulate import simulate

    curve = str(switch_hilbert(Path(workdir) / "cplant-switch-hilbert.txt"))
    rows = []
    for dilation in dilations:
        for strategy, (allocator, ordering) in STRATEGIES.items():
            spec = MachineSpec.parse(TABLE1_MACHINE, allocator,
                                     ordering=curve if ordering == "hilbert" else ordering,
                                     options={"dilation": dilation})
            for seed in seeds:
                result = simulate(table1_stream(seed), spec, PolicySpec("cplant"), seed)
                s = result.summary
                rows.append({"dilation": float(dilation), "strategy": strategy, "seed": seed,
                             "makespan_s": s["makespan_s"], "mean_hops": s["mean_hops_mean"],
                             "span": s["span_ring_mean"]})
    return pl.DataFrame(rows)


def table1_summary(dilations: Sequence[float], seeds: Sequence[int],
                   out: str | Path | None = None) -> pl.DataFrame:
    """Table 1's runs (`table1`) summarized (`summarize_table1`); with `out`, the Hilbert
    ordering file, table1.md, table1.csv and the figure are written there."""
    from simcore.base.atomic import atomic_write_bytes
    from simcore.report.plots import table1_makespans, write_figure

    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(out) if out else Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        runs = table1(dilations, seeds, workdir)
    summary = summarize_table1(runs)
    if out:
        atomic_write_bytes(workdir / "table1.md", markdown_table1(summary).encode())
        atomic_write_bytes(workdir / "table1.csv", summary.write_csv().encode())
        write_figure(lambda: table1_makespans(summary), workdir, "table1")
    return summary


def hms(seconds: float) -> str:
    """h:mm:ss, as the paper writes durations."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def seconds(text: str) -> int:
    """The inverse of `hms`."""
    h, m, s = (int(part) for part in text.split(":"))
    return 3600 * h + 60 * m + s


def summarize_table1(runs: pl.DataFrame) -> pl.DataFrame:
    """Mean and sample standard deviation of the makespan per dilation x strategy, the
    strategies in the paper's order, with the paper's values beside them."""
    order = {name: i for i, name in enumerate(STRATEGIES)}
    out = []
    for (dilation, strategy), part in sorted(
            runs.group_by(["dilation", "strategy"]), key=lambda g: (g[0][0], order[g[0][1]])):
        values = sorted(part["makespan_s"].to_list())
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)) \
            if len(values) > 1 else None
        out.append({"dilation": dilation, "strategy": strategy, "runs": len(values),
                    "makespan_mean_s": mean, "makespan_std_s": std,
                    "mean_hops": math.fsum(part["mean_hops"].to_list()) / len(values),
                    "paper_makespan_s": float(seconds(PAPER[strategy][0])),
                    "paper_std_s": float(seconds(PAPER[strategy][1]))})
    return pl.DataFrame(out)


def paper_order_holds(summary: pl.DataFrame, dilation: float) -> dict[str, bool]:
    """Which of the paper's findings the means at `dilation` reproduce: the curve helps
    (free list and best fit each shorter with Hilbert than without); packing helps (best
    fit shorter than free list without the curve, each packing rule shorter than free list
    with it); the paper's order with its three packing rules on the curve as one group
    (it calls them "largely indistinguishable"); the paper's order of all six means."""
    mean = dict(summary.filter(pl.col("dilation") == dilation)
                .select("strategy", "makespan_mean_s").iter_rows())
    fl_row, bf_row, fl_curve, *packing = (mean[name] for name in STRATEGIES)
    chain = [mean[name] for name in STRATEGIES]
    return {
        "curve helps": fl_curve < fl_row and packing[-1] < bf_row,
        "packing helps": bf_row < fl_row and max(packing) < fl_curve,
        "paper's order (packing on the curve as one group)":
            fl_row > bf_row > fl_curve > max(packing),
        "paper's order of all six": all(a > b for a, b in itertools.pairwise(chain)),
    }


def markdown_table1(summary: pl.DataFrame) -> str:
    """Table 1 analogue as Markdown: per dilation, the six strategies' mean (SD) makespan,
    the paper's beside them, and which of the paper's findings appear."""
    lines = []
    for dilation in sorted(set(summary["dilation"].to_list())):
        rows = summary.filter(pl.col("dilation") == dilation)
        lines += [f"dilation {dilation:g}", "",
                  "| strategy | makespan | SD | mean hops | paper | paper SD |",
                  "|---|--:|--:|--:|--:|--:|"]
        for r in rows.iter_rows(named=True):
            sd = "" if r["makespan_std_s"] is None else hms(r["makespan_std_s"])
            lines.append(f"| {r['strategy']} | {hms(r['makespan_mean_s'])} | {sd} | "
                         f"{r['mean_hops']:.2f} | {PAPER[r['strategy']][0]} | "
                         f"{PAPER[r['strategy']][1]} |")
        holds = paper_order_holds(summary, dilation)
        lines += ["", "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in holds.items()), ""]
    return "\n".join(lines)


_TOKEN = re.compile(r"(\w+)=(\S+)")


def figure1_rows(summaries: pl.DataFrame, experiment: str = "leung2002") -> pl.DataFrame:
    """The experiment's runs reduced to one row per workload x policy x ordering x
    allocator x work multiple x replication: means over runs (seeds) of the run means of
    the locality metrics, sorted."""
    runs = summaries.filter((pl.col("experiment") == experiment)
                            & pl.col("span_ring_mean").is_not_null())
    spec = runs["machine_spec"].to_list()
    runs = runs.with_columns(
        pl.Series("allocator", [dict(_TOKEN.findall(s)).get("allocator") for s in spec]),
        pl.Series("ordering", [dict(_TOKEN.findall(s)).get("ordering") for s in spec]))
    keys = ["workload", "policy", "ordering", "allocator", "runtime_scale", "replication"]
    metrics = ["bcube_ratio_mean", "span_ring_mean", "span_linear_mean", "bbox_volume_mean",
               "components_mean", "mean_hops_mean", "utilization"]
    return (runs.sort([*keys, "seed"])
            .group_by(keys, maintain_order=True)
            .agg(pl.len().alias("runs"), *(pl.col(m).mean() for m in metrics))
            .sort(keys))


def write_figure1(store: str | Path, experiment: str, out: str | Path) -> tuple[list[Path], str]:
    """figure1.csv, figure1.md and the figure (.png, .svg) of the experiment's runs in
    `store` (`figure1_rows`), under `out`; returns the figure's files and the table as
    Markdown."""
    from simcore.base.atomic import atomic_write_bytes
    from simcore.base.errors import SpecError
    from simcore.report.plots import locality_vs_work_multiple, write_figure
    from simcore.sweep.store import read_summaries

    rows = figure1_rows(read_summaries(store), experiment)
    if rows.is_empty():
        raise SpecError(f"{store}: no runs of experiment {experiment} with "
                        "locality metrics (run it with a curve allocator first)")
    out = Path(out)
    atomic_write_bytes(out / "figure1.csv", rows.write_csv().encode())
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_formatting="MARKDOWN",
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
                   tbl_width_chars=1000, fmt_str_lengths=100,
                   float_precision=3):
        text = str(rows)
    atomic_write_bytes(out / "figure1.md", (text + "\n").encode())
    return write_figure(lambda: locality_vs_work_multiple(rows), out, "figure1"), text
