"""Result tables: the store's runs aggregated over replications, one row per configuration.

A configuration is every column that says what was simulated (CONFIG_KEYS: the partition
columns, machine_spec, scheduler, the workload transforms and the policy parameters); runs
of one configuration differ only in `seed` (and so in `run_key`). Nulls in key columns are
values like any other (Krevat's experiments have no offered_load, unwired machines no
p_fat), so grouping and joining are null-safe.

Seven tables (TABLE_DEFINITIONS): `utilization`, `migrations`, `capacity`, `wait_slowdown`,
`saturation` (per configuration swept over offered load, where the carried load stops
rising), `response` (response times with Chu's accuracy flag) and `response_by_size`.
Statistics skip null and NaN values (NaN marks an undefined metric, e.g. the time between
migrations of a run with fewer than two); `n` counts runs. Sums are `math.fsum`, exactly
rounded, so every float is independent of row order and of how the store was sharded.
Confidence half-widths are Student t (`simcore.base.confidence`): t(0.975, k-1) * std /
sqrt(k) over k values (95%), t(0.95, k-1) where a study states 90% (Chu's response times;
`ci_level` says which).
"""

from __future__ import annotations

import functools
import operator
import os
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from simcore.base.atomic import atomic_write_bytes
from simcore.base.confidence import half_width, mean, runs_for_target, std
from simcore.base.errors import SimcoreError
from simcore.base.stamps import remove_stamped, write_stamp
from simcore.core.columns import HALVES, RUN_METRICS, fidelity_name
from simcore.machines.registry import ALLOCATORS
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, PolicySpec
from simcore.sweep.store import (
    IDENTITY,
    PARAMETERS,
    PARTITIONS,
    POLICY_COLUMNS,
    read_summaries,
    write_table,
)
from simcore.workload.spec import transforms

TRANSFORMS = tuple(transforms())
CONFIG_KEYS = (*PARTITIONS, "machine_spec", "scheduler", *TRANSFORMS, *POLICY_COLUMNS)
#: Per scheduler that has them, the parameter values of its always-migrate runs (its row's
#: `always_migrate`).
_ALWAYS = {name: row.always_migrate for name, row in SCHEDULERS.items() if row.always_migrate}
#: What an always-migrate run shares with the runs it bounds: all but the policy's name
#: and the parameters that make it migrate always.
ALWAYS_MATCH = tuple(k for k in CONFIG_KEYS
                     if k not in ("policy", *(p for v in _ALWAYS.values() for p in v)))
#: Whether a run is one of its scheduler's always-migrate runs.
ALWAYS_MIGRATE = pl.any_horizontal(pl.lit(False), *(
    functools.reduce(operator.and_, [pl.col("scheduler") == name,
                                     *(pl.col(p) == v for p, v in values.items())])
    for name, values in _ALWAYS.items()))
#: Those values in words, e.g. "fn_tor 0, fn_max 1".
ALWAYS_TEXT = "; ".join(dict.fromkeys(", ".join(f"{p} {v:g}" for p, v in values.items())
                                      for values in _ALWAYS.values()))
MIGRATING = tuple(name for name, row in SCHEDULERS.items() if "migrates" in row.needs)
#: What a saturation row shares with the runs it summarises: all but the offered load.
SATURATION_KEYS = tuple(k for k in CONFIG_KEYS if k != "offered_load")
#: A sweep has saturated when, past the knee of its carried load, the load rises by less
#: than this fraction of its slope before the knee (past saturation the queue, not the
#: machine, takes the extra load). Only whether there is a knee depends on it, not where.
SATURATION_SLOPE = 0.5
#: Knee positions tried, evenly between a sweep's second and second-to-last offered loads.
KNEE_STEPS = 2000

STATISTICS = {
    "mean": "mean over replications",
    "std": "sample standard deviation over replications (null below two)",
    "ci95": "half-width of the 95% confidence interval of the mean over replications "
            "(Student t; null below two)",
    "ci": "half-width of the confidence interval of the mean over replications at the "
          "row's ci_level (Student t; null below two)",
    "saturation": "over the configuration's offered-load sweep, the value at the knee of the "
                  "mean carried load (the best-fitting two-slope line through the origin; "
                  "null if the slope past the knee is not below half the slope before it)",
    "max": "over the configuration's offered-load sweep, the highest mean",
}
#: The fewest runs a confidence interval is printed on, as the figures draw their bars
#: (`simcore.report.plots`): with two, t stretches a 95% interval to 12.7 standard errors.
MIN_INTERVAL_RUNS = 3
#: The precision target of the mean response time (Chu's accuracy): its confidence
#: half-width (at the row's ci_level) is at most this fraction of it.
RESPONSE_TARGET = 0.05
#: The confidence level of each scheduler's response intervals.
_LEVELS = {name: row.confidence for name, row in SCHEDULERS.items()}
_RELATIVE = pl.col("mean_response_s_ci") / pl.col("mean_response_s_mean")


