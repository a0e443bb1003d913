"""Hostile and damaged input: every stored artefact is verified where it is read, bad
numbers are refused with the flag, key or line that holds them, and nothing runs a shell
command made from a config string."""

from __future__ import annotations

import gzip
import http.server
import io
import os
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simcore.base.atomic import atomic_write_bytes, remove_stale_temporaries
from simcore.base.checksums import file_digest
from simcore.base.errors import IntegrityError, SWFValueError, TraceError
from simcore.jobs.swf import parse_swf
from simcore.sweep.cache import legacy_path
from simcore.sweep.runner import run_shard
from simcore.sweep.store import write_table
from simcore.workload.io import convert_trace, read_workload, write_workload
from simcore.workload.synthetic import synthesize
from simcore.workload.traces import TraceEntry, acquire
from tests.excerpts import excerpt_catalogue, manifest
from tests.test_runner import heavy_shard, summary, workloads
from tests.test_workflow_traces import trace_workload
from tests.workflow import scratch_workflow, small_config, snakemake

LINE = "1 0 0 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n"


# -- shell injection -----------------------------------------------------------------------

@pytest.mark.slow
def test_mirror_paths_are_arguments_not_shell(tmp_path, trace_excerpt):
    mirror = tmp_path / "my mirror; touch PWNED 'quoted' \"double\""
    mirror.mkdir()
    trace = "NASA-iPSC-1993-3.1-cln"
    shutil.copy(trace_excerpt(trace), mirror)
    wf = scratch_workflow(tmp_path)
    catalogue = excerpt_catalogue(tmp_path / "excerpts.yaml")  # pins the excerpt
    config = small_config(wf, traces={"mirrors": [str(mirror)], "catalogue": str(catalogue)})
    snakemake(wf, trace_workload(wf, config, trace), "--configfile", config)
    assert (wf / trace_workload(wf, config, trace)).is_file()
    assert not list(wf.rglob("PWNED")) and not list(tmp_path.rglob("PWNED"))


# -- the run cache -------------------------------------------------------------------------

@pytest.fixture
def cached_shard(tmp_path):
    """A shard of four runs, run once: its cache part and clean results."""
    shard = heavy_shard(jobs=200, loads=(0.6, 0.8), seeds=(1, 2))
    workloads(tmp_path, shard)
    run_shard(shard, tmp_path, log=io.StringIO())
    return shard, summary(tmp_path, shard)


def parts(root: Path) -> list[Path]:
    return sorted((root / "cache" / "batches").rglob("*.parquet"))


def flip_a_data_bit(path: Path, column: str | None = None) -> None:
    """Flip one bit of data, not the footer: in the middle of the file, or for a one-row
    file (whose footer outweighs its data) in the last byte of `column`'s chunk, that
    column's one plain value."""
    data = bytearray(path.read_bytes())
    at = len(data) // 3
    if column is not None:
        group = pq.ParquetFile(path).metadata.row_group(0)
        chunk = next(group.column(i) for i in range(group.num_columns)
                     if group.column(i).path_in_schema == column)
        start = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                 else chunk.data_page_offset)
        at = start + chunk.total_compressed_size - 1
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def relist(path: Path, keys: list[str]) -> None:
    """Rewrite a part's listing of run keys, its seal left as it was (an edit)."""
    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"run_keys": "\n".join(keys).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


@pytest.mark.parametrize("damage", ["truncate", "relisted", "flip", "delete", "garbage",
                                    "fifo"])
def test_a_damaged_cache_part_is_refused_and_its_runs_simulated_again(tmp_path, cached_shard,
                                                                        damage):
    shard, clean = cached_shard
    (part,) = parts(tmp_path)
    if damage == "truncate":
        part.write_bytes(part.read_bytes()[:-200])
    elif damage == "relisted":  # a listing that no longer names the runs of its rows
        relist(part, list(reversed(pq.read_schema(part).metadata[b"run_keys"].decode()
                                   .split("\n"))))
    elif damage == "flip":
        flip_a_data_bit(part)
    elif damage == "delete":
        part.unlink()
    elif damage == "fifo":  # read, it would never end
        part.unlink()
        os.mkfifo(part)
    else:
        part.write_bytes(b"not parquet at all")
    log = io.StringIO()
    report = run_shard(shard, tmp_path, log=log)
    assert report.simulated == len(shard.runs) and report.cached == 0
    if damage != "delete":
        assert f"cache: {part}:" in log.getvalue()
        assert "removed: its runs are simulated again" in log.getvalue()
    assert parts(tmp_path) == [part], "written again whole, under its batch's name"
    assert summary(tmp_path, shard).equals(clean), "repaired results equal a clean run's"


