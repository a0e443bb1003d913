"""The `simcore` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.excerpts import manifest, raw_jobs


def simcore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcore", *args],
                          capture_output=True, text=True, check=False)


def test_swf_info_json(whole_trace):
    result = simcore("swf-info", str(whole_trace("SDSC-SP2-1998-4.2-cln")), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["jobs"] == 59715
    assert info["max_procs"] == 128 and info["max_nodes"] == 128
    assert info["first_submit"] < info["last_submit"]
    assert 0.5 < info["offered_load"] < 1.0
    assert info["cleaning_removed"]["nonpositive_runtime"] == 5681
    assert sum(info["size_histogram"].values()) == info["jobs_clean"]


def test_swf_info_text(whole_trace):
    result = simcore("swf-info", str(whole_trace("NASA-iPSC-1993-3.1-cln")))
    assert result.returncode == 0, result.stderr
    assert "jobs:         18239" in result.stdout
    assert "offered load:" in result.stdout


def test_swf_info_on_an_excerpt(trace_excerpt):
    """swf-info's counts and load on SDSC-SP2's excerpt, against the same statistics
    computed here from the job lines split by hand."""
    path = trace_excerpt("SDSC-SP2-1998-4.2-cln")
    result = simcore("swf-info", str(path), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    raw = np.array(raw_jobs(path))
    submit, run = raw[:, 1], raw[:, 3]
    size = np.where(raw[:, 4] > 0, raw[:, 4], raw[:, 7])
    keep = (run > 0) & (size > 0) & (submit >= 0) & (size <= 128)
    assert info["jobs"] == len(raw) == manifest()["SDSC-SP2-1998-4.2-cln"]["jobs"]
    assert info["max_procs"] == 128 and info["max_nodes"] == 128
    assert info["cleaning_removed"]["nonpositive_runtime"] == (run <= 0).sum() > 0
    assert info["jobs_clean"] == keep.sum()
    assert (info["first_submit"], info["last_submit"]) == (submit[keep].min(),
                                                           submit[keep].max())
    span = submit[keep].max() - submit[keep].min()
    load = (size[keep] * run[keep]).sum() / (128 * span)
    assert info["offered_load"] == pytest.approx(load, rel=1e-12)
    assert sum(info["size_histogram"].values()) == info["jobs_clean"]


def test_swf_info_text_on_an_excerpt(trace_excerpt):
    result = simcore("swf-info", str(trace_excerpt("NASA-iPSC-1993-3.1-cln")))
    assert result.returncode == 0, result.stderr
    jobs = manifest()["NASA-iPSC-1993-3.1-cln"]["jobs"]
    assert f"jobs:         {jobs} (" in result.stdout
    assert "offered load:" in result.stdout


def test_swf_info_bad_line_fails_precisely(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text("; MaxProcs: 8\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1\n")
    result = simcore("swf-info", str(path), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{path}:2: found 17 fields; expected 18" in result.stderr


def test_run_of_a_time_sharing_scheduler_prints_its_summary():
    """Its engine reports no Chu statistics: the text says what it has instead of failing
    on what it lacks."""
    result = simcore("run", "--workload", "lublin:32", "--jobs", "60", "--seed", "1",
                     "--machine", "flat:32", "--scheduler", "gang", "--bsp-model", "random")
    assert result.returncode == 0, result.stderr
    line = next(s for s in result.stdout.splitlines() if "response mean" in s)
    assert "busy fraction" not in line and line.strip().endswith(" s")


def test_run_on_a_curve_machine(tmp_path):
    """An ordered allocator with its options, a replicated workload, per-job nodes."""
    out = tmp_path / "jobs.parquet"
    result = simcore("run", "--workload", "lublin:40", "--jobs", "200", "--seed", "3",
                     "--machine", "mesh:4x4x2", "--allocator", "best-fit", "--ordering",
                     "hilbert", "--machine-param", "fallback_span=ring", "--scheduler",
                     "cplant", "--replication", "2", "--machine-fit", "clamp",
                     "--jobs-out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["machine"] == "mesh:4x4x2 allocator=best-fit ordering=hilbert " \
                                "fallback_span=ring"
    assert report["jobs"] == 400 and report["workload"]["replication"] == 2
    assert report["span_ring_mean"] >= 1 and report["timing"]["metrics_s"] >= 0
    import pyarrow.parquet as pq

    jobs = pq.read_table(out)
    assert [len(n) for n in jobs.column("nodes").to_pylist()] == \
        jobs.column("size").to_pylist()
    bad = simcore("run", "--workload", "lublin:40", "--jobs", "10", "--machine", "mesh:4x4x2",
                  "--allocator", "best-fit", "--machine-param", "fallback_span", "--scheduler",
                  "cplant")
    assert bad.returncode == 2
    assert "--machine-param 'fallback_span'; expected KEY=VALUE" in bad.stderr


def test_menus_candidates_writes_loadable_menus(tmp_path):
    """`simcore menus candidates`: one menu per size set and spacing, each a valid torus3d
    menu of the torus whose header holds the command that made it."""
    from pathlib import Path

    from simcore.machines.slurm.menu import load_menu

    result = simcore("menus", "candidates", "--workload", "lublin:128", "--jobs", "300",
                     "--seed", "2", "--torus", "8x4x4", "--prefix", "w", "--out",
                     str(tmp_path))
    assert result.returncode == 0, result.stderr
    paths = result.stdout.split()
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == sorted(
        f"w-{s}-{g}.yaml" for s in ("pow2", "pow4", "quantiles", "work")
        for g in ("full", "half"))
    for path in paths:
        assert load_menu(path).toruses[0].dims == (8, 4, 4)
        assert "simcore menus candidates --workload lublin:128 --jobs 300" in \
            Path(path).read_text()
    bad = simcore("menus", "candidates", "--workload", "lublin:128", "--jobs", "30",
                  "--torus", "8x4", "--prefix", "w", "--out", str(tmp_path))
    assert bad.returncode == 2 and "--torus '8x4': expected XxYxZ" in bad.stderr


#: Every command line below is parsed in a fresh interpreter, which then prints which of
#: numba, polars and matplotlib it loaded: building the parser and parsing must load none,
#: so that each shard and worker pays for them only when its command uses them. (numpy and
#: pyarrow it does load: the parser shows names that modules of the simulation define.)
PARSING = """
import contextlib, io, sys
from simcore.cli.main import _parser
for argv in ([], ["--help"], ["run", "--help"], ["plan", "--help"], ["list", "--help"],
             ["run", "--workload", "w", "--machine", "flat:4"], ["plan", "--configfile", "c"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        _parser().parse_args(argv)
print(sorted({m.split(".")[0] for m in sys.modules} & {"numba", "polars", "matplotlib"}))
"""


def test_parsing_a_command_line_loads_no_heavy_library():
    result = subprocess.run([sys.executable, "-c", PARSING], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n"


def test_each_group_adds_the_commands_the_table_names():
    """`simcore CMD` imports CMD's group alone, found by the table GROUPS: each group adds
    exactly the commands the table names for it, and `simcore --help` lists them all."""
    from simcore.cli.main import GROUPS, _parser

    def commands(parser):
        return list(next(a for a in parser._actions if a.dest == "command").choices)

    for group, names in GROUPS.items():
        assert commands(_parser([names[0]])) == list(names), group
    assert commands(_parser(["--help"])) == [n for names in GROUPS.values() for n in names]


def test_a_command_imports_its_own_group_alone():
    code = ("import sys; from simcore.cli.main import _parser; _parser(['sweep-shard']); "
            "print(sorted(m for m in sys.modules if m.startswith('simcore.cli.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == "['simcore.cli.common', 'simcore.cli.main', 'simcore.cli.sweep']\n"


@pytest.mark.parametrize("flag", ["--machine-fit", "--oversize"])
def test_run_reads_the_machine_fit_transform_under_either_name(flag):
    """`--oversize`, the transform's former name, is still read, as machine_fit."""
    from simcore.cli.main import _parser

    args = _parser().parse_args(["run", "--workload", "w", "--machine", "flat:4",
                                 "--scheduler", "fcfs", flag, "drop"])
    assert args.machine_fit == "drop"
