"""Shared fixtures: real PWA traces, as committed excerpts or (where given) whole files.

Tests of properties that hold on any run of consecutive jobs read `trace_excerpt(name)`,
the excerpt under tests/data/traces (tests/excerpts.py). Tests that pin numbers of a whole
file read `whole_trace(name)`, found through TORUS_SWEEP_TRACE_DIR (the pipeline's
variable); without it they are skipped, and the summary lists them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.excerpts import HOW_TO, TRACE_DIR_ENV, excerpt_path, manifest, whole_trace_path

ROOT = Path(__file__).resolve().parents[1]
SLURM_ENV = "TORUS_SWEEP_SLURM_TESTS"


@pytest.fixture(scope="session")
def trace_excerpt():
    """trace_excerpt(name) -> path of that trace's committed excerpt (.swf.gz)."""
    known = manifest()

    def path(name: str) -> Path:
        assert name in known, f"no excerpt of {name}; tests/data/traces has {sorted(known)}"
        return excerpt_path(name)

    return path


@pytest.fixture(scope="session")
def whole_trace():
    """whole_trace(name) -> path of the whole trace in TORUS_SWEEP_TRACE_DIR; the test is
    skipped (saying how to set the variable) where that does not hold it."""

    def path(name: str) -> Path:
        found = whole_trace_path(name)
        if isinstance(found, str):
            pytest.skip(found)
        return found

    return path


def pytest_terminal_summary(terminalreporter) -> None:
    """Name the tests skipped for want of whole traces or of the Slurm opt-in, and how to
    run them."""
    groups = {
        TRACE_DIR_ENV: (f"need whole traces: {HOW_TO}", []),
        SLURM_ENV: (f"submit jobs to Slurm: set {SLURM_ENV}=1 where a Slurm answers (.ci/run "
                    "starts one with .ci/slurm-up.sh and opts in)", []),
    }
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        for variable, (_, nodeids) in groups.items():
            if variable in reason:
                nodeids.append(report.nodeid)
    for variable, (how, nodeids) in groups.items():
        if nodeids:
            count = f"{len(nodeids)} test{'s' if len(nodeids) > 1 else ''}"
            terminalreporter.section(f"{count} skipped without {variable}", sep="-")
            terminalreporter.write_line(f"These {how}:")
            for nodeid in sorted(nodeids):
                terminalreporter.write_line(f"  {nodeid}")


def write_samples_of(root: Path, *shards) -> None:
    """The sample files of the synthetic workloads the shards read, as the workflow makes
    them under the results `root` (a workload's directory made again whole where it lacks
    a seed, with the seeds it had)."""
    from simcore.sweep.samples import listed, write_samples

    seeds: dict[Path, tuple] = {}
    for shard in shards:
        directory = (root / shard.source.path(shard.runs[0].seed)).parent
        spec, known = seeds.get(directory, (shard.source.synthetic, set()))
        seeds[directory] = (spec, known | {run.seed for run in shard.runs})
    for directory, (spec, known) in seeds.items():
        had = {seed for file in directory.glob("*.parquet") for seed in listed(file)}
        if not known <= had:
            write_samples(spec, known | had, directory)