@pytest.mark.parametrize("damage", [None, "flip", "foreign"])
def test_a_run_cached_in_a_file_of_its_own_is_read(tmp_path, cached_shard, damage):
    """A store of an older simcore kept each run in a file of its own: such files are read
    (verified, for their own run only), never written."""
    shard, clean = cached_shard
    (part,) = parts(tmp_path)
    rows = pq.read_table(part)
    for key, row in zip(rows.column("run_key").to_pylist(), rows.to_batches(1), strict=True):
        write_table(pa.Table.from_batches([row]), legacy_path(tmp_path, key),
                    {"run_key": key})
    part.unlink()
    first, second = (legacy_path(tmp_path, k) for k in rows.column("run_key").to_pylist()[:2])
    if damage == "flip":
        flip_a_data_bit(first, "utilization")
    elif damage == "foreign":
        shutil.copy(second, first)  # another run's whole, valid entry
    log = io.StringIO()
    report = run_shard(shard, tmp_path, log=log)
    assert report.simulated == (damage is not None)
    if damage:
        assert f"cache entry {first}:" in log.getvalue()
    assert summary(tmp_path, shard).equals(clean)
    assert len(parts(tmp_path)) == (damage is not None), "new runs go to parts alone"


def test_stale_temporary_files_of_killed_writers_are_removed(tmp_path):
    target = tmp_path / "entry.parquet"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    import socket

    host = socket.gethostname().replace("~", "-")
    stale = tmp_path / f".entry.parquet~{host}~{dead}~abc.tmp"
    live = tmp_path / f".entry.parquet~{host}~{os.getpid()}~def.tmp"
    remote = tmp_path / f".entry.parquet~otherhost~{dead}~ghi.tmp"
    for path in (stale, live, remote):
        path.write_bytes(b"partial")
    os.utime(remote, (time.time() - 2 * 86_400,) * 2)
    atomic_write_bytes(target, b"whole")
    assert target.read_bytes() == b"whole"
    assert not stale.exists() and not remote.exists(), "dead here, or older than a day"
    assert live.exists(), "a running writer's file is left alone"
    assert remove_stale_temporaries(target) == 0


# -- converted traces and workload files ---------------------------------------------------

def test_tampered_trace_is_not_converted(tmp_path, trace_excerpt):
    original = trace_excerpt("NASA-iPSC-1993-3.1-cln")
    tampered = tmp_path / original.name
    text = gzip.decompress(original.read_bytes()).replace(b"\n1 ", b"\n1  ", 1)
    tampered.write_bytes(gzip.compress(text))
    pinned = manifest()["NASA-iPSC-1993-3.1-cln"]["sha256"]
    with pytest.raises(TraceError, match=rf"sha256 [0-9a-f]{{64}}, expected {pinned}.* changed or"):
        convert_trace(tampered, tmp_path / "jobs.parquet",
                      expect_sha256=file_digest(original))
    assert not (tmp_path / "jobs.parquet").exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "plain parquet"])
def test_damaged_workload_file_says_how_to_rebuild(tmp_path, damage):
    path = tmp_path / "jobs.parquet"
    table = synthesize(heavy_shard().source.synthetic, 1)
    write_workload(table, path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-300])
    elif damage == "flip":
        flip_a_data_bit(path)
    else:
        pq.write_table(table.replace_schema_metadata(None), path)
    with pytest.raises(IntegrityError, match=rf"{path}: .*remove it and run snakemake again"):
        read_workload(path)


# -- numbers outside what a field can hold -------------------------------------------------

@pytest.mark.parametrize(("line", "message"), [
    (LINE.replace(" 100 4 ", " 100 99999999999999999999 "),
     r"x.swf:2: field 5 \(allocated_processors\) is 1e\+20, out of range; expected an integer"),
    (LINE.replace(" 100 4 ", " 1e999 4 "), r"x.swf:2: field 4 \(run_time\) is inf, out of range"),
    (str(2**53 + 1) + LINE[1:],  # as a float it would be 2^53
     r"x.swf:2: field 1 \(job_number\) is 9007199254740993, out of range; expected an integer"),
    (LINE.replace(" 100 4 ", " 100 4.0 "),
     r"x.swf:2: field 5 \(allocated_processors\) is '4.0'; expected an integer written in"),
    (LINE.replace(" 100 4 ", " 100 1e3 "),
     r"x.swf:2: field 5 \(allocated_processors\) is '1e3'; expected an integer written in"),
])
def test_swf_numbers_out_of_range(line, message):
    with pytest.raises(SWFValueError, match=message):
        parse_swf(("; MaxProcs: 4\n" + line).encode(), "x.swf")


@pytest.mark.parametrize("value", ["10^30", "1e3", "1" + "0" * 30, "0", "64procs", "-2"])
def test_swf_header_sizes_are_integers_in_digits(value):
    with pytest.raises(SWFValueError, match=rf"x.swf:2: header MaxNodes is '{re.escape(value)}'; "
                                            r"expected -1 \(unknown\) or an integer from 1"):
        parse_swf(f"; MaxProcs: 4\n; MaxNodes: {value}\n{LINE}".encode(), "x.swf")
    header = "; MaxProcs: -1\n; MaxNodes: 338 (batch partition; 512 total)\n"
    assert parse_swf((header + LINE).encode(), "x.swf").num_rows == 1