@dataclass(frozen=True)
class Statistic:
    """A table column: `statistic` of the store column `metric` over a configuration's
    runs, headed `label` in Markdown."""

    column: str
    metric: str
    statistic: str
    label: str


@dataclass(frozen=True)
class Derived:
    """A table column computed from the table's other columns (`expression`), headed
    `label` in Markdown."""

    column: str
    label: str
    unit: str | None
    meaning: str
    expression: pl.Expr


@dataclass(frozen=True)
class Table:
    """A result table: its statistics (and derived columns) of the configurations' runs,
    of the runs `rows` selects where given (all where None)."""

    name: str
    description: str
    statistics: tuple[Statistic, ...]
    derived: tuple[Derived, ...] = ()
    rows: pl.Expr | None = None


MAX_SUCCESSFUL = Statistic("max_successful_mean", "migrations_successful", "mean",
                           "max successful")
TABLE_DEFINITIONS = {t.name: t for t in (
    Table("utilization", "Capacity utilized per configuration over replications, with the "
          "offered load measured on the simulated jobs (what the stream asks: the offered_load "
          "target where arrivals are rescaled to one) and the carried load (what the machine "
          "ran).", (
              Statistic("utilization_mean", "utilization", "mean", "utilization"),
              Statistic("utilization_std", "utilization", "std", "sd"),
              Statistic("utilization_ci95", "utilization", "ci95", "± 95% CI"),
              Statistic("offered_load_actual_mean", "offered_load_actual", "mean",
                        "offered load"),
              Statistic("accepted_load_mean", "accepted_load", "mean", "carried load"))),
    Table("migrations", "Runs of migrating schedulers: migrations attempted and successful, "
          "time between them, and the maximum successful: the successful migrations of the "
          f"matching always-migrate runs ({ALWAYS_TEXT}; blank without such runs).", (
              Statistic("migrations_attempted_mean", "migrations_attempted", "mean",
                        "attempted"),
              Statistic("migrations_successful_mean", "migrations_successful", "mean",
                        "successful"),
              Statistic("mean_time_between_migrations_s_mean",
                        "mean_time_between_migrations_s", "mean", "time between"),
              MAX_SUCCESSFUL,
              Statistic("utilization_mean", "utilization", "mean", "utilization")),
          rows=pl.col("scheduler").is_in(MIGRATING)),
    Table("capacity", "Capacity utilized, unused and lost (Krevat eqs. 4.1-4.3) and out of "
          "service (failed units) as fractions of the machine's capacity over the run, with "
          "goodput (the work of the jobs that completed), means over replications.", (
              Statistic("utilized_mean", "utilization", "mean", "utilized"),
              Statistic("unused_mean", "unused", "mean", "unused"),
              Statistic("lost_mean", "lost", "mean", "lost"),
              Statistic("failed_mean", "failed", "mean", "failed"),
              Statistic("goodput_mean", "goodput", "mean", "goodput"))),
    Table("wait_slowdown", "Mean job wait and bounded slowdown over replications, the median "
          "slowdown, mean utilization and carried load (they differ for jobs with a BSP "
          "model, whose waits for their slowest process are lost, not utilized).", (
              Statistic("mean_wait_s_mean", "mean_wait_s", "mean", "mean wait"),
              Statistic("mean_wait_s_ci95", "mean_wait_s", "ci95", "± 95% CI"),
              Statistic("mean_bsld_mean", "mean_bsld", "mean", "bounded slowdown"),
              Statistic("mean_bsld_ci95", "mean_bsld", "ci95", "± 95% CI"),
              Statistic("median_bsld_mean", "median_bsld", "mean", "median slowdown"),
              Statistic("utilization_mean", "utilization", "mean", "utilization"),
              Statistic("accepted_load_mean", "accepted_load", "mean", "carried load"))),
    Table("saturation", "Per configuration swept over offered load: the knee where the mean "
          "carried load stops rising with the offered load (the knee of the two-slope line "
          "through the origin that fits the sweep best; blank if the slope past it is not "
          "below half the slope before it, or the sweep has under four loads), the offered "
          "and fitted carried loads there, with the highest of the sweep; n counts the "
          "sweep's runs.", (
              Statistic("saturation_load", "accepted_load", "saturation", "saturation load"),
              Statistic("at_offered_load", "offered_load", "saturation", "at offered load"),
              Statistic("max_accepted_load", "accepted_load", "max", "max carried load"),
              Statistic("max_offered_load", "offered_load", "max", "max offered load"))),
    Table("response", "Response time over replications: the mean with its confidence "
          "half-width (at ci_level: 90% for Chu's queue disciplines, Chu's level, else 95%), "
          "absolute and relative to the mean (target met: the half-width is at most "
          f"{RESPONSE_TARGET:.0%} of the mean, Chu's accuracy; rows that miss it need about "
          "the runs 'runs for target' says), the median, the SD of the jobs' responses "
          "within a run and the mean queue length.", (
              Statistic("mean_response_s_mean", "mean_response_s", "mean", "mean response"),
              Statistic("mean_response_s_ci", "mean_response_s", "ci", "± CI"),
              Statistic("median_response_s_mean", "median_response_s", "mean", "median"),
              Statistic("sd_response_s_mean", "sd_response_s", "mean", "jobs' sd"),
              Statistic("mean_queue_length_mean", "mean_queue_length", "mean", "queue")), (
              Derived("ci_level", "CI level", "fraction",
                      "confidence level of mean_response_s_ci: 0.90 for Chu's queue "
                      "disciplines (Chu's level), else 0.95",
                      pl.col("scheduler").replace_strict(_LEVELS, return_dtype=pl.Float64)),
              Derived("ci_relative", "± CI / mean", "fraction",
                      "mean_response_s_ci / mean_response_s_mean", _RELATIVE),
              Derived("meets_target", "target met", None,
                      f"ci_relative <= {RESPONSE_TARGET} (Chu's accuracy target); false "
                      "rows need more replications", _RELATIVE <= RESPONSE_TARGET),
              Derived("runs_for_target", "runs for target", "runs",
                      f"about n x (ci_relative / {RESPONSE_TARGET})^2, rounded up: the "
                      "replications that would meet the target (at least n)",
                      pl.struct(n="n", relative=_RELATIVE).map_elements(
                          lambda row: runs_for_target(row["n"], row["relative"],
                                                      RESPONSE_TARGET),
                          return_dtype=pl.Int64, skip_nulls=False)))),
    Table("response_by_size", "Chu's statistics by job size: the mean response of each "
          "quarter of the jobs ordered by size (q1 the smallest), and Chu's busy fraction, "
          "means over replications.", (
              *(Statistic(f"mean_response_s_q{q}_mean", f"mean_response_s_q{q}", "mean",
                          f"response q{q}") for q in range(1, 5)),
              Statistic("busy_fraction_mean", "busy_fraction", "mean", "busy"))),
    Table("fidelity", "Replays of a log (a converted trace that records waits, its arrivals "
          "and jobs kept; no other run has a row): how the simulated starts agree with the "
          "starts the log recorded, means over replications. The halves split the log's "
          "jobs by count in queue order, so a knob chosen on the first half is scored on "
          "the second.", (
              Statistic("fidelity_jobs_mean", "fidelity_jobs", "mean", "compared"),
              Statistic("fidelity_mean_wait_ratio_mean", "fidelity_mean_wait_ratio", "mean",
                        "mean wait ratio"),
              Statistic("fidelity_wait_rho_mean", "fidelity_wait_rho", "mean", "wait rho"),
              Statistic("fidelity_within_10_min_mean", "fidelity_within_10_min", "mean",
                        "within 10 min"),
              Statistic("fidelity_within_1_h_mean", "fidelity_within_1_h", "mean",
                        "within 1 h"),
              Statistic("fidelity_median_abs_error_s_mean", "fidelity_median_abs_error_s",
                        "mean", "median error"),
              *(Statistic(f"{fidelity_name('within_10_min', half)}_mean",
                          fidelity_name("within_10_min", half), "mean",
                          f"within 10 min, {label} half")
                for half, label in zip(HALVES, ("first", "second"), strict=True))),
          rows=pl.col("fidelity_jobs").is_not_null()),
)}
TABLES = tuple(TABLE_DEFINITIONS)

