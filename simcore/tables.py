"""Result tables: the store's runs aggregated over replications, one row per configuration.

A configuration is every column that says what was simulated (CONFIG_KEYS: the partition
columns, machine_spec, scheduler, the workload transforms and the policy parameters); runs
of one configuration differ only in `seed` (and so in `run_key`). Nulls in key columns are
values like any other (Krevat's experiments have no offered_load, unwired machines no
p_fat), so grouping and joining are null-safe.

Five tables (see `aggregate`): `utilization`, `migrations`, `capacity`, `wait_slowdown`,
`saturation`.
Statistics skip null and NaN values (NaN marks an undefined metric, e.g. the time between
migrations of a run with fewer than two); `n` counts runs. Sums are `math.fsum`, exactly
rounded, so every float is independent of row order and of how the store was sharded.
Confidence half-widths are Student t: t(0.975, k-1) * std / sqrt(k) over k values.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from simcore.atomic import atomic_write_bytes
from simcore.errors import SimcoreError
from simcore.metrics import RUN_METRICS
from simcore.policy import SCHEDULERS
from simcore.store import PARAMETERS, PARTITIONS, POLICY_COLUMNS, read_summaries, write_table
from simcore.workload.transforms import transforms

TRANSFORMS = tuple(transforms())
CONFIG_KEYS = (*PARTITIONS, "machine_spec", "scheduler", *TRANSFORMS, *POLICY_COLUMNS)
#: What an always-migrate run shares with the runs it bounds: all but the policy's name
#: and its migration thresholds.
ALWAYS_MATCH = tuple(k for k in CONFIG_KEYS if k not in ("policy", "fn_tor", "fn_max"))
MIGRATING = tuple(name for name, row in SCHEDULERS.items() if "migrates" in row.needs)
TABLES = ("utilization", "migrations", "capacity", "wait_slowdown", "saturation")
#: What a saturation row shares with the runs it summarises: all but the offered load.
SATURATION_KEYS = tuple(k for k in CONFIG_KEYS if k != "offered_load")
#: The accepted load has stopped rising when it rises by less than this fraction of the
#: offered load's step (past saturation the queue, not the machine, takes the extra load).
SATURATION_SLOPE = 0.5

#: Units of parameters and metrics, for Markdown headers (statistics inherit the unit of
#: their metric: `mean_wait_s_ci95` is in seconds).
UNITS = {**{c.name: c.unit for c in (*PARAMETERS, *RUN_METRICS) if c.unit},
         "n": "runs", "utilized": "fraction", "max_successful": "count", "n_loads": "loads",
         "saturation_load": "fraction", "at_offered_load": "fraction",
         "max_accepted_load": "fraction", "max_offered_load": "fraction"}
_DECIMALS = {"fraction": 4, "s": 1, "count": 2, "ratio": 2}
_STATS = ("_mean", "_std", "_ci95")

_DESCRIPTIONS = {
    "utilization": "Capacity utilized per configuration over replications: mean, sample "
                   "standard deviation and 95% confidence half-width (Student t), with the "
                   "mean offered load actually achieved.",
    "migrations": "Migration and B+M runs: mean migrations attempted and successful, mean "
                  "time between migrations, and max_successful_mean, the mean successful "
                  "migrations of the matching always-migrate runs (fn_tor=0, fn_max=1).",
    "capacity": "Capacity utilized, unused and lost as fractions of the total (means over "
                "replications).",
    "wait_slowdown": "Mean job wait and bounded slowdown (means over replications, 95% "
                     "confidence half-widths) with mean utilization; median bounded "
                     "slowdown, mean and median response and accepted load (means).",
    "saturation": "Per configuration swept over offered load: where the mean accepted "
                  "load stops rising (it rises by less than half the offered load's next "
                  "step): the accepted load there (saturation_load; empty if it never "
                  "stops within the grid) and that offered load, with the highest "
                  "accepted and offered loads of the sweep.",
}


@functools.cache
def t_quantile(p: float, df: int) -> float:
    """The p-quantile (0.5 <= p < 1) of Student's t with `df` >= 1 degrees of freedom.

    Exact, without scipy or a table: for integer df the two-sided probability
    A(t) = P(|T| <= t) is a finite trigonometric series in theta = atan(t / sqrt(df))
    (Abramowitz & Stegun 26.7.3/26.7.4), increasing in theta; bisection on theta in
    (0, pi/2) solves A = 2p - 1 down to adjacent doubles. Agrees with scipy to ~1e-15
    relative for replication-sized df (1e-12 at df = 20000). t(0.975, 2) = 4.302653,
    t(0.975, 30) = 2.042272.
    """
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    target = 2 * p - 1
    lo, hi = 0.0, math.pi / 2
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            return math.sqrt(df) * math.tan(mid)
        if _t_two_sided(mid, df) < target:
            lo = mid
        else:
            hi = mid


def _t_two_sided(theta: float, df: int) -> float:
    """P(|T| <= sqrt(df) tan(theta)) for Student's t with df degrees of freedom."""
    c2 = math.cos(theta) ** 2
    terms, term = [1.0], 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            terms.append(term)
        series = math.sin(theta) * math.cos(theta) * math.fsum(terms) if df > 1 else 0.0
        return 2 / math.pi * (theta + series)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        terms.append(term)
    return math.sin(theta) * math.fsum(terms)


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(v)]


