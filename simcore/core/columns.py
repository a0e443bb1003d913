"""The output columns: one row each, for the run metrics of a summary row and the per-job
columns of a run's schedule (the formulas are in `simcore.core.metrics`).

This is a registry: adding a column is one row here (and the module that computes it), and
a run key holds no part of it, so a new column re-simulates nothing: the store reads older
entries with the column absent (null; docs/outputs.md).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simcore.base.errors import SimcoreError


class Absent(enum.Enum):
    """`Column.absent` of a run metric that a run without it leaves out of its summary
    (null in the store)."""

    OMITTED = "omitted"


OMITTED = Absent.OMITTED


@dataclass(frozen=True)
class Column:
    """An output column: name, Python type (int, float, str, bool; list: a list of ints;
    list[float]: a list of floats),
    unit and meaning. `absent`: a run metric's value in the summary of a run that has
    none of it to report (an engine whose units never fail, a machine whose modules do not
    measure it), or OMITTED."""

    name: str
    type: type
    unit: str | None
    meaning: str
    absent: Any = OMITTED


#: Locality of each job's processors on machines whose allocator reports it (the curve
#: allocators; see simcore.machines.curves.locality), null elsewhere.
LOCALITY = (
    Column("span_linear", int, "processors", "linear span s^l: last rank - first rank + 1 "
           "along the ordering (Leung et al.)"),
    Column("span_ring", int, "processors", "ring span s^w, the paper's span: processors "
           "minus the longest gap between the job's ranks around the ordering's ring"),
    Column("stretch_span", float, "ratio", "ring span / processors"),
    Column("bbox_volume", int, "units", "volume of the bounding box (on tori, per dimension "
           "the shortest arc holding the coordinates)"),
    Column("bbox_sides", int, "units", "sum of the bounding box's sides (along the machine's "
           "sides longer than one)"),
    Column("bcube_volume", int, "units", "bounding cube: the box's longest side ^ d, d the "
           "machine's sides longer than one"),
    Column("bcube_ratio", float, "ratio", "bounding cube / the smallest cube any placement "
           "of the job's size fits in"),
    Column("components", int, "count", "connected components under face adjacency "
           "(wrapping on tori)"),
    Column("mean_hops", float, "hops", "mean pairwise hop distance (L1; wrapped on tori)"),
)
#: Locality metrics also aggregated per processor (value / processors, averaged).
PER_PROCESSOR = ("span_linear", "span_ring", "bbox_volume", "bbox_sides", "bcube_volume",
                 "components")
#: How a run aggregates each locality metric over its jobs.
LOCALITY_STATS = {
    "mean": "mean over jobs",
    "max": "maximum over jobs",
    "sumsq": "sum over jobs of the squares",
    "weighted": "mean over jobs weighted by run time",
    "per_proc": "mean over jobs of the value / processors",
}


def locality_aggregates() -> tuple[Column, ...]:
    """The run columns <metric>_<stat> of LOCALITY x LOCALITY_STATS (per_proc only for
    PER_PROCESSOR metrics)."""
    return tuple(
        Column(f"{c.name}_{stat}", float, None if stat == "sumsq" else c.unit,
               f"{c.meaning.split(':')[0]}, {meaning}")
        for c in LOCALITY for stat, meaning in LOCALITY_STATS.items()
        if stat != "per_proc" or c.name in PER_PROCESSOR)


#: How a simulated schedule agrees with a log's recorded starts over a set of jobs
#: (`simcore.fidelity.compare`; a job's recorded start is its submit time + recorded wait).
AGREEMENT = (
    Column("jobs", int, "jobs", "jobs compared (known recorded wait, simulated)"),
    Column("mean_wait_ratio", float, "ratio", "mean simulated wait / mean recorded wait; "
           "null where the recorded mean is 0"),
    Column("wait_rho", float, None, "Spearman's rho of recorded and simulated waits, on "
           "average ranks; null where either side's waits are all equal"),
    Column("within_10_min", float, "fraction", "jobs starting within 600 s of their "
           "recorded start (submit + wait), either way"),
    Column("within_1_h", float, "fraction", "jobs starting within 3,600 s of their "
           "recorded start, either way"),
    Column("median_abs_error_s", float, "s", "median of the absolute start errors, "
           "abs(simulated start - recorded start)"),
)
#: The halves of a log: its cleaned jobs in queue order, split by job count.
HALVES = ("first_half", "second_half")
#: The sets of jobs a run's fidelity metrics cover: every compared job, and each half.
FIDELITY_SETS = {"": "over every compared job",
                 "first_half": "over the compared jobs of the log's first half",
                 "second_half": "over the compared jobs of the log's second half"}


def fidelity_name(metric: str, jobs: str = "") -> str:
    """The run column of an AGREEMENT metric over a set of FIDELITY_SETS:
    fidelity_<metric>[_<set>]."""
    return f"fidelity_{metric}" + (f"_{jobs}" if jobs else "")


def fidelity_metrics() -> tuple[Column, ...]:
    """The run columns of AGREEMENT x FIDELITY_SETS: a replay of a log (a converted trace,
    its arrivals and jobs kept; `simcore.fidelity.runs`) against the starts the log
    recorded; null for every other run."""
    return tuple(Column(fidelity_name(c.name, jobs), c.type, c.unit,
                        f"{c.meaning}; {meaning}; null unless the run replays a log")
                 for jobs, meaning in FIDELITY_SETS.items() for c in AGREEMENT)


#: Run metrics that allocator and scheduler modules report (their `observables`): in
#: every summary of the event engine, `absent` where the run's modules do not report them.
MODULE_METRICS = (
    Column("cable_utilization", float, "fraction", "time-averaged fraction of the cables in "
           "use (wired machines; null elsewhere)", absent=float("nan")),
    Column("reservations_delayed", int, "count", "conservative backfilling: reservations "
           "moved later because running jobs exceeded their estimates (null elsewhere)",
           absent=None),
)

#: Run results, one value per simulation (the summary rows of the result store).
RUN_METRICS = (
    Column("jobs", int, "jobs", "jobs simulated (the span after the machine_fit transform)"),
    Column("oversize_jobs", int, "jobs", "jobs of the span larger than the machine, dropped "
           "or clamped to it"),
    Column("offered_load_actual", float, "fraction", "offered load measured on the "
           "simulated jobs (what they ask, the offered_load target where arrivals are "
           "rescaled): sum(size x run) / (units x (last arrival - first arrival))"),
    Column("utilization", float, "fraction", "capacity utilized, Krevat eq. 4.1: "
           "sum(s_j x run_j) / (T x N), s_j the requested units, T = max(end) - min(submit), "
           "N the machine's units (BSP jobs: their processes' busy time in an isolated run)"),
    Column("accepted_load", float, "fraction", "the carried load, sum(s_j x run_j) / "
           "(T x N): what the machine ran, in the units of the offered load"),
    Column("unused", float, "fraction", "capacity unused, eq. 4.2: integral of max(0, free "
           "units - units requested by waiting jobs) dt / (T x N)"),
    Column("lost", float, "fraction", "capacity lost, eq. 4.3: 1 - utilized - unused - failed "
           "(units idle while jobs wait, added by rounding or growth, held during start "
           "delays)"),
    Column("failed", float, "fraction", "capacity out of service: integral of the units "
           "failed and not yet repaired dt / (T x N) (0 on machines that never fail)"),
    Column("goodput", float, "fraction", "work of the jobs that completed, sum(s_j x run_j) / "
           "(T x N): utilization without the work of runs a failure cut short"),
    Column("failures", int, "count", "failure events (a failure domain going out of service)",
           absent=0),
    Column("runs_cut_short", int, "count", "runs a failure cut short (the job requeued or "
           "killed)", absent=0),
    Column("killed_jobs", int, "jobs", "jobs killed by a failure (on_failure: kill); they "
           "never complete", absent=0),
    Column("refused_jobs", int, "jobs", "jobs the machine refused (sizes its placement menu "
           "does not list, unlisted: refuse), left out of the run", absent=0),
    Column("mean_wait_s", float, "s", "mean of start - submit (of the measured jobs, as "
           "every job statistic: all but the warm-up)"),
    Column("median_wait_s", float, "s", "median wait"),
    Column("p95_wait_s", float, "s", "95th percentile of the wait"),
    Column("mean_bsld", float, "ratio", "mean bounded slowdown, max(response, 10 s) / "
           "max(run, 10 s)"),
    Column("median_bsld", float, "ratio", "median bounded slowdown"),
    Column("p95_bsld", float, "ratio", "95th percentile of the bounded slowdown"),
    Column("mean_response_s", float, "s", "mean of end - submit"),
    Column("median_response_s", float, "s", "median response"),
    Column("p95_response_s", float, "s", "95th percentile of the response"),
    Column("sd_response_s", float, "s", "standard deviation of end - submit (n - 1)"),
    Column("measured_jobs", int, "jobs", "jobs in the job statistics: all but the warm-up"),
    Column("busy_fraction", float, "fraction", "Chu's utilization: units held by running "
           "jobs / N, averaged over the window from the first measured arrival to the last"),
    Column("mean_queue_length", float, "jobs", "waiting jobs averaged over that window"),
    Column("mean_jobs_in_system", float, "jobs", "waiting and running jobs averaged over "
           "that window"),
    Column("mean_scanned_queue", float, "jobs", "waiting jobs at each arrival and departure "
           "in that window (the arriving job and those it starts included), averaged over "
           "these events"),
    *(Column(f"{stat}_response_s_q{q}", float, "s", f"{what} of the response of measured jobs "
             f"requesting {q - 1}N/4 < units <= {q}N/4") for q in range(1, 5)
      for stat, what in (("mean", "mean"), ("sd", "standard deviation"))),
    Column("makespan_s", float, "s", "T = max(end) - min(submit), the span capacity is "
           "measured over"),
    Column("rounded_jobs", int, "jobs", "jobs whose size no partition has, rounded up at "
           "arrival to the next size that has one", absent=0),
    Column("grown_jobs", int, "jobs", "jobs given more units than that to be placed (FCFS "
           "growth of a blocked head, backfilling growth up to max_growth)", absent=0),
    Column("migrations_attempted", int, "count", "migrations tried (FN_tor and FN_max "
           "allowed one while the head was blocked)", absent=0),
    Column("migrations_successful", int, "count", "migrations that enlarged the largest free "
           "partition", absent=0),
    Column("mean_time_between_migrations_s", float, "s", "mean interval between successful "
           "migrations (null with fewer than two)", absent=float("nan")),
    Column("decisions", int, "count", "scheduler invocations (one per distinct event time)",
           absent=0),
    Column("blocked_no_box", int, "count", "decisions whose head job found no free partition "
           "of units for its size or shape", absent=0),
    Column("blocked_links", int, "count", "decisions whose head job found free midplanes for "
           "its shape but no free link sets (wired machines)", absent=0),
    *MODULE_METRICS,
    Column("time_slices", int, "count", "time-sharing: time slices run (gang, FCS; 0 for "
           "spin-block; null elsewhere)"),
    Column("context_switches", int, "count", "time-sharing: processors that paid a global "
           "context switch at a slice start (null elsewhere)"),
    *locality_aggregates(),
    Column("blocks_spanned_mean", float, "count", "block machines: mean base blocks a job's "
           "nodes span, over the jobs that ran (null elsewhere)"),
    Column("one_block_share", float, "fraction", "block machines: share of the jobs that ran "
           "whose nodes are inside one base block (null elsewhere)"),
    *fidelity_metrics(),
)

#: Per-job rows of a run (experiments with `per_job: true`), in the queue's priority order.
JOB_COLUMNS = (
    Column("job_id", int, None, "job number in the source"),
    Column("submit_s", float, "s", "arrival (after load transforms)"),
    Column("sched_s", float, "s", "allocation: the job's units are held from here"),
    Column("start_s", float, "s", "start: allocation + start delay"),
    Column("end_s", float, "s", "completion: start + run"),
    Column("run_s", float, "s", "run time (after runtime scaling)"),
    Column("estimate_s", float, "s", "run time as the scheduler believed it"),
    Column("wait_s", float, "s", "start - submit"),
    Column("response_s", float, "s", "end - submit"),
    Column("bsld", float, "ratio", "bounded slowdown, max(response, 10 s) / max(run, 10 s)"),
    Column("size", int, "units", "units requested (s_j; on wired machines the shape's volume)"),
    Column("alloc_size", int, "units", "units allocated, after rounding and growth"),
    Column("reserved_s", float, "s", "first reservation time the job got as a blocked head "
           "(null: never reserved)"),
    Column("requested_units", int, "units", "wired machines: units the trace asked for"),
    Column("shape_a", int, "units", "wired machines: the job's shape, sides in the order of "
           "the machine's sides sorted ascending (placement tries every rotation)"),
    Column("shape_b", int, "units", "second side of the shape"),
    Column("shape_c", int, "units", "third side of the shape"),
    Column("torus", bool, None, "wired machines: the job wants a torus"),
    Column("failures_hit", int, "count", "machines that fail: runs of the job a failure cut "
           "short (null elsewhere)"),
    Column("killed", bool, None, "machines that fail: the job was killed by a failure and "
           "its end is the failure's time (null elsewhere)"),
    Column("nodes", list, None, "curve allocators: the job's processors, x + X*y + X*Y*z, "
           "in the order of the machine's ordering"),
    Column("placed_at", list, None, "the job's entries in the run's placement log (its "
           "start, each migration move, each new run after a failure), numbered in the "
           "order the run made them; time-sharing: one entry, its processes' processors"),
    Column("matrix_row", int, None, "time-sharing: the row (time slot) of the Ousterhout "
           "matrix the job's processes held at its end (gang with matrix=alternate moves "
           "jobs down to freed rows; null elsewhere)"),
    Column("placed_s", list[float], "s", "when each of those entries began"),
    Column("placed_code", list, None, "the resources of each entry, one code after another: "
           "the number r of runs of set bits of the resource bitset, then each run's first "
           "bit and length; or -k, then the bitset's k 64-bit words (bit b of word w is "
           "resource 64w + b, in the machine kind's own numbering)"),
    *LOCALITY,
    Column("dilation", float, "factor", "run-time dilation model: end - start = run x this "
           "(null where the model is off)"),
    Column("blocks_spanned", int, "count", "block machines: base blocks the job's nodes "
           "span at its last start (0: it never ran)"),
)


def reported(values: Mapping[str, Any], what: str) -> dict[str, Any]:
    """`values` as the run metrics `what` reports: each a RUN_METRICS column, of its type
    (None, or NaN for a float: undefined); a SimcoreError names any other."""
    columns = {c.name: c for c in RUN_METRICS}
    unknown = sorted(set(values) - set(columns))
    if unknown:
        raise SimcoreError(f"{what} reports {', '.join(unknown)}, which RUN_METRICS "
                           "(simcore.core.columns) does not register")
    for name, value in values.items():
        kind = columns[name].type
        if value is not None and (isinstance(value, bool) != (kind is bool)
                                  or not isinstance(value, kind)):
            raise SimcoreError(f"{what} reports {name}={value!r}; RUN_METRICS registers "
                               f"it as {kind.__name__}")
    return dict(values)


def with_absent(values: Mapping[str, Any], columns: Iterable[Column]) -> dict[str, Any]:
    """Each of `columns` that has an absent value (`Column.absent`), its value in `values`
    or else that one, then the rest of `values`."""
    return {**{c.name: c.absent for c in columns if c.absent is not OMITTED}, **values}


def registered_job_columns(names: Iterable[str], what: str) -> None:
    """Raise a SimcoreError naming any of `names` that JOB_COLUMNS does not register (per-job
    columns `what` adds to a run's table)."""
    unknown = sorted(set(names) - {c.name for c in JOB_COLUMNS})
    if unknown:
        raise SimcoreError(f"{what} adds the per-job column(s) {', '.join(unknown)}, which "
                           "JOB_COLUMNS (simcore.core.columns) does not register")