#: Units and meanings of every store column (the configuration keys and the metrics).
_COLUMNS = {c.name: c for c in (*IDENTITY, *PARAMETERS, *RUN_METRICS)}
_PARTITION_MEANINGS = {
    "experiment": "experiment name (config experiments)",
    "workload": "workload name (config workloads)",
    "machine": "machine name (config machines)",
    "policy": "policy name (config policies)",
}
_DECIMALS = {"fraction": 3, "s": 1, "count": 1, "ratio": 2}
#: The store column each table column summarises.
_METRIC_OF = {s.column: s.metric for t in TABLE_DEFINITIONS.values() for s in t.statistics}
#: Units of derived columns.
_DERIVED_UNITS = {d.column: d.unit for t in TABLE_DEFINITIONS.values() for d in t.derived}


def table_columns() -> dict[str, list[tuple[str, str | None, str]]]:
    """(column, unit, meaning) of every column of every table, in table order."""
    keys: list[tuple[str, str | None, str]] = [
        (k, None, _PARTITION_MEANINGS[k]) for k in PARTITIONS]
    keys += [(k, _COLUMNS[k].unit, _COLUMNS[k].meaning) for k in CONFIG_KEYS[len(PARTITIONS):]]
    keys.append(("n", "runs", "runs aggregated (replications: seeds)"))
    out = {}
    for table in TABLE_DEFINITIONS.values():
        stats = [] if table.name != "saturation" else [
            k for k in keys if k[0] in (*SATURATION_KEYS, "n")]
        for stat in table.statistics:
            metric = _COLUMNS[stat.metric]
            meaning = f"{STATISTICS[stat.statistic]} of {stat.metric} ({metric.meaning})"
            if stat is MAX_SUCCESSFUL:
                meaning = ("mean successful migrations of the always-migrate runs "
                           f"({ALWAYS_TEXT}) of the same configuration, Krevat's maximum; "
                           "blank without such runs")
            stats.append((stat.column, metric.unit, meaning))
        stats += [(d.column, d.unit, d.meaning) for d in table.derived]
        out[table.name] = (keys if table.name != "saturation" else []) + stats
    return out