def _mean(values: Sequence[float | None]) -> float | None:
    """Exactly rounded mean of the finite values; null if there are none."""
    xs = _finite(values)
    return math.fsum(xs) / len(xs) if xs else None


def _std(values: Sequence[float | None]) -> float | None:
    """Sample standard deviation (n - 1) of the finite values; null below two."""
    xs = _finite(values)
    if len(xs) < 2:
        return None
    mean = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def _ci95(values: Sequence[float | None]) -> float | None:
    """Half-width of the 95% confidence interval of the mean; null below two values."""
    std = _std(values)
    if std is None:
        return None
    k = len(_finite(values))
    return t_quantile(0.975, k - 1) * std / math.sqrt(k)


_REDUCERS = {"mean": _mean, "std": _std, "ci95": _ci95}


def _reduce(runs: pl.DataFrame, keys: Sequence[str],
            stats: Sequence[tuple[str, str, str]]) -> pl.DataFrame:
    """One row per distinct `keys`, with `n` (runs) and (output, column, reducer) stats."""
    columns = sorted({column for _, column, _ in stats})
    grouped = (runs.group_by(list(keys))
               .agg(pl.len().cast(pl.Int64).alias("n"), *(pl.col(c) for c in columns))
               .sort(list(keys)))
    out = grouped.select(*keys, "n")
    return out.with_columns(
        pl.Series(name, [_REDUCERS[how](v) for v in grouped[column].to_list()],
                  dtype=pl.Float64)
        for name, column, how in stats
    )


