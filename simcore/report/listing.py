"""What the registries hold, as plain data: `simcore list` and the output documentation.

Every entry comes from a registry (machine kinds, allocators, schedulers, workload models,
workload transforms, the trace catalogue, output columns), so the listing cannot fall
behind the code.
"""

from __future__ import annotations

import os
from typing import Any

from simcore.base.params import Parameter
from simcore.core.columns import AGREEMENT, Column
from simcore.fidelity.compare import (
    FIGURES,
    REPORT_FILE,
    REPORT_MD,
    RESIDUALS,
    RESIDUALS_FILE,
)
from simcore.machines.contract import CAPABILITIES
from simcore.machines.descriptions import machines_dirs
from simcore.machines.registry import ALLOCATORS, KINDS
from simcore.policy import SCHEDULERS
from simcore.report.runs import LISTED_JOBS
from simcore.workload.spec import transforms
from simcore.workload.synthetic import MODELS

REGISTRIES = ("machines", "allocators", "schedulers", "models", "transforms", "traces",
              "columns")


def listing(catalogue: str | os.PathLike[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every registry's rows (the trace catalogue at `catalogue`, default the
    repository's)."""
    from simcore.base import patterns
    from simcore.workload.traces import load_catalogue

    wired = sorted({p.stem for d in machines_dirs() if d.is_dir() for p in d.glob("*.yaml")})
    return {
        "machines": [{"kind": k.name, "summary": k.summary, "example": k.example,
                      "dimensions": [k.min_dims, k.max_dims], "wraps": k.wraps,
                      "jobs_have_shapes": k.shaped_jobs, "default_allocator": k.default_allocator,
                      **({"described": wired} if k.wired else {})} for k in KINDS.values()],
        "allocators": [{"name": a.name, "summary": a.summary, "kinds": list(a.kinds),
                        "capabilities": {c: CAPABILITIES[c] for c in sorted(a.capabilities)},
                        "parameters": _parameters(a.parameters)} for a in ALLOCATORS.values()],
        "schedulers": [{"name": s.name, "summary": s.summary, "needs": sorted(s.needs),
                        "parameters": _parameters(s.parameters)} for s in SCHEDULERS.values()],
        "models": [{"name": m.name, "summary": m.summary,
                    "usage": f"{m.name}:{m.parameters[0].name.upper()}",
                    "parameters": _parameters(m.parameters)} for m in MODELS.values()],
        "transforms": [f.metadata["parameter"].describe() for f in transforms().values()],
        "traces": [{"name": t.name, "url": t.url, "sha256": t.sha256, "jobs": t.jobs,
                    "max_procs": t.max_procs, "machine_size": t.machine_size,
                    "notes": t.notes.strip()}
                   for t in load_catalogue(catalogue or patterns.CATALOGUE).values()],
        "columns": columns(),
    }


def _fields(*rows: tuple[str, str | None, str]) -> tuple[Column, ...]:
    return tuple(Column(name, object, unit, meaning) for name, unit, meaning in rows)


#: The fields of `simcore run --json` besides the run metrics of summary.parquet
#: (`simcore.core.columns.RUN_METRICS`); docs/outputs.md lists them.
RUN_JSON = (
    Column("machine", str, None, "the machine as simulated, e.g. torus:4x4x8 (with its "
           "allocator where it is not the kind's default)"),
    Column("policy", dict, None, "the scheduler (`scheduler`) and every parameter value "
           "as run"),
    Column("resources_left_busy", int, "units", "units still held when the run ended (0: "
           "every job released its units; a check of the engine)"),
    Column("turnaround_s", float, "s", "time from the first arrival to the last "
           "completion (= makespan_s)"),
    Column("termination_s", dict, "s", f"each job's end time by job id, for runs of at most "
           f"{LISTED_JOBS} jobs; null for larger runs"),
    Column("workload", dict, None, "the workload: `source` (the --workload argument) and "
           "every workload transform's value (columns of summary.parquet)"),
    Column("source", str, None, "in `workload`: the --workload argument, a trace or a "
           "model such as lublin:128"),
    Column("timing", dict, None, "wall-clock costs, which vary from run to run: "
           "`compile_s`, `simulate_s`, `s_per_decision`, `metrics_s`"),
    Column("compile_s", float, "s", "in `timing`: compiling the simulation kernel, or "
           "loading it from numba's cache (once per process), not counted in simulate_s"),
    Column("simulate_s", float, "s", "in `timing`: the simulation kernel's run"),
    Column("s_per_decision", float, "s", "in `timing`: simulate_s per scheduler decision"),
    Column("metrics_s", float, "s", "in `timing`: measuring placements (locality of the "
           "curve allocators; 0 elsewhere)"),
)
#: The fields of the other commands' JSON (`simcore run --json`: RUN_JSON above);
#: objects whose keys are data (histogram bins, rule names) are described as a whole.
COMMAND_JSON = {
    "simcore swf-info --json": _fields(
        ("jobs", "jobs", "job lines in the file"),
        ("jobs_clean", "jobs", "jobs left after the default cleaning (oversize: drop)"),
        ("max_procs", "procs", "the header's MaxProcs"),
        ("max_nodes", "nodes", "the header's MaxNodes; null without one"),
        ("first_submit", "s", "the first arrival of the cleaned jobs"),
        ("last_submit", "s", "the last arrival of the cleaned jobs"),
        ("span_s", "s", "last_submit - first_submit"),
        ("offered_load", "fraction", "sum(size x run) / (max_procs x span_s); null without "
         "a span"),
        ("size_histogram", "jobs", "cleaned jobs by size in power-of-two bins (1, 2, 3-4, "
         "5-8, ...)"),
        ("runtime_percentiles_s", "s", "run-time percentiles of the cleaned jobs (p5 .. "
         "p100); null without jobs"),
        ("cleaning_removed", "jobs", "jobs each cleaning rule removed"),
        ("header", None, "the header's fields as written (Note: a list of its notes)")),
    "simcore fidelity --json": _fields(
        ("trace", None, "the trace simulated (the TRACE argument)"),
        ("machine", None, "the machine as simulated"),
        ("policy", None, "the scheduler and every parameter value as run"),
        ("counts", "jobs", "every job of the log once, under the first that applies: "
         "`log_jobs`, `cleaning_removed` (per rule), `unknown_wait` (recorded wait -1), "
         "`not_simulated`, `compared`"),
        ("all", None, "the metrics below over every compared job"),
        ("first_half", None, "the metrics over the compared jobs of the first half of the "
         "cleaned log by job count (queue order: submit time, then job number)"),
        ("second_half", None, "... and of its second half"),
        ("month_origin", None, "what the months of `by_month` count from: the header's "
         "UnixStartTime in its TimeZoneString, or submit time 0"),
        ("by_size", None, "the metrics per size class: 1, 2, 3-4, 5-8, ... processors"),
        ("by_month", None, "the metrics per month of submission (YYYY-MM, or +k)"),
        ("by_queue", None, "the metrics per queue (SWF field 15)"),
        ("by_user", None, "the metrics per user (SWF field 12)"),
        ("noise_floor", None, "the same replay perturbed, against the unperturbed one in "
         "place of the log, over the jobs compared with it: `arrivals_shaken` (each arrival "
         "moved by up to 1 s, seeded by "
         "--seed) and `ties_reversed` (jobs of equal submit times queued in the other "
         "order), each with `all`, `first_half` and `second_half`")) + AGREEMENT,
    f"simcore fidelity --out: {RESIDUALS_FILE}": RESIDUALS,
    "simcore plan --json": _fields(
        ("dataset", None, "the configuration's dataset name"),
        ("shards", "shards", "shards (experiment x workload x machine x policy)"),
        ("runs", "runs", "runs the configuration holds"),
        ("cached", "runs", "runs with an entry in the run cache"),
        ("unknown", "runs", "runs whose workload file is not made yet (their keys cannot be "
         "known)"),
        ("to_simulate", "runs", "runs - cached"),
        ("experiments", None, "one object per experiment: `experiment`, `shards`, `runs`, "
         "`cached`"),
        ("experiment", None, "in `experiments`: the experiment's name"),
        ("stages", None, "one object per experiment whose seeds are planned in two stages "
         "(`seeds: {pilot, max, target}`), with the fields below"),
        ("pilot_seeds", None, "in `stages`: the pilot's seeds"),
        ("pilot_runs", "runs", "in `stages`: the pilot's runs"),
        ("pilot_done", "runs", "in `stages`: the pilot's runs in the run cache"),
        ("metric", None, "in `stages`: the summary column whose spread fixes n"),
        ("relative_half_width", "fraction", "in `stages`: the target half-width over the "
         "mean"),
        ("level", "fraction", "in `stages`: the confidence level of the half-width"),
        ("max", "seeds", "in `stages`: the most seeds the plan may give"),
        ("n", "seeds", "in `stages`: the seeds fixed from the pilot's spread; null until "
         "every pilot run is cached"),
        ("widest", None, "in `stages`: the configuration whose spread set n"),
        ("widest_relative", "fraction", "in `stages`: its relative half-width over the "
         "pilot"),
        ("second_runs", "runs", "in `stages`: the second stage's runs"),
        ("second_cached", "runs", "in `stages`: those in the run cache"),
        ("lines", None, "in `stages`: what `simcore plan` prints of the stage"),
        ("notes", None, "the planning's warnings, a line each (e.g. seeds that cannot "
         "differ on a workload where nothing is random)")),
    "simcore bgl links --json": _fields(
        ("machine", None, "the wired machine description's name"),
        ("dim", None, "the dimension of the line"),
        ("midplanes", None, "the positions along the line to connect"),
        ("topology", None, "mesh or torus"),
        ("link_sets", None, "the sets of cables that connect them, fewest cables first"),
        ("cables", None, "each cable's route: source.port -> destination.port")),
    "simcore leung2002 table1 --json": _fields(
        ("dilation", "factor", "the dilation coefficient of the run times (0: as given)"),
        ("strategy", None, "the allocation strategy, as the paper names it"),
        ("runs", "runs", "runs of the strategy at this dilation (seeds)"),
        ("makespan_mean_s", "s", "mean makespan over the runs"),
        ("makespan_std_s", "s", "sample standard deviation of the makespan (null below "
         "two runs)"),
        ("mean_hops", "hops", "mean over the runs of the jobs' mean hop distance"),
        ("paper_makespan_s", "s", "the paper's measured mean makespan (Table 1)"),
        ("paper_std_s", "s", "the paper's standard deviation (Table 1)")),
    "archive manifest.json": _fields(
        ("archive_schema_version", None, "version of the archive's layout"),
        ("name", None, "the dataset's name"),
        ("version", None, "the dataset's version (default: simcore's)"),
        ("description", None, "what the dataset is"),
        ("authors", None, "CFF persons or entities"),
        ("git_commit", None, "the commit of the code that made the results; null if unknown"),
        ("config", None, "the resolved workflow configuration"),
        ("simcore_version", None, "the simcore version that packed it"),
        ("result_schema_version", None, "version of the store's result schema"),
        ("python", None, "the Python version that packed it"),
        ("members", None, "one object per member: `path`, `sha256`, `size` (bytes); the "
         "archive's other generated members are MANIFEST.sha256 (sha256sum -c: the same "
         "sha256 and manifest.json's), environment.txt (pip freeze), README.md (the data "
         "card) and CITATION.cff; `archive verify` refuses an archive that lacks either "
         "manifest or whose manifests differ"),
        ("path", None, "in `members`: the member's path in the archive"),
        ("sha256", None, "in `members`: its sha256"),
        ("size", "bytes", "in `members`: its size")),
    "simcore archive verify --json": _fields(
        ("archive", None, "the archive's path"),
        ("dataset", None, "the dataset name its manifest records"),
        ("members", "files", "members checked against their sha256 in both manifests"),
        ("bytes", "bytes", "their total size"),
        ("tables", "rows", "rows of each table, reloaded from the archive")),
}


def _parameters(parameters: tuple[Parameter, ...]) -> list[dict[str, Any]]:
    return [p.describe() for p in parameters]


def columns() -> list[dict[str, Any]]:
    """Every column of every output: the store's summary rows and per-job rows, and each
    result table."""
    from simcore.core.columns import JOB_COLUMNS
    from simcore.report.tables import table_columns
    from simcore.sweep.store import IDENTITY, PARAMETERS, RUN_METRICS

    rows = [{"output": "summary.parquet", "column": c.name, "unit": c.unit,
             "meaning": c.meaning} for c in (*IDENTITY, *PARAMETERS, *RUN_METRICS)]
    rows += [{"output": "jobs.parquet", "column": "run_key", "unit": None,
              "meaning": "the run the row belongs to"}]
    rows += [{"output": "jobs.parquet", "column": c.name, "unit": c.unit, "meaning": c.meaning}
             for c in JOB_COLUMNS]
    rows += [{"output": f"tables/{table}", "column": name, "unit": unit, "meaning": meaning}
             for table, cols in table_columns().items() for name, unit, meaning in cols]
    rows += [{"output": output, "column": c.name, "unit": c.unit, "meaning": c.meaning}
             for output, fields in {"simcore run --json": RUN_JSON, **COMMAND_JSON}.items()
             for c in fields]
    return rows


def text(name: str, rows: list[dict[str, Any]]) -> str:
    """A registry as readable text."""
    lines = [f"{name}:"]
    for row in rows:
        key = row.get("name") or row.get("kind") or row.get("column")
        if name == "columns":
            unit = f" ({row['unit']})" if row["unit"] else ""
            lines.append(f"  {row['output']:<22} {key}{unit}: {row['meaning']}")
            continue
        if name == "traces":
            lines.append(f"  {key:<28} {row['jobs']:>7} jobs, MaxProcs {row['max_procs']}")
            continue
        if name == "transforms":
            lines.append(f"  {key:<20} {row['meaning']}; {row['expected']}, "
                         f"default {row['default']}")
            continue
        extra = row.get("example") or row.get("usage") or ", ".join(row.get("kinds", []))
        lines.append(f"  {key:<16} {row['summary']}" + (f" ({extra})" if extra else ""))
        for p in row.get("parameters", []):
            lines.append(f"      {p['name']:<16} {p['meaning']}; {p['expected']}, "
                         f"default {p['default']}")
    return "\n".join(lines)


def outputs_markdown() -> str:
    """docs/outputs.md: every output column with its unit and meaning, from the
    definitions the code uses (regenerate with `simcore list columns --markdown`)."""
    from simcore.report.tables import TABLE_DEFINITIONS

    rows = columns()
    lines = [
        "# Outputs",
        "",
        "Every column of every file a sweep writes, with its unit and meaning. This page is",
        "generated from the definitions the code uses (`simcore list columns --markdown`);",
        "a test keeps it current.",
        "",
        "- `results/<dataset>/store/.../summary.parquet`: one row per simulation run;",
        "- `results/<dataset>/store/.../jobs.parquet`: one row per job of each run, when the",
        "  experiment sets `per_job: true`;",
        "- `results/<dataset>/tables/<table>.parquet` and `.csv` (all columns; units and",
        "  meanings also in `<table>.columns.csv`) and `.md` (a readable digest, one section",
        "  per experiment: its \"Every row:\" line states the names with one value in the",
        "  section and the workload transforms with one value other than their default (a",
        "  transform at its default leaves the jobs as they are; `simcore list transforms`",
        "  gives the defaults), settings that vary are columns, policy parameters are in the",
        "  policy legend; a result the same as another column in every row (as printed) is",
        "  named rather than shown (the measured offered load where it equals its target);",
        "  confidence intervals, and the precision verdict resting on them,",
        "  are printed on rows of three runs or more only, as the figures draw their bars,",
        "  and a sentence says so where rows have fewer);",
        "- `results/<dataset>/reproduction-verdicts.csv` and `.parquet`: reproduction.md's rows",
        "  as data: study, statement, kind, what, source, paper (as printed), n, ours,",
        "  half_width, tolerance, low, high (the printed interval; store units: fractions",
        "  for percentages, seconds for times), verdict, condition, why;",
        "- `results/<dataset>/.tables.sha256`, `.figures.sha256`, `.reproduction.md.sha256`:",
        "  the sha256 of every file the tables, figures and reproduction.md were made with",
        "  (`sha256sum -c` format; run it beside them), which `archive pack` checks; likewise",
        "  `.run=<i>.sha256` beside each exported schedule (`results/<dataset>/schedules/...`,",
        "  written by `simcore show` once it has drawn the export);",
        "- `results/workloads/.../jobs.parquet`: a workload's jobs (SWF columns); its metadata",
        "  `source` records what made it: `kind` synthetic with the model, its parameters and",
        "  `seed`, or `kind` trace with `file`, `sha256` and `cleaning` (the options applied);",
        "- `results/<dataset>/archive/<dataset>.tar.xz`: the shards, tables, figures, schedules,",
        "  reproduction.md with its verdict table and the configuration files as given",
        "  (config/<name>), with",
        "  MANIFEST.sha256, manifest.json (the resolved configuration among them),",
        "  environment.txt, README.md and CITATION.cff (citing the sources the experiments'",
        "  workloads come from);",
        "- `simcore run --json`: one object, the run metrics of summary.parquet (named as",
        "  there) and the fields below; the other commands' `--json` objects and an archive's",
        "  manifest.json below it;",
        f"- `simcore fidelity --out DIR`: `DIR/{REPORT_FILE}` (the `--json` object),",
        f"  `DIR/{RESIDUALS_FILE}`, one row per job of the cleaned log, and the figures drawn",
        "  from it (docs/schedules.md), each as `.png` and `.svg`:",
        "  " + ", ".join(f"`{name}`" for name in FIGURES) + ";",
        f"- `simcore fidelity --config YAML --out DIR`: `DIR/{REPORT_MD}`, the report of every",
        "  trace of the configuration (docs/fidelity.md is config/fidelity.yaml's), and the",
        "  figures of each trace's replay under its `figures` policy in `DIR/fidelity/<trace>/`.",
        "",
        "Capacity follows Krevat (2003), section 4.2: over T = max(end) - min(submit) and the",
        "N units of the machine, utilized (eq. 4.1) counts the units each job requested for",
        "its run time; unused (eq. 4.2) counts free units no waiting job asked for; lost",
        "(eq. 4.3) is the rest: units idle while jobs wait (fragmentation, a blocked head),",
        "units added by rounding a size up or growing a job, units held during start delays.",
        "The reproduction report can also count utilized over the units each job was",
        "allocated (`utilization_allocated` in a claim's query, the thesis's other reading):",
        "sum(alloc_size x run_s) / (T x N) per run, derived from `jobs.parquet`, so only for",
        "experiments with `per_job: true` (simcore/report/job_metrics.py).",
        "Parameters that do not apply to a run (a scheduler's parameter under another",
        "scheduler, shapes on machines without them) are null. So are the columns a run",
        "made before the store gained them (a new run metric or parameter: runs are never",
        "simulated again for a new column); `simcore resimulate --configfile C",
        "[--experiment E] [--policy P] [--where NAME=VALUE]` fills them in for the runs",
        "chosen.",
    ]
    tables = {f"tables/{name}": t.description for name, t in TABLE_DEFINITIONS.items()}
    for output in dict.fromkeys(r["output"] for r in rows):
        lines += ["", f"## {output}", ""]
        if output in tables:
            lines += [tables[output], ""]
        lines += ["| column | unit | meaning |", "|---|---|---|"]
        lines += [f"| `{r['column']}` | {r['unit'] or ''} | {r['meaning']} |"
                  for r in rows if r["output"] == output]
    return "\n".join(lines) + "\n"