def _ci95(values: Sequence[float | None]) -> float | None:
    """Half-width of the 95% confidence interval of the mean; null below two values."""
    return half_width(values, 0.95)


_REDUCERS = {"mean": mean, "std": std, "ci95": _ci95}


def _reduce(runs: pl.DataFrame, keys: Sequence[str],
            stats: Sequence[tuple[str, str, str]]) -> pl.DataFrame:
    """One row per distinct `keys`, with `n` (runs) and (output, column, reducer) stats."""
    columns = sorted({column for _, column, _ in stats})
    grouped = (runs.group_by(list(keys))
               .agg(pl.len().cast(pl.Int64).alias("n"), *(pl.col(c) for c in columns))
               .sort(list(keys)))
    out = grouped.select(*keys, "n")
    levels = [_LEVELS[s] for s in grouped["scheduler"].to_list()] if any(
        how == "ci" for _, _, how in stats) else []
    return out.with_columns(
        pl.Series(name, [half_width(v, level) for v, level in zip(
            grouped[column].to_list(), levels, strict=True)] if how == "ci" else
            [_REDUCERS[how](v) for v in grouped[column].to_list()], dtype=pl.Float64)
        for name, column, how in stats
    )


def aggregate(summaries: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The result tables (TABLE_DEFINITIONS) from store rows (`read_summaries`), over
    replications: each has the CONFIG_KEYS columns, `n` and its statistics, sorted by the
    keys (nulls first). The migrations table holds migrating schedulers' runs only, and
    its max_successful_mean is Krevat's "max successful": the mean successful migrations
    over the runs that share the configuration but for the policy name and thresholds and
    migrate always (their rows' `always_migrate`); null without such runs. The saturation table
    (keys SATURATION_KEYS) summarises the wait_slowdown table's carried loads (accepted_load), see
    `_saturation`."""
    keys = CONFIG_KEYS
    summaries = summaries.select(_used(summaries.columns))
    out: dict[str, pl.DataFrame] = {}
    for table in TABLE_DEFINITIONS.values():
        if table.name == "saturation":
            out[table.name] = _saturation(out["wait_slowdown"])
            continue
        rows = summaries if table.rows is None else summaries.filter(table.rows)
        stats = [s for s in table.statistics if s is not MAX_SUCCESSFUL]
        reduced = _reduce(rows, keys, [(s.column, s.metric, s.statistic) for s in stats])
        if MAX_SUCCESSFUL in table.statistics:
            always = _reduce(
                rows.filter(ALWAYS_MIGRATE),
                ALWAYS_MATCH, [(MAX_SUCCESSFUL.column, MAX_SUCCESSFUL.metric, "mean")],
            ).drop("n")
            reduced = (reduced.join(always, on=list(ALWAYS_MATCH), how="left", nulls_equal=True)
                       .select(*keys, "n", *(s.column for s in table.statistics))
                       .sort(list(keys)))
        out[table.name] = reduced.with_columns(d.expression.alias(d.column)
                                               for d in table.derived)
    return out


def _used(columns: Sequence[str]) -> list[str]:
    """The columns of `columns` the tables read: the keys, every statistic's metric and
    every column their row filters name (a million runs hold a few of their columns)."""
    used = {*CONFIG_KEYS, *ALWAYS_MIGRATE.meta.root_names()}
    for table in TABLE_DEFINITIONS.values():
        used |= {s.metric for s in table.statistics}
        if table.rows is not None:
            used |= set(table.rows.meta.root_names())
    return [c for c in columns if c in used]


def saturation(summaries: pl.DataFrame) -> pl.DataFrame:
    """The saturation table of store rows (`read_summaries`) alone."""
    return _saturation(_reduce(summaries, CONFIG_KEYS,
                               [("accepted_load_mean", "accepted_load", "mean")]))


def knee(offered: Sequence[float], carried: Sequence[float]
         ) -> tuple[float, float, float] | None:
    """The knee of a carried-load curve: the two-slope line through the origin,
    carried = s1 min(x, k) + s2 max(x - k, 0), that fits the points in least squares,
    with k tried at KNEE_STEPS + 1 positions from the second to the second-to-last offered
    load (the first that fits best). Returns (k, s1 k, s2 / s1); None for fewer than four
    points. The knee moves continuously with the points: no threshold decides where it
    is, so a small change of the data or of SATURATION_SLOPE does not make it jump a grid
    step, as a first-step-below-a-threshold rule does."""
    x, y = np.asarray(offered, dtype=float), np.asarray(carried, dtype=float)
    if x.size < 4:
        return None
    k = np.linspace(x[1], x[-2], KNEE_STEPS + 1)[:, None]
    u, v = np.minimum(x, k), np.maximum(x - k, 0.0)
    uu, uv, vv = (u * u).sum(1), (u * v).sum(1), (v * v).sum(1)
    uy, vy = (u * y).sum(1), (v * y).sum(1)
    det = uu * vv - uv * uv
    s1, s2 = (uy * vv - vy * uv) / det, (vy * uu - uy * uv) / det
    best = int(np.argmax(s1 * uy + s2 * vy))  # least squares: the largest explained sum
    at = float(k[best, 0])
    return at, float(s1[best]) * at, float(s2[best] / s1[best])


def bend(offered: Sequence[float], carried: Sequence[float]) -> tuple[float, float] | None:
    """The `knee` (offered load, fitted level) where the curve saturates: its slope past
    the knee below SATURATION_SLOPE times the slope before; None where it does not."""
    found = knee(offered, carried)
    return found[:2] if found is not None and found[2] < SATURATION_SLOPE else None


def _saturation(table: pl.DataFrame) -> pl.DataFrame:
    """Per configuration swept over offered load (rows of `table` sharing
    SATURATION_KEYS): the `knee` of its mean carried load, the offered and fitted
    carried loads there (null when the slope past the knee is not below SATURATION_SLOPE
    times the slope before it), and the highest of the sweep; `n` sums the sweep's runs."""
    swept = table.filter(pl.col("offered_load").is_not_null()
                         & pl.col("accepted_load_mean").is_not_null())
    keys = list(SATURATION_KEYS)
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        **{k: swept.schema[k] for k in keys}, "n": pl.Int64,
              "saturation_load": pl.Float64, "at_offered_load": pl.Float64,
              "max_accepted_load": pl.Float64, "max_offered_load": pl.Float64}
    rows = []
    for key, group in swept.sort([*keys, "offered_load"]).group_by(keys, maintain_order=True):
        load, carried = group["offered_load"].to_list(), group["accepted_load_mean"].to_list()
        found = bend(load, carried)
        rows.append({**dict(zip(keys, key, strict=True)), "n": int(group["n"].sum()),
                     "saturation_load": None if found is None else found[1],
                     "at_offered_load": None if found is None else found[0],
                     "max_accepted_load": max(carried), "max_offered_load": load[-1]})
    return pl.DataFrame(rows, schema=schema).sort(keys)


def _cell(value: object, decimals: int | None) -> str:
    """Results to `decimals` places, parameters (decimals None) in their shortest form."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{decimals}f}" if decimals is not None else f"{value:g}"
    return str(value).replace("|", "\\|")


#: Units not worth a header's width: ratios and fractions (the table's text says of what).
_DIMENSIONLESS = ("fraction", "prob", "factor", "ratio")


def _unit(column: str) -> str | None:
    """The unit of a table column: its metric's, or a derived column's own."""
    if column in _DERIVED_UNITS:
        return _DERIVED_UNITS[column]
    metric = _COLUMNS.get(_METRIC_OF.get(column, column))
    return metric.unit if metric is not None else None


def _header(column: str, label: str | None = None) -> str:
    unit = _unit(column)
    return (label or column) + (f" ({unit})" if unit and unit not in _DIMENSIONLESS else "")


def markdown(name: str, table: pl.DataFrame) -> str:
    """A Markdown rendering to read: one section per experiment; settings with the same
    value in every row of the section stated once above it (`_every_row`), a column equal
    as printed to an earlier one in every row named instead of shown, names and specs of
    machines and policies in a legend, short headers with units, rounded results,
    confidence intervals only on rows of MIN_INTERVAL_RUNS runs or more. The CSV and
    Parquet files keep every column and value."""
    definition = TABLE_DEFINITIONS[name]
    lines = [f"# {name}", "", *textwrap.wrap(definition.description, 100)]
    if table.is_empty():
        return "\n".join([*lines, "", "(no rows)"]) + "\n"
    head = len(lines)
    columns: tuple[Statistic | Derived, ...] = (*definition.statistics, *definition.derived)
    labels = {s.column: s.label for s in columns}
    intervals = [c for c in labels if c in _INTERVALS]
    blanks = False
    for experiment in sorted(table["experiment"].unique().to_list()):
        rows = table.filter(pl.col("experiment") == experiment)
        few = pl.col("n") < MIN_INTERVAL_RUNS
        rows = rows.with_columns(pl.when(few).then(None).otherwise(pl.col(c)).alias(c)
                                 for c in intervals)
        swept = _swept(rows)
        keys = [k for k in CONFIG_KEYS if k in rows.columns and (k in swept or k not in (
            "experiment", "machine_spec", "scheduler", *POLICY_COLUMNS))]
        present = [k for k in keys if rows[k].null_count() < rows.height]
        fixed = [k for k in present if rows[k].n_unique() == 1]
        results = [c for c in ("n", *labels) if rows[c].null_count() < rows.height]
        varying = [k for k in present if k not in fixed]
        # a setting the same in every row is stated above the grid: a result printed
        # like it is a coincidence, not a copy (a 95% CI of 0.001 beside a 0.001-s setting)
        copies = _copies(rows, [*varying, *results], results)
        shown = varying + [c for c in results if c not in copies]
        blanks |= any(rows[c].null_count() for c in shown if c not in intervals)
        lines += ["", f"## {experiment}", ""]
        every = ", ".join(_setting(k, rows[k][0]) for k in fixed if _matters(k, rows[k][0]))
        if every:
            lines += [*textwrap.wrap(f"Every row: {every}.", 100), ""]
        if intervals and rows.filter(few).height:
            lines += [*textwrap.wrap(_few(rows), 100), ""]
        if "meets_target" in rows.columns:
            lines += [*textwrap.wrap(_target(rows), 100), ""]
        if copies:
            equal = ", ".join(f"{labels[c]} as {labels.get(first, first)}"
                              for c, first in copies.items())
            lines += [*textwrap.wrap("Not shown, the same in every row (as printed) as another "
                                     f"column: {equal}.", 100), ""]
        lines += ["Machines:", *_legend(rows, "machine", ["machine_spec"]), "",
                  "Policies:", *_policies(rows, swept), ""]
        lines += _grid(rows, shown, labels)
    if blanks:
        lines[head:head] = ["", *textwrap.wrap(
            "Blank cells: a statistic undefined for these runs (fewer than two values, or no "
            "always-migrate runs to compare with).", 100)]
    return "\n".join(lines) + "\n"


#: The columns that are confidence intervals (statistics "ci95" and "ci"), their level, or
#: rest on one (the half-width relative to the mean, the precision target): blank on rows
#: of fewer than MIN_INTERVAL_RUNS runs.
_INTERVALS = frozenset({
    *(s.column for t in TABLE_DEFINITIONS.values() for s in t.statistics
      if s.statistic in ("ci95", "ci")),
    "ci_level", "ci_relative", "meets_target", "runs_for_target"})


def _matters(column: str, value: object) -> bool:
    """Whether a setting fixed in every row of a section is worth stating: a name
    (experiment, workload, machine, policy), or a workload transform at a value other
    than its default (a transform at its default leaves the jobs as they are)."""
    field = transforms().get(column)
    return field is None or value != field.metadata["parameter"].default


def _copies(rows: pl.DataFrame, candidates: Sequence[str], results: Sequence[str]
            ) -> dict[str, str]:
    """Result columns equal in every row, as printed, to an earlier column of
    `candidates` not itself a copy: {copy: the column it equals}."""
    copies: dict[str, str] = {}
    for c in results:
        if c == "n":
            continue
        printed = _printed(rows, c)
        first = next((f for f in candidates[:candidates.index(c)] if f not in copies
                      and rows[f].dtype == rows[c].dtype and (
                          rows[c].eq_missing(rows[f]).all() or (
                              rows[f].dtype.is_float() and printed == _printed(rows, f, c)))),
                     None)
        if first is not None:
            copies[c] = first
    return copies


def _printed(rows: pl.DataFrame, column: str, like: str | None = None) -> list[str]:
    """The cells of `column` as the grid prints those of `like` (itself if None)."""
    decimals = _decimals(like or column)
    return [_cell(v, decimals if decimals is not None else 3) for v in rows[column].to_list()]


def _decimals(column: str) -> int | None:
    """Decimals a column is printed to: None for parameters (shortest form), else by
    unit, and one for a statistic of a whole number (a mean of counts or of jobs)."""
    if column in CONFIG_KEYS or column == "n":
        return None
    metric = _COLUMNS.get(_METRIC_OF.get(column, column))
    if metric is not None and metric.type is int:
        return 1
    return _DECIMALS.get(_unit(column) or "", 3)


def _few(rows: pl.DataFrame) -> str:
    """What the confidence intervals of a section's rows of too few runs are, once."""
    few = rows.filter(pl.col("n") < MIN_INTERVAL_RUNS)["n"]
    if few.len() == rows.height:
        runs = "run" if few.max() == 1 else "runs"
        return (f"No confidence intervals: n = {_count(few)} {runs} per row, too few for an "
                "interval (the figures draw none either).")
    return (f"Confidence intervals blank on the rows of n = {_count(few)} runs, too few for "
            f"an interval (at least {MIN_INTERVAL_RUNS}, as in the figures).")


def _target(rows: pl.DataFrame) -> str:
    """Whether an experiment's rows meet the response precision target, in one sentence."""
    judged = rows.filter(pl.col("meets_target").is_not_null())
    what = (f"Precision target (confidence half-width at most {RESPONSE_TARGET:.0%} of the "
            "mean response)")
    if not judged.height:
        return f"{what}: not judged, fewer than {MIN_INTERVAL_RUNS} runs per row."
    met = int(judged["meets_target"].sum())
    text = f"{what}: met in {met} of {judged.height} rows"
    missed = judged.filter(~pl.col("meets_target"))
    if not missed.height:
        return text + "."
    return (f"{text}, NOT met in {missed.height}: those rows rest on "
            f"{_count(missed['n'])} runs and need about {_count(missed['runs_for_target'])} "
            "(runs for target).")


def extremes(column: pl.Series) -> tuple[float, float]:
    """The smallest and the largest value of a numeric column that holds any."""
    low, high = column.min(), column.max()
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        raise TypeError(f"column {column.name!r} holds no numbers: min {low!r}, max {high!r}")
    return float(low), float(high)


def _count(n: pl.Series) -> str:
    low, high = map(int, extremes(n))
    return str(low) if low == high else f"{low}-{high}"


def _capabilities(machine_spec: str) -> frozenset[str]:
    """The capabilities of the allocator of a machine_spec ("torus:4x4x8",
    "mesh:32x32 allocator=bl")."""
    head, *options = machine_spec.split()
    allocator = dict(o.split("=", 1) for o in options).get("allocator")
    return ALLOCATORS[allocator or MachineSpec.parse(head).allocator].capabilities


def _swept(rows: pl.DataFrame) -> list[str]:
    """The policy parameters that differ within one policy (grid axes over parameters), and
    machine_spec where it differs within one machine (axes over allocator options): shown
    as columns rather than in the legends."""
    out = [c for c in POLICY_COLUMNS if c in rows.columns and extremes(rows.group_by(
        "machine", "policy").agg(pl.col(c).n_unique())[c])[1] > 1]
    if extremes(rows.group_by("machine").agg(pl.col("machine_spec").n_unique())
                ["machine_spec"])[1] > 1:
        out.append("machine_spec")
    return out


def _policies(rows: pl.DataFrame, swept: Sequence[str] = ()) -> list[str]:
    """One line per policy: `PolicySpec.describe` on its machines (parameters that mean
    nothing on a machine left out, parameters in `swept` said to be a column); a policy
    described differently on different machines gets a line per description, naming the
    machines."""
    columns = ["policy", "machine", "machine_spec", "scheduler", *POLICY_COLUMNS]
    out = []
    for policy, group in rows.select(columns).unique().sort(["policy", "machine"]).group_by(
            "policy", maintain_order=True):
        described: dict[str, list[str]] = {}
        for row in group.iter_rows(named=True):
            spec = PolicySpec(row["scheduler"], **{c: row[c] for c in POLICY_COLUMNS
                                                   if row[c] is not None})
            text = spec.describe(_capabilities(row["machine_spec"]))
            for name in swept:
                text = re.sub(rf" {name}=\S+", f" {name}=(a column)", text)
            described.setdefault(text, []).append(row["machine"])
        for text, machines in described.items():
            where = "" if len(described) == 1 else f" (on {', '.join(machines)})"
            out.append(f"- {policy[0]}{where} = {text}")
    return out


def _legend(rows: pl.DataFrame, name: str, columns: list[str]) -> list[str]:
    """One line per name: its spec; a name whose spec differs by machine gets a line per
    machine."""
    variants = rows.select(*dict.fromkeys([name, *columns, "machine"])).unique()
    out = []
    for key in sorted(variants[name].unique().to_list()):
        group = variants.filter(pl.col(name) == key)
        sets = group.select(columns).unique().sort(columns)
        for values in sets.iter_rows(named=True):
            text = " ".join([str(values[columns[0]]), *(
                f"{c}={_cell(values[c], None)}" for c in columns[1:] if values[c] is not None)])
            machines = group.filter(pl.all_horizontal(
                pl.col(c).eq_missing(pl.lit(values[c])) for c in columns))["machine"]
            where = "" if sets.height == 1 else f" (on {', '.join(sorted(machines))})"
            out.append(f"- {key}{where} = {text}")
    return out


def _grid(rows: pl.DataFrame, columns: list[str], labels: dict[str, str]) -> list[str]:
    """The Markdown table of `columns`: results rounded by unit, parameters as they are."""
    header = [_header(c, labels.get(c)) for c in columns]
    decimals = [_decimals(c) for c in columns]
    cells = [[_cell(v, d) for v, d in zip(row, decimals, strict=True)]
             for row in rows.select(columns).iter_rows()]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    numeric = [rows[c].dtype.is_numeric() for c in columns]

    def line(values: Sequence[str]) -> str:
        padded = (v.rjust(w) if num else v.ljust(w)
                  for v, w, num in zip(values, widths, numeric, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if num else "-")
                          for w, num in zip(widths, numeric, strict=True)) + "|"
    return [line(header), rule, *(line(r) for r in cells)]


def _setting(column: str, value: object) -> str:
    unit = _COLUMNS[column].unit if column in _COLUMNS else None
    shown = unit and unit not in _DIMENSIONLESS
    return f"{column} = {_cell(value, None)}" + (f" {unit}" if shown else "")


def write_tables(store: str | os.PathLike[str] | None, out_dir: str | os.PathLike[str],
                 summaries: Sequence[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Aggregate the shard files `summaries` (else every shard under the `store`
    directory) into `out_dir` as <table>.parquet (zstd), .csv (with <table>.columns.csv:
    each column's unit and meaning) and .md, each written atomically, then their stamp
    (`simcore.base.stamps`); returns the paths in a fixed order. The files an earlier
    call stamped there are removed first, so no table of it survives beside these.

    Deterministic: the same store gives byte-identical CSV and Markdown and Parquet files
    of identical content. An empty store is an error rather than empty tables, since it
    almost always means a wrong root or a sweep that has not run.
    """
    # read_summaries reads `store` only without `summaries`, and is typed for that case
    runs = read_summaries(store, summaries)
    if runs.is_empty():
        raise SimcoreError(f"no results under {store}: no summary.parquet shard files to "
                           "aggregate")
    out = Path(out_dir)
    remove_stamped(out)
    paths = []
    for name, table in aggregate(runs).items():
        parquet, csv, md = (out / f"{name}.{ext}" for ext in ("parquet", "csv", "md"))
        columns = out / f"{name}.columns.csv"
        write_table(table.to_arrow(), parquet, {"table": name})
        atomic_write_bytes(csv, table.write_csv().encode())
        atomic_write_bytes(md, markdown(name, table).encode())
        atomic_write_bytes(columns, pl.DataFrame(
            table_columns()[name], schema=["column", "unit", "meaning"], orient="row")
            .write_csv().encode())
        paths += [parquet, csv, columns, md]
    write_stamp(out, paths)
    return paths
