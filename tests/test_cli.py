"""The `simcore` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys


def simcore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcore.cli", *args],
                          capture_output=True, text=True, check=False)


def test_swf_info_json(trace_path):
    result = simcore("swf-info", str(trace_path("SDSC-SP2-1998-4.2-cln")), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["jobs"] == 59715
    assert info["max_procs"] == 128 and info["max_nodes"] == 128
    assert info["first_submit"] < info["last_submit"]
    assert 0.5 < info["offered_load"] < 1.0
    assert info["cleaning_removed"]["nonpositive_runtime"] == 5681
    assert sum(info["size_histogram"].values()) == info["jobs_clean"]


def test_swf_info_text(trace_path):
    result = simcore("swf-info", str(trace_path("NASA-iPSC-1993-3.1-cln")))
    assert result.returncode == 0, result.stderr
    assert "jobs:         18239" in result.stdout
    assert "offered load:" in result.stdout


def test_swf_info_bad_line_fails_precisely(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text("; MaxProcs: 8\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1\n")
    result = simcore("swf-info", str(path), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{path}:2: found 17 fields; expected 18" in result.stderr
