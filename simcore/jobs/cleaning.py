"""Explicit, named cleaning rules for SWF jobs, with a count of what each removed.

Rules run in the order of `RULES`; a job is counted against the first rule it breaks.
The counts travel with the table (schema metadata key `cleaning`) so every workload
derived from a trace says how it was cleaned.

- `nonpositive_runtime`: run_time <= 0 (includes -1, unknown): the job cannot be simulated.
- `nonpositive_size`: no positive allocated or requested processor count.
- `negative_submit`: submit_time < 0 (unknown arrival).
- `oversize`: size above the machine's MaxProcs; `reject` (error), `clamp` (to MaxProcs,
  both size fields) or `drop`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from simcore.base.arrays import arrow_array, filter_rows, numpy_array
from simcore.base.errors import CleaningError
from simcore.jobs.swf import header_of, job_size

RULES = ("nonpositive_runtime", "nonpositive_size", "negative_submit", "oversize")
CLEANING_METADATA_KEY = b"cleaning"
OversizeAction = Literal["reject", "clamp", "drop"]


@dataclass(frozen=True)
class CleaningOptions:
    """Which rules drop jobs, and what to do with jobs larger than the machine."""

    drop_nonpositive_runtime: bool = True
    drop_nonpositive_size: bool = True
    drop_negative_submit: bool = True
    oversize: OversizeAction = "reject"
    max_procs: int | None = None  # None: the header's MaxProcs

    def __post_init__(self) -> None:
        if self.oversize not in ("reject", "clamp", "drop"):
            raise CleaningError(
                f"cleaning option oversize={self.oversize!r}; expected 'reject', 'clamp' "
                "or 'drop'"
            )
        for name in ("drop_nonpositive_runtime", "drop_nonpositive_size", "drop_negative_submit"):
            if not isinstance(getattr(self, name), bool):
                raise CleaningError(f"cleaning option {name}={getattr(self, name)!r}; expected "
                                    "true or false")
        if self.max_procs is not None and (isinstance(self.max_procs, bool) or not isinstance(
                self.max_procs, int) or self.max_procs < 1):
            raise CleaningError(f"cleaning option max_procs={self.max_procs!r}; expected an "
                                "integer >= 1")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> CleaningOptions:
        """Options from a config mapping; unknown keys are an error naming the key."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise CleaningError(
                f"unknown cleaning option(s) {sorted(unknown)}; "
                f"expected some of {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**values)  # type: ignore[arg-type]


def clean(table: pa.Table, options: CleaningOptions | None = None) -> pa.Table:
    """Apply the rules; return the kept jobs with per-rule counts in the metadata."""
    options = options or CleaningOptions()
    size = job_size(table)
    run = numpy_array(table.column("run_time"))
    submit = numpy_array(table.column("submit_time"))
    max_procs = options.max_procs or header_of(table).max_procs

    broken = {
        "nonpositive_runtime": (run <= 0) if options.drop_nonpositive_runtime else None,
        "nonpositive_size": (size <= 0) if options.drop_nonpositive_size else None,
        "negative_submit": (submit < 0) if options.drop_negative_submit else None,
        "oversize": (size > max_procs) if max_procs else None,
    }
    keep = np.ones(table.num_rows, dtype=bool)
    report: dict[str, dict[str, object]] = {}
    for rule in RULES:
        mask = broken[rule]
        action = options.oversize if rule == "oversize" else "drop"
        if mask is None:
            report[rule] = {"action": "off", "removed": 0}
            continue
        hit = mask & keep
        if rule == "oversize" and action != "drop":
            report[rule] = {"action": action, "removed": 0, "affected": int(hit.sum())}
            if action == "reject" and hit.any():
                row = int(np.flatnonzero(hit)[0])
                raise CleaningError(
                    f"job {table.column('job_number')[row].as_py()} has size {size[row]} > "
                    f"MaxProcs {max_procs} (and {int(hit.sum()) - 1} more); expected sizes "
                    "within the machine, or the cleaning option oversize: clamp or drop "
                    "(config traces.cleaning; simcore run --cleaning '{\"oversize\": "
                    "\"drop\"}')"
                )
            continue
        report[rule] = {"action": "drop", "removed": int(hit.sum())}
        keep &= ~mask

    cleaned = filter_rows(table, keep)
    if options.oversize == "clamp" and max_procs:
        cleaned = _clamp_sizes(cleaned, max_procs)
    summary = {"jobs_in": table.num_rows, "jobs_out": cleaned.num_rows, "rules": report}
    metadata = dict(table.schema.metadata or {})
    metadata[CLEANING_METADATA_KEY] = json.dumps(summary).encode()
    return cleaned.replace_schema_metadata(metadata)


def cleaning_report(table: pa.Table) -> dict[str, object] | None:
    """The per-rule counts recorded by `clean`, or None for an uncleaned table."""
    raw = (table.schema.metadata or {}).get(CLEANING_METADATA_KEY)
    return json.loads(raw) if raw else None


def empty_workload(table: pa.Table) -> str:
    """What made a job table empty, for an error message: the rules that removed its jobs."""
    report = cleaning_report(table)
    if not report:
        return "the workload holds no jobs"
    removed = ", ".join(f"{rule} {entry['removed']}" for rule, entry in
                        report["rules"].items() if entry.get("removed"))  # type: ignore[union-attr]
    return f"the workload holds no jobs: cleaning removed all {report['jobs_in']} ({removed})"


def _clamp_sizes(table: pa.Table, max_procs: int) -> pa.Table:
    for name in ("allocated_processors", "requested_processors"):
        index = table.schema.get_field_index(name)
        values = np.minimum(numpy_array(table.column(name)), max_procs)
        table = table.set_column(index, name, arrow_array(values))
    return table
