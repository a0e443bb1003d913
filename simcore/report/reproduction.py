"""The reproduction report: each seed's published numbers beside ours, from the result store.

The papers' numbers are typed in once, in a data file (`config/published.yaml`), each as
the paper printed it, with where it comes from (page, figure or table), a query saying
which of our runs answer it, and a sentence on why the two differ. `report` evaluates
every query on a dataset's store, gives each claim its verdict (`simcore.report.verdicts`)
and writes the verdicts and distinct statements counted per seed, then one Markdown section
per seed: what the paper did, our configuration, every way it departs from the paper's
(`departures`), a table of paper (with its tolerance, kind and source) / ours (with its 95%
interval) / n / difference / verdict / why,
our own results without a published value apart, and the figures of the seed's
experiments. A seed whose experiments are not in the store says so. Editing a published
number and running again changes only the report.

A query selects store rows by column values (`where`) and reduces a metric over them,
averaging over seeds first (a metric: a summary column, or one `simcore.report.job_metrics`
derives from the per-job rows a shard kept, e.g. `utilization_allocated`):

- `{metric: M}`: the mean of M over the selected runs;
- `{max: M}`: the largest mean of M over the selected configurations (e.g. the
  saturation utilization: the highest utilization over the load axis);
- `{change: M, of: {...}, over: {...}}`: relative change of M from the `over` selection to
  the `of` selection (both inside `where`), e.g. migration over FCFS; M may also be a
  query of another kind, whose value on each selection is compared (e.g.
  `{saturation: at_offered_load}`: how much later one scheduler saturates than another);
- `{ratio: [A, B]}`: mean of A over mean of B (e.g. successful / attempted migrations);
- `{saturation: C}`: column C (`saturation_load` or `at_offered_load`) of the saturation
  table (`simcore.report.tables`) of the selected runs, which must be one configuration swept
  over offered load (e.g. where a scheduler's carried load stops rising);
- `{knee: M, along: A}`: the level of M at the knee of its mean per value of column A
  (`simcore.report.tables.knee`; none where M does not bend), e.g. the utilization where it
  stops rising with Krevat's runtime scale c.

A `where` value may be a list: any of its values (e.g. two experiments sweeping one
policy over two ranges of c).

`evaluate_seeds` gives the same query on each seed's runs alone: our interval is over
these per-seed values (a change's: paired, seed by seed). A claim with `outside_model:` or
`not_applicable:` needs no query. The rows also go beside the report as a verdict table
(`verdict_table`, `verdict_paths`).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from simcore.base.atomic import atomic_path
from simcore.base.errors import ConfigError
from simcore.base.stamps import write_stamp
from simcore.base.yamlfiles import read_yaml
from simcore.report.job_metrics import check_job_metric, with_job_metrics
from simcore.report.tables import CONFIG_KEYS, bend, extremes, saturation
from simcore.report.verdicts import (
    LABELS,
    RULE,
    RULE_READING,
    SCORED,
    VERDICTS,
    Printed,
    Verdict,
    check_claim,
    compared,
    judge,
)
from simcore.sweep.store import read_summaries, write_table

QUERY_KINDS = ("metric", "max", "change", "ratio", "saturation", "knee")


def load_published(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The published numbers, checked: every seed has a title and claims, every claim a
    source, a paper value (or null), one query, and what its verdict needs
    (`simcore.report.verdicts.check_claim`)."""
    document = read_yaml(path, ConfigError)
    seeds = document.get("seeds") if isinstance(document, Mapping) else None
    if not isinstance(seeds, Mapping) or not seeds:
        raise ConfigError(f"{path}: expected a mapping 'seeds' of seed names to entries")
    for name, seed in seeds.items():
        where = f"{path}: seeds.{name}"
        _mapping(seed, where)
        for key in ("title", "did", "ours", "experiments", "claims"):
            if key not in seed:
                raise ConfigError(f"{where}: missing '{key}'")
        if not isinstance(seed["claims"], list):
            raise ConfigError(f"{where}.claims: {type(seed['claims']).__name__}; expected a "
                              "list of claims")
        departures = seed.get("departures", [])
        if not isinstance(departures, list) or not all(
                isinstance(d, str) and d.strip() for d in departures):
            raise ConfigError(f"{where}.departures: expected a list of sentences, each a way "
                              "the model or its inputs depart from the paper's")
        for i, claim in enumerate(seed["claims"]):
            at = f"{where}.claims[{i}]"
            _mapping(claim, at)
            for key in ("what", "source", "paper", "why", *(("query",) if compared(claim)
                                                             else ())):
                if key not in claim:
                    raise ConfigError(f"{at}: missing '{key}'")
            if "query" not in claim:
                check_claim(claim, at)
                continue
            _check_query(claim["query"], f"{at}.query")
            check_claim(claim, at)
    _check_statements(seeds, path)
    return dict(seeds)