@pytest.mark.parametrize(("data", "expected"), [
    (b"\xef\xbb\xbf; MaxProcs: 4\n" + LINE.encode(), 1),  # a UTF-8 byte-order mark
    (("; MaxProcs: 4\r" + LINE.strip() + "\r2" + LINE.strip()[1:] + "\r").encode(), 2),  # CR only
])
def test_swf_encodings_that_are_still_swf(data, expected):
    assert parse_swf(data, "x.swf").num_rows == expected


# -- the command line never shows a traceback for bad input --------------------------------

def simcore(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcore", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)


RUN = ["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "flat:16",
       "--scheduler", "fcfs"]


@pytest.mark.parametrize(("args", "message"), [
    ([*RUN, "--offered-load", "inf"], "--offered-load: offered_load='inf'; expected a finite"),
    ([*RUN, "--param", "start_delay_s=inf"], "start_delay_s='inf'; expected a finite number"),
    ([*RUN, "--seed", str(2**64)], "--seed: seed='18446744073709551616'; expected an integer"),
    ([*RUN[:4], "300.0", *RUN[5:]], "--jobs: jobs='300.0'; expected an integer >= 1"),
    ([*RUN[:6], "flat:10000000000000", *RUN[7:]], "expected at most 2^40"),
    ([*RUN[:6], "mesh:100000", *RUN[7:]], "largest-free search needs one side of at most 64"),
    ([*RUN, "--jobs-out", "/nonexistent/dir/x.parquet"], "directory /nonexistent/dir does not"),
    ([*RUN, "--jobs-out", "."], "--jobs-out .: is a directory"),
    ([*RUN, "--cleaning", '{"oversize": 3}'], "cleaning option oversize=3"),
    (["archive", "verify", "."], ".: is a directory; expected an archive file"),
    (["swf-info", "missing.swf"], "missing.swf: No such file or directory"),
    (["reproduction", "--summaries", "missing.parquet", "--out", "r.md"],
     "missing.parquet: No such file or directory"),
    (["run", "--workload", "empty.swf", "--machine", "flat:4", "--scheduler", "fcfs"],
     "the workload holds no jobs: cleaning removed all 1 (nonpositive_runtime 1)"),
    (["run", "--workload", "big.swf", "--machine", "flat:4", "--scheduler", "fcfs"],
     "simcore run --cleaning '{\"oversize\": \"drop\"}'"),
    (["run", "--workload", "big.swf", "--machine", "flat:4", "--scheduler", "fcfs",
      "--cleaning", '{"drop_negative_submit": "yes"}'], "drop_negative_submit='yes'"),
])
def test_bad_input_is_one_line_not_a_traceback(tmp_path, args, message):
    (tmp_path / "empty.swf").write_text("; MaxProcs: 4\n" + LINE.replace(" 100 4 ", " -1 4 "))
    (tmp_path / "big.swf").write_text("; MaxProcs: 2\n" + LINE)
    result = simcore(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("simcore: error: ")
    assert message in result.stderr


# -- downloads -----------------------------------------------------------------------------

class _Trickle(http.server.BaseHTTPRequestHandler):
    """A slow network: a byte every 0.2 s, never finishing; `started` is set once the
    first byte is out."""

    started: threading.Event

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"x")
                self.wfile.flush()
                self.started.set()
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def trickle():
    started = threading.Event()
    handler = type("Handler", (_Trickle,), {"started": started})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/x.swf.gz", started
    server.shutdown()
    server.server_close()


def test_download_has_an_overall_deadline(tmp_path, trickle):
    entry = TraceEntry("x", trickle[0], "0" * 64, 1, 1, 1)
    with pytest.raises(TraceError, match=r"the transfer took more than 1 s"):
        acquire(entry, tmp_path / "dl" / "x.swf.gz", [], timeout_s=5, deadline_s=1)
    assert list((tmp_path / "dl").iterdir()) == []


def test_sigterm_leaves_no_temporary_file(tmp_path, trickle):
    url, started = trickle
    catalogue = tmp_path / "c.yaml"
    catalogue.write_text(f"traces:\n  x: {{url: '{url}', sha256: '{'0' * 64}', jobs: 1, "
                         "max_procs: 1, machine_size: 1}\n")
    out = tmp_path / "dl" / "x.swf.gz"
    process = subprocess.Popen([sys.executable, "-m", "simcore", "fetch-trace", "x",
                                "--catalogue", str(catalogue), "--out", str(out)],
                               stderr=subprocess.PIPE, text=True)
    assert started.wait(timeout=60), "the download should have started"
    assert any(out.parent.iterdir()), "its temporary file exists"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    process.stderr.close()
    assert list(out.parent.iterdir()) == []


def test_capacity_identity_has_no_negative_rounding_residue():
    """NASA on a flat machine used to report lost = -1.1e-16: when every idle unit is
    unused, lost is exactly 0."""
    import numpy as np

    from simcore.core.metrics import capacity

    size, run, submit, end = (np.array([3]), np.array([0.1]), np.array([0.0]),
                              np.array([0.3]))
    utilized, unused, lost, _, _ = capacity(size * run, submit, end, 7, 7 * 0.3 - 3 * 0.1)
    assert lost == 0.0 and abs(utilized + unused - 1.0) < 1e-15
