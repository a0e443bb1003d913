"""What `simcore run` reports: compile time apart from simulation time, clean help, one
description of a policy, and every field of `--json` described in docs/outputs.md."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import polars as pl
import pytest

from tests.conftest import ROOT
from tests.test_archive import _fixed_environment, results  # noqa: F401 (fixtures)

FLAT_BACKFILL = ("run", "--workload", "lublin:128", "--jobs", "60", "--seed", "1",
                 "--machine", "flat:128", "--scheduler", "backfill")


def simcore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcore", *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def run_json() -> dict:
    result = simcore(*FLAT_BACKFILL, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _keys(value: dict, skip: tuple[str, ...] = ("termination_s",)) -> Iterator[str]:
    """Every key of a JSON object, nested objects' too (but the job ids of `skip`)."""
    for key, inner in value.items():
        yield key
        if isinstance(inner, dict) and key not in skip:
            yield from _keys(inner, skip)


def _documented() -> set[str]:
    page = (ROOT / "docs/outputs.md").read_text()
    return {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}


def test_every_field_of_run_json_is_described(run_json: dict) -> None:
    assert {"resources_left_busy", "termination_s", "turnaround_s"} <= set(run_json)
    missing = [key for key in dict.fromkeys(_keys(run_json)) if key not in _documented()]
    assert not missing, f"not in docs/outputs.md: {missing}"


def test_compile_time_is_reported_apart_from_simulation_time(run_json: dict) -> None:
    timing = run_json["timing"]
    assert set(timing) == {"compile_s", "simulate_s", "s_per_decision", "metrics_s"}
    assert timing["compile_s"] >= 0 and timing["simulate_s"] >= 0
    text = simcore(*FLAT_BACKFILL)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert any(line.strip().startswith("kernel compiled or loaded from numba's cache in")
               for line in lines)
    assert any(line.strip().startswith("simulated in") for line in lines)


def test_run_help_keeps_names_apart_from_descriptions() -> None:
    from simcore.cli.simulation import _registry_help
    from simcore.machines.curves.orderings import ORDERINGS
    from simcore.machines.registry import ALLOCATORS, KINDS
    from simcore.policy import SCHEDULERS

    lines = _registry_help().splitlines()
    for name in (*KINDS, *ALLOCATORS, *ORDERINGS, *SCHEDULERS):
        rows = [line for line in lines if line.startswith(f"  {name}")]
        assert rows, name
        assert any(line[2 + len(name):].startswith("  ") for line in rows), name
    assert "sum-of-squarestorus" not in simcore("run", "--help").stdout


def test_one_description_of_a_policy_on_the_command_line_and_in_the_tables(
        run_json: dict) -> None:
    """Backfilling on a flat machine cannot grow jobs: neither the command line nor the
    tables print a max_growth for it, and both print the same words; --json records the
    neutral value a sweep's store records."""
    assert run_json["policy"]["max_growth"] == 0
    result = simcore(*FLAT_BACKFILL)
    assert result.returncode == 0, result.stderr
    described = result.stdout.splitlines()[0].split(" under ", 1)[1]
    assert "max_growth" not in described

    from simcore.policy import PolicySpec
    from simcore.report.tables import _policies

    policy = PolicySpec("backfill")
    rows = pl.DataFrame([{"policy": "backfill", "machine": "flat", "machine_spec": "flat:128",
                          "scheduler": "backfill", **{c: None for c in _policy_columns()},
                          **policy.params(), "max_growth": 0}])
    assert _policies(rows) == [f"- backfill = {described}"]
    torus = rows.with_columns(pl.lit("torus:4x4x8").alias("machine_spec"),
                              pl.lit(1).alias("max_growth"))
    assert "max_growth=1" in _policies(torus)[0]


def _policy_columns() -> tuple[str, ...]:
    from simcore.sweep.store import POLICY_COLUMNS

    return POLICY_COLUMNS


def _section(output: str) -> set[str]:
    """The fields docs/outputs.md describes under `## <output>`."""
    page = (ROOT / "docs/outputs.md").read_text()
    body = page.split(f"\n## {output}\n", 1)[1].split("\n## ", 1)[0]
    return {line.split("`")[1] for line in body.splitlines() if line.startswith("| `")}


def _top_and_listed(value: dict) -> set[str]:
    """The keys of an object and of the objects in its lists (plan's experiments)."""
    keys = set(value)
    for inner in value.values():
        if isinstance(inner, list):
            keys |= {k for item in inner if isinstance(item, dict) for k in item}
    return keys


@pytest.mark.parametrize("output, args", [
    ("simcore swf-info --json", ("swf-info", "{swf}", "--json")),
    ("simcore plan --json", ("plan", "--configfile", "config/config.yaml", "--results",
                             "{tmp}", "--json")),
    ("simcore fidelity --json", ("fidelity", "{swf}", "--machine", "flat:8", "--scheduler",
                                 "fcfs", "--json")),
    ("simcore bgl links --json", ("bgl", "links", "--dim", "x", "--midplanes", "1,2",
                                  "--topology", "torus", "--json")),
])
def test_every_field_of_the_other_commands_json_is_described(tmp_path, output, args) -> None:
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 8\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "2 5 0 20 2 -1 -1 2 30 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = subprocess.run(
        [sys.executable, "-m", "simcore", *(a.format(swf=swf, tmp=tmp_path) for a in args)],
        capture_output=True, text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    written = _top_and_listed(json.loads(result.stdout))
    assert written <= _section(output), sorted(written - _section(output))


def test_every_field_of_archive_verify_is_described(tmp_path, results) -> None:  # noqa: F811
    from simcore.report.archive import pack, verify
    from tests.test_archive import METADATA

    report = verify(pack(tmp_path / "d.tar.xz", results, METADATA))
    assert set(report) <= _section("simcore archive verify --json")


def test_every_column_of_leung_table1_is_described() -> None:
    """What `leung2002 table1` prints as JSON and writes as table1.csv, on two made-up
    runs per strategy (the simulations themselves are tests/test_leung2002.py's)."""
    from simcore.tools.leung2002 import STRATEGIES, summarize_table1

    runs = pl.DataFrame([{"dilation": 0.0, "strategy": name, "makespan_s": 100.0 + seed,
                          "mean_hops": 2.0} for name in STRATEGIES for seed in (1, 2)])
    assert set(summarize_table1(runs).columns) <= _section("simcore leung2002 table1 --json")


def test_every_field_of_the_archive_manifest_is_described(tmp_path, results) -> None:  # noqa: F811
    import tarfile

    from simcore.report.archive import MANIFEST_JSON, pack
    from tests.test_archive import METADATA

    with tarfile.open(pack(tmp_path / "d.tar.xz", results, METADATA)) as tar:
        manifest = json.load(tar.extractfile(MANIFEST_JSON))  # type: ignore[arg-type]
    assert _top_and_listed(manifest) <= _section("archive manifest.json"), sorted(
        _top_and_listed(manifest) - _section("archive manifest.json"))
