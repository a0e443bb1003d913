"""Trace acquisition: mirrors, downloads, checksums, and nothing left behind on failure."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from simcore.base.checksums import file_digest
from simcore.base.errors import TraceError
from simcore.workload.traces import MIRROR_ENV, TraceEntry, acquire, load_catalogue, mirror_dirs
from tests.conftest import ROOT
from tests.excerpts import excerpt_catalogue

CATALOGUE = ROOT / "config" / "traces.yaml"
REQUIRED = ["NASA-iPSC-1993-3.1-cln", "SDSC-SP2-1998-4.2-cln", "CTC-SP2-1996-3.1-cln",
            "Sandia-Ross-2001-1.1-cln", "SDSC-BLUE-2000-4.2-cln", "SDSC-Par-1996-3.1-cln"]


def test_catalogue_names_every_trace():
    catalogue = load_catalogue(CATALOGUE)
    assert set(REQUIRED) <= set(catalogue)
    for name in REQUIRED:
        entry = catalogue[name]
        assert entry.url.startswith("https://www.cs.huji.ac.il/labs/parallel/workload/l_")
        assert entry.filename == f"{name}.swf.gz"


@pytest.mark.parametrize("name", REQUIRED)
def test_catalogue_pins_every_shared_trace(name, whole_trace):
    entry = load_catalogue(CATALOGUE)[name]
    assert file_digest(whole_trace(name)) == entry.sha256


def test_mirror_copy_verified(trace_excerpt, tmp_path):
    """A mirror (the excerpts' directory) holds the trace that a catalogue pins."""
    entry = load_catalogue(excerpt_catalogue(tmp_path / "c.yaml"))["NASA-iPSC-1993-3.1-cln"]
    mirror = trace_excerpt(entry.name).parent
    out = acquire(entry, tmp_path / "r" / entry.filename, [tmp_path / "absent", mirror])
    assert file_digest(out) == entry.sha256
    assert out.read_bytes() == trace_excerpt(entry.name).read_bytes()


def test_env_mirror_is_searched(monkeypatch, tmp_path):
    monkeypatch.setenv(MIRROR_ENV, f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert mirror_dirs(["/cfg"]) == [p for p in map(type(tmp_path), ["/cfg", tmp_path / "a",
                                                                      tmp_path / "b"])]


def _entry(tmp_path, payload: bytes, url: str) -> TraceEntry:
    mirror = tmp_path / "mirror"
    mirror.mkdir(exist_ok=True)
    (mirror / "x.swf.gz").write_bytes(payload)
    return TraceEntry("x", url, file_digest(mirror / "x.swf.gz"), 1, 1, 1)


def test_mismatching_mirror_leaves_nothing(tmp_path):
    entry = _entry(tmp_path, b"good", "http://127.0.0.1:9/x.swf.gz")
    (tmp_path / "mirror" / "x.swf.gz").write_bytes(b"tampered")
    dest = tmp_path / "out" / "x.swf.gz"
    with pytest.raises(TraceError, match=rf"mirror copy .* has sha256 .*expected {entry.sha256}"):
        acquire(entry, dest, [tmp_path / "mirror"])
    assert list((tmp_path / "out").iterdir()) == []


def test_failed_download_says_how_to_mirror(tmp_path):
    entry = _entry(tmp_path, b"good", "http://127.0.0.1:9/x.swf.gz")
    dest = tmp_path / "out" / "x.swf.gz"
    with pytest.raises(TraceError, match=rf"cannot download trace x .*{MIRROR_ENV}"):
        acquire(entry, dest, [])
    assert list((tmp_path / "out").iterdir()) == []


@pytest.fixture
def http_dir(tmp_path):
    """A real HTTP server on localhost serving tmp_path/www."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_verified(http_dir, tmp_path):
    root, base = http_dir
    (root / "x.swf.gz").write_bytes(b"payload")
    entry = _entry(tmp_path, b"payload", f"{base}/x.swf.gz")
    dest = acquire(entry, tmp_path / "dl" / "x.swf.gz", [])
    assert dest.read_bytes() == b"payload"


def test_download_checksum_mismatch_leaves_nothing(http_dir, tmp_path):
    root, base = http_dir
    (root / "x.swf.gz").write_bytes(b"other version")
    entry = _entry(tmp_path, b"payload", f"{base}/x.swf.gz")
    with pytest.raises(TraceError, match=r"download of .* has sha256"):
        acquire(entry, tmp_path / "dl" / "x.swf.gz", [])
    assert list((tmp_path / "dl").iterdir()) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("traces: {}\n", "key 'traces' must map"),
        ("traces:\n  a: {url: u, sha256: ab, jobs: 1, max_procs: 1, machine_size: 1}\n",
         r"traces.a.sha256: expected 64 hex digits"),
        ("traces:\n  a: {url: u, jobs: 1, max_procs: 1, machine_size: 1}\n",
         r"traces.a.sha256: expected str, got None"),
        ("traces:\n  a: {url: u, sha256: " + "ab" * 32 + ", jobs: 1, max_procs: 1, "
         "machine_size: 1, size: 3}\n", r"traces.a: unknown key\(s\) \['size'\]"),
    ],
)
def test_catalogue_errors_name_the_key(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(TraceError, match=message):
        load_catalogue(path)
