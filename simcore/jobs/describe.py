"""Summary statistics of an SWF trace: what `simcore swf-info` prints."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from simcore.base.arrays import numpy_array
from simcore.jobs.cleaning import CleaningOptions, clean, cleaning_report
from simcore.jobs.swf import header_of, job_size

RUNTIME_PERCENTILES = (5, 25, 50, 75, 95, 99, 100)


def describe(table: pa.Table) -> dict[str, object]:
    """Header summary, job counts, sizes, runtimes and offered load.

    Statistics after `jobs` are over the jobs that the default cleaning rules keep (jobs
    larger than MaxProcs are counted under `oversize` and left out, not rejected), since
    -1 placeholders would distort them. Offered load = sum(size x run_time) /
    (MaxProcs x (last_submit - first_submit)).
    """
    header = header_of(table)
    cleaned = clean(table, CleaningOptions(oversize="drop"))
    report = cleaning_report(cleaned)
    size = job_size(cleaned)
    run = numpy_array(cleaned.column("run_time"))
    submit = numpy_array(cleaned.column("submit_time"))
    first, last = (float(submit.min()), float(submit.max())) if submit.size else (0.0, 0.0)
    span = last - first
    max_procs = header.max_procs
    load = float((size * run).sum() / (max_procs * span)) if max_procs and span > 0 else None
    return {
        "jobs": table.num_rows,
        "jobs_clean": cleaned.num_rows,
        "max_procs": max_procs,
        "max_nodes": header.max_nodes,
        "first_submit": first,
        "last_submit": last,
        "span_s": span,
        "offered_load": load,
        "size_histogram": size_histogram(size),
        "runtime_percentiles_s": {
            f"p{q}": float(np.percentile(run, q)) if run.size else None
            for q in RUNTIME_PERCENTILES
        },
        "cleaning_removed": {
            rule: entry["removed"] for rule, entry in report["rules"].items()  # type: ignore[index]
        },
        "header": header.summary(),
    }


def size_classes(size: np.ndarray) -> np.ndarray:
    """Each size's class k: sizes 2^(k-1) + 1 to 2^k (1 is class 0)."""
    return np.ceil(np.log2(np.maximum(size, 1))).astype(np.int64)


def size_class_label(k: int) -> str:
    """The sizes of class k as text: 1, 2, 3-4, 5-8, 9-16, ..."""
    return str(2**k) if k < 2 else f"{2 ** (k - 1) + 1}-{2**k}"


def size_histogram(size: np.ndarray) -> dict[str, int]:
    """Job counts in power-of-two bins (`size_classes`): 1, 2, 3-4, 5-8, 9-16, ..."""
    if not size.size:
        return {}
    counts = np.bincount(size_classes(size))
    return {size_class_label(k): int(n) for k, n in enumerate(counts) if n}
