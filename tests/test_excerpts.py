"""The committed trace excerpts are what their manifest says, and (where the whole traces are
given) verbatim slices of them."""

from __future__ import annotations

import gzip

import pytest

from simcore.base.checksums import file_digest
from simcore.jobs.swf import header_of, read_swf
from simcore.workload.traces import load_catalogue
from tests.conftest import ROOT
from tests.excerpts import EXCERPT_DIR, cut, excerpt_path, manifest, raw_jobs, sha256

EXCERPTS = manifest()


def test_every_excerpt_has_an_entry_and_every_entry_a_file():
    files = {path.name for path in EXCERPT_DIR.glob("*.swf.gz")}
    assert files == {f"{name}.swf.gz" for name in EXCERPTS}
    assert len(EXCERPTS) >= 4


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_excerpt_matches_its_manifest(name):
    entry = EXCERPTS[name]
    path = excerpt_path(name)
    data = path.read_bytes()
    assert (sha256(data), len(data)) == (entry["sha256"], entry["bytes"])
    swf = gzip.decompress(data)
    assert sha256(swf) == entry["swf_sha256"]
    first, last = entry["header_lines"]
    lines = swf.splitlines()
    assert first == 1 and all(line.startswith(b";") for line in lines[:last])
    assert not lines[last].startswith(b";"), "the header is the source's whole header"
    first_job, last_job = entry["job_lines"]
    assert first_job == last + 1, "jobs follow the header: the trace's first jobs"
    assert entry["jobs"] == last_job - first_job + 1 == len(lines) - last
    assert len(raw_jobs(path)) == read_swf(path).num_rows == entry["jobs"]
    assert 1000 <= entry["jobs"] <= 10000, "a few thousand jobs"


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_excerpt_source_is_the_catalogued_trace(name):
    entry = EXCERPTS[name]
    catalogued = load_catalogue(ROOT / "config" / "traces.yaml")[name]
    assert entry["source"] == catalogued.filename
    assert entry["source_sha256"] == catalogued.sha256
    assert header_of(read_swf(excerpt_path(name))).max_procs == catalogued.max_procs


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_excerpt_is_a_slice_of_the_whole_trace(name, whole_trace):
    entry = EXCERPTS[name]
    source = whole_trace(name)
    assert file_digest(source) == entry["source_sha256"]
    swf = cut(gzip.decompress(source.read_bytes()), tuple(entry["header_lines"]),
              tuple(entry["job_lines"]))
    assert swf == gzip.decompress(excerpt_path(name).read_bytes())