def _check_query(query: Mapping[str, Any], at: str,
                 kinds: tuple[str, ...] = QUERY_KINDS) -> None:
    """Refuse a query that is not one of `kinds` with what it needs; a change of a query
    (`{change: {...}}`) holds a query of any other kind."""
    _mapping(query, at)
    found = [k for k in kinds if k in query]
    if len(found) != 1:
        raise ConfigError(f"{at}: expected exactly one of {kinds}")
    if found == ["knee"] and "along" not in query:
        raise ConfigError(f"{at}.along: missing; a knee query names the column its metric "
                          "bends along (e.g. runtime_scale)")
    if found == ["change"] and isinstance(query["change"], Mapping):
        _check_query(query["change"], f"{at}.change",
                     tuple(k for k in QUERY_KINDS if k != "change"))


def _check_statements(seeds: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Refuse a statement scored by two rows: the rows of one published statement (in one
    section or several) are one scored row and rows shown beside it."""
    scored: dict[str, str] = {}
    for name, seed in seeds.items():
        for i, claim in enumerate(seed["claims"]):
            if "extension" in claim or _labelled(claim):
                continue
            at = f"seeds.{name}.claims[{i}]"
            first = scored.setdefault(claim["statement"], at)
            if first != at:
                raise ConfigError(f"{path}: {at}.statement: {claim['statement']!r} is scored "
                                  f"by {first} already; expected one scored row per "
                                  "statement (mark this one 'shown: another row of the "
                                  "statement ...')")


def _labelled(claim: Mapping[str, Any]) -> bool:
    """Whether a claim's label keeps it out of the scored counts."""
    return any(LABELS[key] not in SCORED for key in LABELS if key in claim)


def _mapping(value: object, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {type(value).__name__}; expected a mapping")


def _select(runs: pl.DataFrame, where: Mapping[str, Any]) -> pl.DataFrame:
    for column, value in where.items():
        if column not in runs.columns:
            raise ConfigError(f"query: no column {column!r} in the store")
        if isinstance(value, list):
            runs = runs.filter(pl.col(column).is_in(value))
        else:
            runs = runs.filter(pl.col(column).eq_missing(pl.lit(value)))
    return runs


def _configurations(runs: pl.DataFrame, metric: str) -> pl.Series:
    """The metric's mean per configuration (runs differing only in seed and run key)."""
    return runs.group_by(list(CONFIG_KEYS)).agg(pl.col(metric).mean())[metric]


def evaluate(runs: pl.DataFrame, query: Mapping[str, Any]) -> float | None:
    """A query's value on store rows; None when no run matches."""
    selected = _select(runs, query.get("where", {}))
    if not selected.height:
        return None
    for metric in _metrics(query):
        check_job_metric(selected, metric)
    if "metric" in query:
        return float(selected[query["metric"]].mean())
    if "max" in query:
        return extremes(_configurations(selected, query["max"]))[1]
    if "ratio" in query:
        numerator, denominator = (float(selected[c].mean()) for c in query["ratio"])
        return numerator / denominator if denominator else None
    if "saturation" in query:
        table = saturation(selected)
        if table.height != 1:
            raise ConfigError(f"query {dict(query)}: expected the runs of one configuration "
                              f"swept over offered load, found {table.height}")
        value = table[query["saturation"]][0]
        return None if value is None else float(value)
    if "knee" in query:
        curve = selected.group_by(query["along"]).agg(pl.col(query["knee"]).mean()).sort(
            query["along"])
        found = bend(curve[query["along"]].to_list(), curve[query["knee"]].to_list())
        return None if found is None else found[1]
    measure = query["change"]
    if not isinstance(measure, Mapping):
        measure = {"metric": measure}
    top = evaluate(_select(selected, query["of"]), measure)
    base = evaluate(_select(selected, query["over"]), measure)
    return top / base - 1.0 if top is not None and base else None


def _metrics(query: Mapping[str, Any]) -> list[str]:
    """The metrics a query reduces (a change of a query: that query's)."""
    if "ratio" in query:
        return list(query["ratio"])
    if isinstance(query.get("change"), Mapping):
        return _metrics(query["change"])
    return [query[k] for k in ("metric", "max", "change", "knee") if k in query]


def evaluate_seeds(runs: pl.DataFrame, query: Mapping[str, Any]) -> list[float]:
    """The query's value on each seed's runs alone, for the seeds of its selected runs
    (those where it is defined), in seed order."""
    selected = _select(runs, query.get("where", {}))
    values = []
    for seed in sorted(selected["seed"].drop_nulls().unique().to_list()):
        value = evaluate(selected.filter(pl.col("seed") == seed), query)
        if value is not None and not math.isnan(value):
            values.append(value)
    return values


def has_runs(runs: pl.DataFrame, query: Mapping[str, Any]) -> bool:
    """Whether the store has runs for every selection of the query."""
    selected = _select(runs, query.get("where", {}))
    if "change" in query:
        return _select(selected, query["of"]).height > 0 and _select(
            selected, query["over"]).height > 0
    return selected.height > 0


def report(published: Mapping[str, Any], store: str | os.PathLike[str] | None,
           summaries: list[str] | None = None, figures: str = "figures") -> str:
    """The report as Markdown, from the published numbers and the dataset's store (or the
    given shard files); figure links are relative to `figures`."""
    runs = _read_runs(store, summaries)
    return _report(published, runs, _judge_all(published, runs), figures)


def _read_runs(store: str | os.PathLike[str] | None, summaries: list[str] | None
               ) -> pl.DataFrame:
    """The store's (or the shard files') summary rows with the metrics derived from the
    per-job rows beside them (`simcore.report.job_metrics`)."""
    # read_summaries reads `store` only without `summaries`, and is typed for that case
    runs = read_summaries(store, summaries)
    return with_job_metrics(runs, store, summaries)


def _judge_all(published: Mapping[str, Any], runs: pl.DataFrame
               ) -> dict[str, list[tuple[Mapping[str, Any], float | None, Verdict]]]:
    present = set(runs["experiment"].unique().to_list())
    return {name: _judged(seed, runs, present) for name, seed in published.items()}


def _report(published: Mapping[str, Any], runs: pl.DataFrame,
            judged: Mapping[str, list[tuple[Mapping[str, Any], float | None, Verdict]]],
            figures: str) -> str:
    present = set(runs["experiment"].unique().to_list())
    absent = [seed for seed in published.values()
              if len(_missing(seed, present)) == len(seed["experiments"])]
    lines = ["# Reproduction of the seed studies", ""]
    if len(absent) == len(published):
        return "\n".join([*lines, _holds(sorted(present), absent, True), ""])
    lines += ["Each section puts a study's published numbers, as printed, beside ours, "
              "computed from this dataset's result store, and gives each a verdict. "
              "Differences are ours minus the nearest printed value, in the paper's unit "
              "(percentages in points); the last column says why they differ. Every row "
              "scores one published statement, and each statement is scored by one row at "
              "most: the others are shown beside it. The verdict table beside this report "
              "(`-verdicts.csv`, `-verdicts.parquet`) holds the same rows as data.", "",
              RULE_READING, "",
              *(f"- *{name}*: {meaning};" for name, meaning in RULE[:-1]),
              f"- *{RULE[-1][0]}*: {RULE[-1][1]}.", "",
              *_counts(published, judged), ""]
    if absent:
        lines += [_holds(sorted(present), absent, False), ""]
    for name, seed in published.items():
        if any(seed is a for a in absent):
            continue
        lines += [f"## {seed['title']}", "", seed["did"].strip(), "",
                  f"**Our configuration.** {seed['ours'].strip()}", ""]
        if seed.get("departures"):
            lines += ["**Departures from the paper**, with their measured effect where one "
                      "was measured:", ""]
            lines += [f"- {' '.join(d.split())}" for d in seed["departures"]]
            lines.append("")
        missing = _missing(seed, present)
        if missing:
            lines += [f"*Not in this dataset yet: experiment(s) {', '.join(missing)}.*", ""]
            continue
        rows = [row for row in judged[name] if row[2].name != "extension"]
        extensions = [row for row in judged[name] if row[2].name == "extension"]
        if rows:
            lines += ["| what | paper ± tolerance (kind, source) | ours ± 95% CI | n "
                      "| difference | verdict | why |", "|---|---|---|---|---|---|---|"]
            lines += [_row(*row) for row in rows]
            lines.append("")
        if extensions:
            lines += ["**Our own results**: runs the paper did not make, beside what it says; "
                      "not scored.", "",
                      "| what | ours | the paper (source) | what it shows |",
                      "|---|---|---|---|"]
            lines += [_extension_row(*row) for row in extensions]
            lines.append("")
        for figure in seed.get("figures", []):
            lines += [f"![{figure}]({figures}/{figure})", ""]
    return "\n".join(lines)


def _judged(seed: Mapping[str, Any], runs: pl.DataFrame, present: set[str]
            ) -> list[tuple[Mapping[str, Any], float | None, Verdict]]:
    """Each claim of the seed with our value and its verdict (which holds our interval);
    every claim is not run while any of the seed's experiments is missing."""
    out = []
    complete = not _missing(seed, present)
    for claim in seed["claims"]:
        query = claim.get("query")
        ran = complete and query is not None and has_runs(runs, query)
        values = evaluate_seeds(runs, query) if ran else []
        ours = None
        if ran:  # a change: the mean of the per-seed paired changes
            ours = (math.fsum(values) / len(values) if "change" in query and values
                    else evaluate(runs, query))
        verdict = judge(claim, ours, values, ran) if complete else Verdict("not run")
        out.append((claim, ours, verdict))
    return out


def _counts(published: Mapping[str, Any], judged: Mapping[str, list[Any]]) -> list[str]:
    """The verdicts counted per seed, and in all, with the distinct statements they score
    (a statement repeated in two sections counts once in all)."""
    head = ["study", "statements", "scored", *VERDICTS]
    lines = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    total = dict.fromkeys(VERDICTS, 0)
    statements: set[str] = set()
    for name, seed in published.items():
        counts = dict.fromkeys(VERDICTS, 0)
        for *_, verdict in judged[name]:
            counts[verdict.name] += 1
            total[verdict.name] += 1
        distinct = {c["statement"] for c in seed["claims"] if "extension" not in c}
        statements |= distinct
        lines.append(_count_row(seed["title"], len(distinct), counts))
    lines.append(_count_row("**all**", len(statements), total))
    return lines


def _count_row(label: str, statements: int, counts: Mapping[str, int]) -> str:
    scored = sum(counts[v] for v in SCORED)
    return (f"| {label} | {statements} | {scored} | "
            f"{' | '.join(str(counts[v]) for v in VERDICTS)} |")


def _why(claim: Mapping[str, Any], verdict: Verdict) -> str:
    """The row's why: opening with its label's sentence (what was calibrated, why it is
    shown, what the model cannot express, ...) and the condition of ours it was run at."""
    why = " ".join(claim["why"].split())
    key = next((k for k, name in LABELS.items() if name == verdict.name and k in claim), None)
    if key is not None and isinstance(claim[key], str):
        why = f"*{_sentence(claim[key])}* {why}"
    if "condition" in claim:
        why = f"**Our condition:** {_sentence(claim['condition'])} {why}"
    return why


def _row(claim: Mapping[str, Any], ours: float | None, verdict: Verdict) -> str:
    """A claim's table row: what, paper ± tolerance (kind, source), ours ± half-width, n,
    difference, verdict, why."""
    shown = _shown(ours, claim, verdict)
    if verdict.half_width is not None and ours is not None:
        shown += f" ± {_shown(verdict.half_width, claim, verdict, spread=True)}"
    n = "" if verdict.n == 0 else f"{verdict.n} (no interval)" if verdict.half_width is None \
        else str(verdict.n)
    return (f"| {claim['what']} | {_paper(claim, verdict)} ({claim['kind']}, "
            f"{claim['source']}) | {shown} | {n} | {_difference(ours, verdict)} "
            f"| {verdict.name} | {_why(claim, verdict)} |")


def _extension_row(claim: Mapping[str, Any], ours: float | None, verdict: Verdict) -> str:
    shown = _shown(ours, claim, None)
    if ours is not None and verdict.half_width:
        shown += f" ± {_shown(verdict.half_width, claim, None, spread=True)} (95% CI)"
    return f"| {claim['what']} | {shown} | {claim['source']} | {_why(claim, verdict)} |"


def verdict_table(published: Mapping[str, Any],
                  judged: Mapping[str, list[tuple[Mapping[str, Any], float | None, Verdict]]],
                  present: set[str]) -> pl.DataFrame:
    """The report's rows as data, one per claim of each study whose experiments are all
    `present` (store units: fractions for percentages, seconds for times): study,
    statement, kind, what, source, paper (as printed), n, ours, half_width, tolerance, the
    printed interval (low, high), verdict, condition and why."""
    rows = []
    for name, seed in published.items():
        if _missing(seed, present):
            continue
        for claim, ours, verdict in judged[name]:
            rows.append({
                "study": name, "statement": claim.get("statement"), "kind": claim.get("kind"),
                "what": claim["what"], "source": claim["source"],
                "paper": None if claim["paper"] is None else str(claim["paper"]),
                "n": verdict.n, "ours": ours, "half_width": verdict.half_width,
                "tolerance": verdict.tolerance, "low": verdict.low, "high": verdict.high,
                "verdict": verdict.name, "condition": claim.get("condition"),
                "why": _why(claim, verdict)})
    schema = {"study": pl.String, "statement": pl.String, "kind": pl.String,
              "what": pl.String, "source": pl.String, "paper": pl.String, "n": pl.Int64,
              "ours": pl.Float64, "half_width": pl.Float64, "tolerance": pl.Float64,
              "low": pl.Float64, "high": pl.Float64, "verdict": pl.String,
              "condition": pl.String, "why": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


def verdict_paths(out: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Where the verdict table of a report written to `out` goes: beside it, as
    `<stem>-verdicts.csv` and `<stem>-verdicts.parquet` (Parquet with the store's
    checksums)."""
    out = Path(out)
    return out.with_name(f"{out.stem}-verdicts.csv"), out.with_name(f"{out.stem}-verdicts.parquet")


def _sentence(text: str) -> str:
    """Text on one line, opening with a capital and ending with a full stop."""
    text = " ".join(text.split())
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else f"{text}."


def _paper(claim: Mapping[str, Any], verdict: Verdict) -> str:
    """The printed value with its tolerance in the printed unit, the direction a claim
    without a number states, or (a claim not compared with ours) the value as printed."""
    printed = verdict.printed
    if printed is None:
        if verdict.direction is not None:
            return f"{verdict.direction}, no number"
        return "no number" if claim["paper"] is None else str(claim["paper"])
    return f"{printed.text} ± {_short((verdict.tolerance or 0.0) / printed.scale)}"


def _decimals(printed: Printed, verdict: Verdict) -> int:
    """Decimals to show a value beside the printed one: one more than printed, and more
    (up to three) while they are coarser than the tolerance, so that what decides the
    verdict shows."""
    decimals = printed.decimals + 1 + (printed.unit == "x")
    margin = (verdict.tolerance or 0.0) / printed.scale
    while margin and 10.0**-decimals > margin and decimals < printed.decimals + 4:
        decimals += 1
    return decimals


def _shown(value: float | None, claim: Mapping[str, Any], verdict: Verdict | None,
           spread: bool = False) -> str:
    """Our value (with `spread`, a half-width) in the printed value's unit (`_decimals`);
    without a printed value, a relative change as a percentage."""
    if value is None or math.isnan(value):
        return "n/a"
    change = "change" in claim["query"]
    printed = None if verdict is None else verdict.printed
    if verdict is None or printed is None:
        return f"{100 * value:{'' if spread else '+'}.1f}%" if change else _number(value)
    decimals = _decimals(printed, verdict)
    if printed.unit == "x":  # a factor, compared with a relative change as r - 1
        return f"{value + 1 if change and not spread else value:.{decimals}f}x"
    sign = "+" if not spread and (change or printed.text[:1] in "+-") else ""
    text = f"{value / printed.scale:{sign},.{decimals}f}"
    return f"{text}%" if printed.unit == "%" else f"{text} {printed.unit}".rstrip()


def _difference(ours: float | None, verdict: Verdict) -> str:
    """Ours minus the nearest printed value, in the printed unit (points for a
    percentage); `inside` a range or bound."""
    delta = verdict.difference(ours)
    printed = verdict.printed
    if delta is None or printed is None:
        return ""
    if delta == 0 and verdict.low != verdict.high:
        return "inside"
    decimals = _decimals(printed, verdict)
    unit = {"%": " pt", "": "", "x": ""}.get(printed.unit, f" {printed.unit}")
    number = delta / printed.scale
    text = f"{number:+,.{decimals}f}"
    if float(text.replace(",", "")) == 0:
        text = f"{0:.{decimals}f}"
    return text + unit


def _short(value: float) -> str:
    """A tolerance in two significant digits (whole numbers from 100)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.2g}"


def _holds(present: list[str], absent: list[Mapping[str, Any]], none: bool) -> str:
    """One line: what the dataset holds and which studies it leaves out."""
    if none:
        return (f"**This dataset holds none of the seed studies' experiments** (it holds "
                f"{', '.join(present)}), so there is nothing to compare here; "
                "`config/papers.yaml` runs them, and docs/reproduction.md is that report.")
    return ("*Not in this dataset (no section below): "
            f"{'; '.join(seed['title'] for seed in absent)}.*")


def _missing(seed: Mapping[str, Any], present: set[str]) -> list[str]:
    """The seed's experiments that have no runs among `present` ones."""
    return [e for e in seed["experiments"] if e not in present]


def copy_figures(published: Mapping[str, Any], present: set[str],
                 source: str | os.PathLike[str], destination: str | os.PathLike[str]
                 ) -> list[Path]:
    """Copy the figures the report links (those of the seeds whose experiments are all
    `present`) from a dataset's figure directory, so that a report written outside the
    dataset (docs/reproduction.md) links files that exist."""
    copied = []
    for seed in published.values():
        if _missing(seed, present):
            continue
        for figure in seed.get("figures", []):
            origin, target = Path(source) / figure, Path(destination) / figure
            if not origin.is_file():
                raise ConfigError(f"figure {figure!r}: not found under {source}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, target)
            copied.append(target)
    return copied


def write_report(published: str | os.PathLike[str], store: str | os.PathLike[str] | None,
                 summaries: list[str] | None, out: str | os.PathLike[str],
                 figures: str = "figures", copy_from: str | os.PathLike[str] | None = None
                 ) -> None:
    """Write the report (`report`) of the published numbers at `published` to `out`, and
    its verdict table beside it (`verdict_paths`: CSV and Parquet); with `copy_from`, a
    dataset's figure directory, the figures it links are copied to `figures` beside it
    first (`copy_figures`). Each file is stamped (`simcore.base.stamps`)."""
    numbers = load_published(published)
    runs = _read_runs(store, summaries)
    judged = _judge_all(numbers, runs)
    present = set(runs["experiment"].to_list())
    if copy_from:
        copy_figures(numbers, present, copy_from, Path(out).parent / figures)
    table = verdict_table(numbers, judged, present)
    csv, parquet = verdict_paths(out)
    with atomic_path(out) as page, atomic_path(csv) as rows:  # all three, or none
        page.write_bytes(_report(numbers, runs, judged, figures).encode())
        table.write_csv(rows)
        write_table(table.to_arrow(), parquet, {"table": parquet.stem})
    for path in (csv, parquet, out):
        write_stamp(path, [path])


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if abs(value) >= 10 else f"{value:.3f}"