def aggregate(summaries: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The four result tables from store rows (`read_summaries`), over replications.

    - utilization: n, utilization_mean/_std/_ci95, offered_load_actual_mean;
    - migrations (migration and bm runs): n, migrations_attempted_mean,
      migrations_successful_mean, mean_time_between_migrations_s_mean, max_successful_mean,
      utilization_mean. max_successful_mean is Krevat's "max successful": the mean
      successful migrations over the runs that share the configuration but for the policy
      name and thresholds and migrate always (fn_tor=0, fn_max=1); null without such runs;
    - capacity: n, utilized_mean, unused_mean, lost_mean;
    - wait_slowdown: n, mean_wait_s_mean/_ci95, mean_bsld_mean/_ci95, utilization_mean,
      median_bsld_mean, mean_response_s_mean, median_response_s_mean, accepted_load_mean;
    - saturation (configurations swept over offered load, see `_saturation`): n_loads,
      saturation_load, at_offered_load, max_accepted_load, max_offered_load.

    Every table carries its keys (CONFIG_KEYS; saturation: SATURATION_KEYS) first and is
    sorted by them (nulls first).
    """
    keys = CONFIG_KEYS
    utilization = _reduce(summaries, keys, [
        ("utilization_mean", "utilization", "mean"),
        ("utilization_std", "utilization", "std"),
        ("utilization_ci95", "utilization", "ci95"),
        ("offered_load_actual_mean", "offered_load_actual", "mean"),
    ])
    migrating = summaries.filter(pl.col("scheduler").is_in(MIGRATING))
    always = _reduce(
        migrating.filter((pl.col("fn_tor") == 0.0) & (pl.col("fn_max") == 1.0)),
        ALWAYS_MATCH, [("max_successful_mean", "migrations_successful", "mean")],
    ).drop("n")
    migrations = (_reduce(migrating, keys, [
        ("migrations_attempted_mean", "migrations_attempted", "mean"),
        ("migrations_successful_mean", "migrations_successful", "mean"),
        ("mean_time_between_migrations_s_mean", "mean_time_between_migrations_s", "mean"),
        ("utilization_mean", "utilization", "mean"),
    ]).join(always, on=list(ALWAYS_MATCH), how="left", nulls_equal=True)
      .select(*keys, "n", "migrations_attempted_mean", "migrations_successful_mean",
              "mean_time_between_migrations_s_mean", "max_successful_mean", "utilization_mean")
      .sort(list(keys)))
    capacity = _reduce(summaries, keys, [
        ("utilized_mean", "utilization", "mean"),
        ("unused_mean", "unused", "mean"),
        ("lost_mean", "lost", "mean"),
    ])
    wait_slowdown = _reduce(summaries, keys, [
        ("mean_wait_s_mean", "mean_wait_s", "mean"),
        ("mean_wait_s_ci95", "mean_wait_s", "ci95"),
        ("mean_bsld_mean", "mean_bsld", "mean"),
        ("mean_bsld_ci95", "mean_bsld", "ci95"),
        ("utilization_mean", "utilization", "mean"),
        ("median_bsld_mean", "median_bsld", "mean"),
        ("mean_response_s_mean", "mean_response_s", "mean"),
        ("median_response_s_mean", "median_response_s", "mean"),
        ("accepted_load_mean", "accepted_load", "mean"),
    ])
    return {"utilization": utilization, "migrations": migrations, "capacity": capacity,
            "wait_slowdown": wait_slowdown, "saturation": _saturation(wait_slowdown)}


def _saturation(table: pl.DataFrame) -> pl.DataFrame:
    """Per configuration swept over offered load (rows of `table` sharing
    SATURATION_KEYS): where the mean accepted load stops rising, i.e. the first offered
    load after which it rises by less than SATURATION_SLOPE times the offered load's
    step, and the accepted load there (null when it never stops within the grid)."""
    swept = table.filter(pl.col("offered_load").is_not_null()
                         & pl.col("accepted_load_mean").is_not_null())
    keys = list(SATURATION_KEYS)
    schema = {**{k: swept.schema[k] for k in keys}, "n_loads": pl.Int64,
              "saturation_load": pl.Float64, "at_offered_load": pl.Float64,
              "max_accepted_load": pl.Float64, "max_offered_load": pl.Float64}
    rows = []
    for key, group in swept.sort([*keys, "offered_load"]).group_by(keys, maintain_order=True):
        load, accepted = group["offered_load"].to_list(), group["accepted_load_mean"].to_list()
        stop = next((i for i in range(len(load) - 1) if accepted[i + 1] - accepted[i]
                     < SATURATION_SLOPE * (load[i + 1] - load[i])), None)
        rows.append({**dict(zip(keys, key, strict=True)), "n_loads": len(load),
                     "saturation_load": None if stop is None else accepted[stop],
                     "at_offered_load": None if stop is None else load[stop],
                     "max_accepted_load": max(accepted), "max_offered_load": load[-1]})
    return pl.DataFrame(rows, schema=schema).sort(keys)


def _unit(column: str) -> str | None:
    for suffix in _STATS:
        if column.endswith(suffix) and column[: -len(suffix)] in UNITS:
            return UNITS[column[: -len(suffix)]]
    return UNITS.get(column)


def _cell(value: object, decimals: int | None) -> str:
    """Results to `decimals` places, parameters (decimals None) in their shortest form."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{decimals}f}" if decimals is not None else f"{value:g}"
    return str(value).replace("|", "\\|")


def markdown(name: str, table: pl.DataFrame) -> str:
    """A readable Markdown rendering of one table: units in the headers, floats rounded,
    columns that are null in every row left out (the CSV and Parquet files keep them)."""
    if table.is_empty():
        return f"# {name}\n\n{_DESCRIPTIONS[name]}\n\n(no rows)\n"
    columns = [c for c in table.columns if table[c].null_count() < table.height]
    units = [_unit(c) for c in columns]
    header = [c if u is None else f"{c} ({u})" for c, u in zip(columns, units, strict=True)]
    decimals = [None if c in (*CONFIG_KEYS, "at_offered_load", "max_offered_load")
                else _DECIMALS.get(u or "") for c, u in zip(columns, units, strict=True)]
    rows = [[_cell(v, d) for v, d in zip(row, decimals, strict=True)]
            for row in table.select(columns).iter_rows()]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    numeric = [table[c].dtype.is_numeric() for c in columns]

    def line(cells: Sequence[str]) -> str:
        padded = (cell.rjust(w) if num else cell.ljust(w)
                  for cell, w, num in zip(cells, widths, numeric, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if num else "-")
                          for w, num in zip(widths, numeric, strict=True)) + "|"
    lines = [f"# {name}", "", _DESCRIPTIONS[name], "", line(header), rule,
             *(line(r) for r in rows)]
    return "\n".join(lines) + "\n"


def write_tables(store: str | os.PathLike[str] | None, out_dir: str | os.PathLike[str],
                 summaries: Sequence[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Aggregate the shard files `summaries` (else every shard under the `store`
    directory) into `out_dir` as <table>.parquet (zstd), .csv and .md, each written atomically;
    returns the paths in a fixed order.

    Deterministic: the same store gives byte-identical CSV and Markdown and Parquet files
    of identical content. An empty store is an error rather than empty tables, since it
    almost always means a wrong root or a sweep that has not run.
    """
    summaries = read_summaries(store, summaries)
    if summaries.is_empty():
        raise SimcoreError(f"no results under {store}: no summary.parquet shard files to "
                           "aggregate")
    out = Path(out_dir)
    paths = []
    for name, table in aggregate(summaries).items():
        parquet, csv, md = (out / f"{name}.{ext}" for ext in ("parquet", "csv", "md"))
        write_table(table.to_arrow(), parquet, {"table": name})
        atomic_write_bytes(csv, table.write_csv().encode())
        atomic_write_bytes(md, markdown(name, table).encode())
        paths += [parquet, csv, md]
    return paths
