"""Named cleaning rules and their recorded counts."""

from __future__ import annotations

import pytest

from simcore.base.errors import CleaningError
from simcore.jobs.cleaning import CleaningOptions, clean, cleaning_report
from simcore.jobs.swf import job_size, parse_swf, read_swf
from tests.excerpts import raw_jobs

LINES = [
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",   # kept
    "2 5 0 -1 4 -1 -1 4 200 -1 5 1 1 -1 1 -1 -1 -1",    # nonpositive_runtime (unknown)
    "3 6 0 0 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",     # nonpositive_runtime (zero)
    "4 7 0 10 -1 -1 -1 -1 200 -1 1 1 1 -1 1 -1 -1 -1",  # nonpositive_size
    "5 -1 0 10 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1",   # negative_submit
    "6 9 0 10 32 -1 -1 32 200 -1 1 1 1 -1 1 -1 -1 -1",  # oversize (MaxProcs 16)
    "7 9 0 -1 32 -1 -1 32 200 -1 1 1 1 -1 1 -1 -1 -1",  # first rule wins: runtime
]


def table():
    return parse_swf(("; MaxProcs: 16\n" + "\n".join(LINES) + "\n").encode(), "t.swf")


def test_rules_count_first_broken_rule():
    cleaned = clean(table(), CleaningOptions(oversize="drop"))
    assert cleaned.column("job_number").to_pylist() == [1]
    report = cleaning_report(cleaned)
    assert report["jobs_in"] == 7 and report["jobs_out"] == 1
    removed = {rule: entry["removed"] for rule, entry in report["rules"].items()}
    assert removed == {"nonpositive_runtime": 3, "nonpositive_size": 1,
                       "negative_submit": 1, "oversize": 1}


def test_oversize_reject_names_job():
    with pytest.raises(CleaningError, match=r"job 6 has size 32 > MaxProcs 16 \(and 0 more\)"):
        clean(table())


def test_oversize_clamp_keeps_job():
    cleaned = clean(table(), CleaningOptions(oversize="clamp"))
    assert cleaned.column("job_number").to_pylist() == [1, 6]
    assert job_size(cleaned).tolist() == [4, 16]
    assert cleaning_report(cleaned)["rules"]["oversize"] == {
        "action": "clamp", "removed": 0, "affected": 1}


def test_rules_can_be_switched_off():
    cleaned = clean(table(), CleaningOptions(drop_nonpositive_runtime=False, oversize="drop"))
    assert cleaned.column("job_number").to_pylist() == [1, 2, 3]


def test_options_from_mapping_rejects_unknown_key():
    with pytest.raises(ValueError, match=r"unknown cleaning option\(s\) \['drop_all'\]"):
        CleaningOptions.from_mapping({"drop_all": True})
    with pytest.raises(ValueError, match="oversize='shrink'"):
        CleaningOptions.from_mapping({"oversize": "shrink"})


def test_cleaning_keeps_header(trace_excerpt):
    """On SDSC-SP2's excerpt: the header travels, and the jobs removed are those whose run
    time (field 4 of the job lines, read here independently) is not positive."""
    path = trace_excerpt("SDSC-SP2-1998-4.2-cln")
    raw = read_swf(path)
    cleaned = clean(raw)
    assert cleaned.schema.metadata[b"swf_header"] == raw.schema.metadata[b"swf_header"]
    runs = [row[3] for row in raw_jobs(path)]
    removed = sum(run <= 0 for run in runs)
    report = cleaning_report(cleaned)
    assert report["rules"]["nonpositive_runtime"]["removed"] == removed > 0
    assert report["jobs_in"] == len(runs) and cleaned.num_rows == len(runs) - removed


def test_cleaning_counts_on_the_whole_trace(whole_trace):
    raw = read_swf(whole_trace("SDSC-SP2-1998-4.2-cln"))
    cleaned = clean(raw)
    assert cleaned.schema.metadata[b"swf_header"] == raw.schema.metadata[b"swf_header"]
    assert cleaning_report(cleaned)["rules"]["nonpositive_runtime"]["removed"] == 5681
