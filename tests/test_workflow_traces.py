"""The Snakemake trace rules: mirror -> resources/traces -> results/workloads/*.parquet."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from simcore.jobs.cleaning import CleaningOptions, cleaning_report
from simcore.jobs.swf import header_of
from simcore.sweep.experiments import Source
from simcore.workload.traces import load_catalogue
from tests.excerpts import excerpt_catalogue, manifest, raw_jobs
from tests.workflow import scratch_workflow, small_config, snakemake

TRACE = "NASA-iPSC-1993-3.1-cln"


def trace_workload(wf: Path, config: str, trace: str = TRACE) -> str:
    """The workload file of `trace` as the configuration `config` converts it (its
    directory is named by the trace's sha256 and the cleaning)."""
    values = yaml.safe_load((wf / config).read_text())["traces"]
    options = CleaningOptions.from_mapping(values.get("cleaning", {}))
    source = Source(trace, trace=trace, sha256=load_catalogue(wf / values["catalogue"])[
        trace].sha256, cleaning=tuple(sorted(asdict(options).items())))
    return f"results/{source.path(0)}"


def test_trace_converted_from_mirror(tmp_path, whole_trace):
    mirror = whole_trace(TRACE).parent
    wf = scratch_workflow(tmp_path)
    config = small_config(wf, traces={"mirrors": [str(mirror)]})
    target = trace_workload(wf, config)
    snakemake(wf, target, "--configfile", config)
    table = pq.read_table(wf / target)
    assert header_of(table).max_procs == 128
    report = cleaning_report(table)
    assert report["jobs_in"] == 18239
    assert table.num_rows == 18239 - report["rules"]["nonpositive_runtime"]["removed"]
    assert (wf / f"resources/traces/{TRACE}.swf.gz").stat().st_size == 207976


def test_excerpt_converted_from_mirror(tmp_path, trace_excerpt):
    """The same rules on the excerpt, pinned by a catalogue of excerpts: the jobs and
    removals match the job lines counted here."""
    path = trace_excerpt(TRACE)
    wf = scratch_workflow(tmp_path)
    catalogue = excerpt_catalogue(tmp_path / "excerpts.yaml")
    config = small_config(wf, traces={"mirrors": [str(path.parent)], "catalogue": str(catalogue)})
    target = trace_workload(wf, config)
    snakemake(wf, target, "--configfile", config)
    table = pq.read_table(wf / target)
    assert header_of(table).max_procs == 128
    report = cleaning_report(table)
    runs = [row[3] for row in raw_jobs(path)]
    assert report["jobs_in"] == len(runs) == manifest()[TRACE]["jobs"]
    removed = report["rules"]["nonpositive_runtime"]["removed"]
    assert removed == sum(run <= 0 for run in runs) > 0
    assert table.num_rows == len(runs) - removed
    copied = wf / f"resources/traces/{TRACE}.swf.gz"
    assert copied.read_bytes() == path.read_bytes()


def test_missing_trace_fails_without_leftovers(tmp_path):
    wf = scratch_workflow(tmp_path)
    catalogue = (wf / "config/traces.yaml").read_text()
    unreachable = catalogue.replace("https://www.cs.huji.ac.il/", "http://127.0.0.1:9/")
    (wf / "offline.yaml").write_text(unreachable)
    config = small_config(wf, traces={"catalogue": "offline.yaml"})
    result = snakemake(wf, trace_workload(wf, config), "--configfile", config,
                       env={"TORUS_SWEEP_TRACE_DIR": str(tmp_path / "empty")}, check=False)
    assert result.returncode != 0
    log = (wf / f"logs/acquire_trace/{TRACE}.log").read_text()
    assert "TORUS_SWEEP_TRACE_DIR" in log
    assert not (wf / "resources/traces").exists() or not any((wf / "resources/traces").iterdir())


def test_invalid_config_names_the_key(tmp_path):
    wf = scratch_workflow(tmp_path)
    result = snakemake(wf, "-n", "--configfile", small_config(wf, traces={"catalogue": 3}),
                       check=False)
    assert result.returncode != 0
    assert "traces.catalogue: 3 is not of type 'string'" in result.stdout + result.stderr
