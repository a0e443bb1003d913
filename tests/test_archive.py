"""Dataset archives: layout, reproducibility, verification and corruption."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.base.errors import ArchiveError, SimcoreError
from simcore.base.stamps import write_stamp
from simcore.report import archive
from simcore.report.archive import GENERATED, MANIFEST, pack, pack_dataset, verify
from simcore.sweep.runner import run_shard
from simcore.sweep.store import RESULT_SCHEMA_VERSION, write_table
from tests.test_integrity import flip_a_data_bit
from tests.test_runner import heavy_shard, workloads

REAL_PIP_FREEZE = archive._pip_freeze
METADATA = {"name": "torus-sweep test dataset", "version": "1.0", "git_commit": "0123abc",
            "config": {"experiments": {"krevat": {"loads": [0.5, 0.9], "workloads": ["nasa"]}},
                       "workloads": {"nasa": {"trace": "NASA-iPSC-1993-3.1-cln"}}, "seed": 7}}
SHARD = {"dataset": "results", "experiment": "e", "workload": "w", "machine": "m", "policy": "p"}
TABLE_ROWS = {"tables/summary.parquet": 5, "tables/wait.parquet": 3}
DATA = ["config/config.yaml", "figures/utilization.png",
        "store/experiment=e/workload=w/machine=m/policy=p/summary.parquet", *TABLE_ROWS]


@pytest.fixture(autouse=True)
def _fixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip the real `pip freeze` (0.5 s a call) except where a test restores it."""
    monkeypatch.setattr(archive, "_pip_freeze", lambda: "# pip freeze stand-in\npolars==1\n")


@pytest.fixture
def results(tmp_path: Path) -> dict[str, Path]:
    """A small results tree: a store shard, two tables, a figure and a config file."""
    root = tmp_path / "results"
    shard = root / "store" / "experiment=e" / "workload=w" / "machine=m" / "policy=p"
    shard.mkdir(parents=True)
    (root / "tables").mkdir()
    (root / "figures").mkdir()
    write_table(pl.DataFrame({"run_key": ["a", "b"], "utilization": [0.5, 0.75]}).to_arrow(),
                shard / "summary.parquet", {"shard": SHARD})
    pl.DataFrame({"load": [0.1 * i for i in range(5)], "policy": ["fcfs"] * 5}).write_parquet(
        root / "tables" / "summary.parquet")
    pl.DataFrame({"wait_s": [1.0, 2.0, 3.0]}).write_parquet(root / "tables" / "wait.parquet")
    (root / "figures" / "utilization.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    config = tmp_path / "config.yaml"
    config.write_text("seed: 7\nexperiments:\n  krevat:\n    loads: [0.5, 0.9]\n")
    return {"store": root / "store", "tables": root / "tables", "figures": root / "figures",
            "config": config}


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _relist(contents: dict[str, bytes], *, json_too: bool = True) -> None:
    """List the members as they now are in MANIFEST.sha256 and (with `json_too`) in
    manifest.json's members, as a forger would."""
    if json_too and "manifest.json" in contents:
        document = json.loads(contents["manifest.json"])
        document["members"] = [{"path": n, "sha256": hashlib.sha256(b).hexdigest(),
                                "size": len(b)} for n, b in sorted(contents.items())
                               if n not in (MANIFEST, "manifest.json")]
        contents["manifest.json"] = json.dumps(document).encode()
    contents[MANIFEST] = "".join(f"{hashlib.sha256(b).hexdigest()}  {n}\n"
                                 for n, b in sorted(contents.items()) if n != MANIFEST).encode()


def _rewrite(src: Path, dst: Path, edit: Callable[[dict[str, bytes]], None]) -> Path:
    """Copy an archive to an uncompressed tar after `edit` changed its members in place."""
    contents = _members(src)
    edit(contents)
    with tarfile.open(dst, "w") as tar:
        for name, data in contents.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dst


@pytest.mark.parametrize("suffix", [".tar.xz", ".tar.gz"])
def test_pack_then_verify(tmp_path: Path, results: dict[str, Path], suffix: str) -> None:
    out = pack(tmp_path / f"dataset{suffix}", results, METADATA)
    with tarfile.open(out) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted([*DATA, *GENERATED])
    assert all(i.isfile() and i.mtime == 0 and i.mode == 0o644 and (i.uid, i.gid) == (0, 0)
               and i.uname == i.gname == "" for i in infos)
    report = verify(out)
    assert report == {"archive": str(out), "dataset": METADATA["name"], "members": len(infos),
                      "bytes": sum(i.size for i in infos), "tables": TABLE_ROWS}
    for name, rows in TABLE_ROWS.items():
        assert pl.read_parquet(results["tables"] / Path(name).name).height == rows


def test_generated_members(tmp_path: Path, results: dict[str, Path]) -> None:
    contents = _members(pack(tmp_path / "dataset.tar", results, METADATA))
    lines = contents[MANIFEST].decode().splitlines()
    assert lines == [f"{hashlib.sha256(contents[n]).hexdigest()}  {n}"
                     for n in sorted(contents) if n != MANIFEST]
    manifest = json.loads(contents["manifest.json"])
    assert manifest["archive_schema_version"] == archive.ARCHIVE_SCHEMA_VERSION
    assert (manifest["name"], manifest["git_commit"]) == (METADATA["name"], "0123abc")
    assert manifest["config"] == METADATA["config"]
    assert manifest["simcore_version"]
    assert manifest["result_schema_version"] == RESULT_SCHEMA_VERSION
    assert manifest["members"] == [
        {"path": n, "sha256": hashlib.sha256(contents[n]).hexdigest(), "size": len(contents[n])}
        for n in sorted(contents) if n not in (MANIFEST, "manifest.json")]
    assert contents["environment.txt"] == b"# pip freeze stand-in\npolars==1\n"
    cff = yaml.safe_load(contents["CITATION.cff"])
    assert (cff["cff-version"], cff["type"], cff["title"], cff["version"]) == (
        "1.2.0", "dataset", METADATA["name"], "1.0")
    assert cff["message"] and cff["authors"] and cff["commit"] == "0123abc"
    paper = cff["references"][0]
    assert paper["title"] == "Experience with using the Parallel Workloads Archive"
    assert [a["family-names"] for a in paper["authors"]] == ["Feitelson", "Tsafrir", "Krakov"]
    assert (paper["journal"], paper["volume"], paper["issue"], paper["start"], paper["end"],
            paper["year"]) == ("Journal of Parallel and Distributed Computing", 74, 10, 2967,
                               2982, 2014)
    readme = contents["README.md"].decode()
    for needle in (METADATA["name"], "0123abc", "tables/wait.parquet", "pl.read_parquet",
                   "sha256sum -c MANIFEST.sha256", "CITATION.cff", "krevat"):
        assert needle in readme


@pytest.mark.parametrize("suffix", [".tar.xz", ".tar.gz", ".tar"])
def test_repack_is_byte_identical(tmp_path: Path, results: dict[str, Path], suffix: str) -> None:
    first = pack(tmp_path / f"a{suffix}", results, METADATA)
    for path in [results["config"], *results["tables"].iterdir()]:
        os.utime(path, (1_000_000, 1_000_000))  # file times must not reach the archive
    second = pack(tmp_path / f"b{suffix}", dict(reversed(results.items())), METADATA)
    assert first.read_bytes() == second.read_bytes()
    if suffix == ".tar.gz":  # no name, no timestamp in the gzip header
        assert first.read_bytes()[3:8] == b"\0\0\0\0\0"


def test_given_epoch_and_no_commit(tmp_path: Path, results: dict[str, Path]) -> None:
    out = pack(tmp_path / "d.tar", results, {**METADATA, "git_commit": None}, mtime=1_700_000_000)
    with tarfile.open(out) as tar:
        assert {m.mtime for m in tar.getmembers()} == {1_700_000_000}
    contents = _members(out)
    assert json.loads(contents["manifest.json"])["git_commit"] is None
    assert b"git commit: not recorded" in contents["README.md"]


def test_sha256sum_checks_extracted_copy(tmp_path: Path, results: dict[str, Path]) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum (GNU coreutils) not installed")
    out = pack(tmp_path / "dataset.tar.xz", results, METADATA)
    verify(out, extract_to=tmp_path / "x")
    assert (tmp_path / "x" / "figures" / "utilization.png").read_bytes() == (
        results["figures"] / "utilization.png").read_bytes()
    done = subprocess.run(["sha256sum", "--check", "--strict", MANIFEST], cwd=tmp_path / "x",
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": OK\n") == len(DATA) + len(GENERATED) - 1


def test_corrupted_member_is_named(tmp_path: Path, results: dict[str, Path]) -> None:
    out = pack(tmp_path / "dataset.tar", results, METADATA)
    original = _members(out)["tables/wait.parquet"]

    def flip(contents: dict[str, bytes]) -> None:
        data = bytearray(contents["tables/wait.parquet"])
        data[len(data) // 2] ^= 0xFF
        contents["tables/wait.parquet"] = bytes(data)

    bad = _rewrite(out, tmp_path / "bad.tar", flip)
    expected, actual = (hashlib.sha256(b).hexdigest() for b in (
        original, _members(bad)["tables/wait.parquet"]))
    with pytest.raises(ArchiveError) as caught:
        verify(bad)
    assert str(caught.value) == (f"{bad}: tables/wait.parquet: sha256 expected {expected}, "
                                 f"actual {actual}")


def test_truncated_member_reports_size(tmp_path: Path, results: dict[str, Path]) -> None:
    out = pack(tmp_path / "dataset.tar", results, METADATA)
    size = len(_members(out)["figures/utilization.png"])

    def truncate(contents: dict[str, bytes]) -> None:
        contents["figures/utilization.png"] = contents["figures/utilization.png"][:-10]

    with pytest.raises(ArchiveError, match=rf"figures/utilization\.png: sha256 expected \w+, "
                                           rf"actual \w+ and size expected {size}, "
                                           rf"actual {size - 10}$"):
        verify(_rewrite(out, tmp_path / "bad.tar", truncate))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c.update({MANIFEST: b"".join(line for line in io.BytesIO(c[MANIFEST])
                                            if not line.endswith(b"  figures/utilization.png\n"))}),
     "figures/utilization.png: listed in manifest.json but not in MANIFEST.sha256"),
    (lambda c: c.update({"tables/extra.parquet": b"PAR1"}),
     "tables/extra.parquet: present but not listed in MANIFEST.sha256"),
    (lambda c: c.pop("config/config.yaml"),
     "config/config.yaml: listed in MANIFEST.sha256 but missing"),
    (lambda c: c.pop(MANIFEST), "no MANIFEST.sha256 member"),
    (lambda c: c.update({MANIFEST: b"not a checksum line\n"}),
     "MANIFEST.sha256 line 1: expected '<sha256>  <path>', got 'not a checksum line'"),
], ids=["unlisted", "extra", "missing", "no-manifest", "bad-manifest"])
def test_manifest_mismatch(tmp_path: Path, results: dict[str, Path],
                           edit: Callable[[dict[str, bytes]], None], message: str) -> None:
    bad = _rewrite(pack(tmp_path / "dataset.tar", results, METADATA), tmp_path / "bad.tar", edit)
    with pytest.raises(ArchiveError, match=re.escape(f"{bad}: {message}")):
        verify(bad)


@pytest.mark.parametrize("payload", [b"", b"seed: 7\n" * 200, gzip.compress(b"x" * 1000)],
                         ids=["empty", "text", "gzip-not-tar"])
def test_not_an_archive(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "dataset.tar.gz"
    path.write_bytes(payload)
    with pytest.raises(ArchiveError, match=re.escape(f"{path}: not a readable tar archive")):
        verify(path)


def test_truncated_archive(tmp_path: Path, results: dict[str, Path]) -> None:
    out = pack(tmp_path / "dataset.tar.xz", results, METADATA)
    cut = tmp_path / "cut.tar.xz"
    cut.write_bytes(out.read_bytes()[: out.stat().st_size // 2])
    with pytest.raises(ArchiveError, match=re.escape(f"{cut}: not a readable tar archive")):
        verify(cut)


@pytest.mark.parametrize(("name", "members", "metadata", "message"), [
    ("d.zip", None, METADATA, "d.zip: unsupported suffix; expected one of .tar.xz, .tar.gz, .tar"),
    ("d.tar", None, {}, "metadata['name']: required"),
    ("d.tar", None, {**METADATA, "title": "x"}, "metadata: unknown key(s) ['title']"),
    ("d.tar", None, {**METADATA, "version": 2}, "metadata['version']: expected str, got 2"),
    ("d.tar", None, {**METADATA, "config": {"x": float("nan")}}, "must be JSON-compatible"),
    ("d.tar", {"tables": "nowhere"}, METADATA, "members['tables']: nowhere is neither"),
    ("d.tar", {"../up": None}, METADATA, "members['../up']: expected a relative archive path"),
    ("d.tar", {"README.md": None}, METADATA, "members['README.md']: README.md is generated"),
], ids=["suffix", "no-name", "unknown-key", "type", "nan", "missing", "dotdot", "generated"])
def test_pack_refuses(tmp_path: Path, results: dict[str, Path], name: str,
                      members: dict[str, str | None] | None, metadata: dict[str, object],
                      message: str) -> None:
    given = {k: v or results["tables"] for k, v in (members or results).items()}
    with pytest.raises(ArchiveError, match=re.escape(message)):
        pack(tmp_path / name, given, metadata)
    assert not (tmp_path / name).exists()


def test_pack_refuses_output_inside_a_member(results: dict[str, Path]) -> None:
    out = results["tables"] / "dataset.tar"
    with pytest.raises(ArchiveError, match=re.escape(f"{out}: inside members['tables']")):
        pack(out, results, METADATA)


def test_failed_pack_leaves_old_archive(tmp_path: Path, results: dict[str, Path],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "dataset.tar.xz"
    out.write_bytes(b"previous archive")

    def broken(self: object, size: int) -> bytes:
        raise OSError("disk went away")

    monkeypatch.setattr(archive._HashingReader, "read", broken)
    with pytest.raises(OSError, match="disk went away"):
        pack(out, results, METADATA)
    assert out.read_bytes() == b"previous archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "dataset.tar.xz",
                                                          "results"]


@pytest.mark.parametrize(("content", "message"), [
    ("seed: 8\nexperiments:\n  krevat:\n    loads: [0.5, 0.9]\n", "changed while packing"),
    ("seed: 8\n", "shrank while packing"),
], ids=["changed", "shrank"])
def test_file_changed_while_packing(tmp_path: Path, results: dict[str, Path],
                                    monkeypatch: pytest.MonkeyPatch, content: str,
                                    message: str) -> None:
    generated = archive._generated

    def generate_then_edit(*args: object) -> dict[str, bytes]:
        results["config"].write_text(content)  # after hashing, before writing the tar
        return generated(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(archive, "_generated", generate_then_edit)
    with pytest.raises(ArchiveError, match=re.escape(f"{results['config']}: {message}")):
        pack(tmp_path / "d.tar.gz", results, METADATA)
    assert not (tmp_path / "d.tar.gz").exists()


def test_environment_is_pip_freeze(tmp_path: Path, results: dict[str, Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "_pip_freeze", REAL_PIP_FREEZE)
    environment = _members(pack(tmp_path / "d.tar", results, METADATA))["environment.txt"]
    assert environment.startswith(b"# python -m pip freeze (Python ")
    assert re.search(rb"^polars==", environment, re.MULTILINE)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    assert REAL_PIP_FREEZE().startswith("# python -m pip freeze failed, no package list recorded")


def test_archive_error_is_typed() -> None:
    assert issubclass(ArchiveError, SimcoreError) and issubclass(ArchiveError, ValueError)


# -- what the archive says and holds -------------------------------------------------------

def test_synthetic_only_citation_names_no_traces(tmp_path: Path,
                                                 results: dict[str, Path]) -> None:
    config = {"workloads": {"l16": {"synthetic": {"model": "lublin", "jobs": 10}},
                            "unused": {"trace": "NASA-iPSC-1993-3.1-cln"}},
              "experiments": {"small": {"workloads": ["l16"]}}}
    contents = _members(pack(tmp_path / "d.tar", results, {**METADATA, "config": config}))
    cff = yaml.safe_load(contents["CITATION.cff"])
    text = contents["CITATION.cff"].decode() + contents["README.md"].decode()
    assert "Parallel Workloads Archive" not in text
    assert "synthetic workload model(s) lublin" in cff["abstract"]
    assert [r["authors"][0]["family-names"] for r in cff["references"]] == ["Lublin"]


def test_trace_citation_names_its_traces(tmp_path: Path, results: dict[str, Path]) -> None:
    cff = yaml.safe_load(_members(pack(tmp_path / "d.tar", results, METADATA))["CITATION.cff"])
    assert "Parallel Workloads Archive (NASA-iPSC-1993-3.1-cln)" in cff["abstract"]
    assert "Parallel Workloads Archive" in cff["message"]


def test_a_file_member_does_not_nest_under_its_own_name(tmp_path: Path,
                                                        results: dict[str, Path]) -> None:
    page = tmp_path / "reproduction.md"
    page.write_text("# numbers\n")
    names = set(_members(pack(tmp_path / "d.tar", {**results, "reproduction.md": page},
                              METADATA)))
    assert "reproduction.md" in names and "reproduction.md/reproduction.md" not in names
    assert "config/config.yaml" in names


def _store_member(contents: dict[str, bytes]) -> str:
    return next(n for n in contents if n.startswith("store/") and n.endswith("summary.parquet"))


def test_verify_checks_each_parquet_members_own_checksum(tmp_path: Path,
                                                         results: dict[str, Path]) -> None:
    """A store file altered (its recorded checksum kept) and packed with a manifest that
    matches it: only its own checksum tells."""
    out = pack(tmp_path / "d.tar", results, METADATA)
    contents = _members(out)
    name = _store_member(contents)
    shard = tmp_path / "shard.parquet"
    shard.write_bytes(contents[name])
    table = pq.read_table(shard)
    pq.write_table(table.set_column(1, "utilization", pa.array([0.5, 0.76])), shard)

    def damage(members: dict[str, bytes]) -> None:
        members[name] = shard.read_bytes()
        _relist(members)

    with pytest.raises(ArchiveError, match=re.escape(
            f"{name}: content does not match its checksum")):
        verify(_rewrite(out, tmp_path / "damaged.tar", damage))


def test_verify_refuses_a_store_member_whose_specification_was_rewritten(
        tmp_path: Path, results: dict[str, Path]) -> None:
    """A store file given another shard specification (its rows and their checksum kept)
    and packed with manifests that match it: only the checksum of its metadata tells."""
    out = pack(tmp_path / "d.tar", results, METADATA)
    name = _store_member(_members(out))
    table = pq.read_table(io.BytesIO(_members(out)[name]))
    metadata = {**table.schema.metadata,
                b"shard": json.dumps({**SHARD, "machine_spec": "mesh:2x2x4"}).encode()}
    rewritten = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(metadata), rewritten)

    def rewrite(members: dict[str, bytes]) -> None:
        members[name] = rewritten.getvalue()
        document = json.loads(members["manifest.json"])
        for member in document["members"]:
            if member["path"] == name:
                member.update(sha256=hashlib.sha256(members[name]).hexdigest(),
                              size=len(members[name]))
        members["manifest.json"] = json.dumps(document).encode()
        members[MANIFEST] = "".join(f"{hashlib.sha256(b).hexdigest()}  {n}\n"
                                    for n, b in sorted(members.items()) if n != MANIFEST).encode()

    with pytest.raises(ArchiveError, match=re.escape(
            f"{name}: metadata does not match its checksum")):
        verify(_rewrite(out, tmp_path / "rewritten.tar", rewrite))


def test_verify_refuses_a_store_member_of_another_place(tmp_path: Path,
                                                        results: dict[str, Path]) -> None:
    shard = results["store"] / "experiment=e/workload=w/machine=m/policy=p/summary.parquet"
    write_table(pq.read_table(shard), shard, {"shard": {**SHARD, "policy": "q"}})
    with pytest.raises(ArchiveError, match=re.escape(
            "written for another shard: policy 'q' (its place: 'p')")):
        verify(pack(tmp_path / "d.tar", results, METADATA))


SCHEDULE = "schedules/experiment=e/workload=w/machine=m/policy=p/run=0"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """results/<dataset>/ of one shard run by the runner, with a table."""
    root = tmp_path / "results"
    shard = heavy_shard(jobs=60, loads=(0.6,), seeds=(1,))
    workloads(root, shard)
    run_shard(shard, root, log=io.StringIO())
    (root / shard.dataset / "tables").mkdir()
    made = root / shard.dataset
    write_table(pl.DataFrame({"n": [1]}).to_arrow(), made / "tables/t.parquet")
    (made / "tables/t.csv").write_text("n\n1\n")
    write_stamp(made / "tables", [made / "tables/t.parquet", made / "tables/t.csv"])
    (made / "figures/e").mkdir(parents=True)
    (made / "figures/e/f.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    write_stamp(made / "figures", [made / "figures/e/f.png"])
    (made / "reproduction.md").write_text("# Reproduction\n")
    write_stamp(made / "reproduction.md", [made / "reproduction.md"])
    export = made / SCHEDULE
    export.mkdir(parents=True)
    (export / "run.json").write_text("{}\n")
    (export / "gantt.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    write_stamp(export, [export / "run.json", export / "gantt.png"])  # as simcore show does
    return made


def test_pack_dataset_packs_a_verified_store(tmp_path: Path, dataset: Path) -> None:
    out = pack_dataset(tmp_path / "d.tar", dataset, {"dataset": dataset.name})
    report = verify(out)
    assert report["dataset"] == dataset.name and report["tables"] == {"tables/t.parquet": 1}


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign"])
def test_pack_dataset_refuses_a_damaged_shard(tmp_path: Path, dataset: Path,
                                              damage: str) -> None:
    summary = next(dataset.glob("store/**/summary.parquet"))
    if damage == "truncate":
        summary.write_bytes(summary.read_bytes()[:-100])
    elif damage == "flip":
        flip_a_data_bit(summary, "utilization")
    else:  # another shard's whole, valid file
        other = summary.parents[1] / "policy=fcfs" / "summary.parquet"
        other.parent.mkdir()
        shutil.copy(summary, other)
        summary = other
    with pytest.raises(ArchiveError, match=re.escape(str(summary))) as refused:
        pack_dataset(tmp_path / "d.tar", dataset, {"dataset": dataset.name})
    assert "rebuilt from the run cache" in str(refused.value)
    assert not (tmp_path / "d.tar").exists()


@pytest.mark.parametrize(("setup", "name", "message"), [
    ("missing", None, "no store shards or no tables/"),
    ("no tables", None, "no store shards or no tables/"),
    ("empty", None, "no store shards or no tables/"),
    ("ok", "../evil", "name '../evil': expected a dataset name"),
])
def test_pack_dataset_refuses(tmp_path: Path, dataset: Path, setup: str, name: str | None,
                              message: str) -> None:
    where = dataset
    if setup == "missing":
        where = tmp_path / "nowhere"
    elif setup == "no tables":
        shutil.rmtree(dataset / "tables")
    elif setup == "empty":
        where = tmp_path / "empty"
        (where / "tables").mkdir(parents=True)
    with pytest.raises(ArchiveError, match=re.escape(message)):
        pack_dataset(tmp_path / "d.tar", where, {}, name=name)
    assert not (tmp_path / "d.tar").exists()


def test_pack_command_refuses_a_missing_directory(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "simcore", "archive", "pack", "--out",
                           str(tmp_path / "d.tar"), "--results", str(tmp_path / "nowhere")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no store shards or no tables/" in done.stderr
    assert not (tmp_path / "d.tar").exists()


@pytest.mark.parametrize("link", ["file", "directory"])
def test_pack_refuses_a_symbolic_link(tmp_path: Path, results: dict[str, Path],
                                      link: str) -> None:
    """A link is neither followed (publishing what it points to) nor silently left out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("a\n1\n")
    linked = results["tables"] / "linked"
    linked.symlink_to(outside / "secret.csv" if link == "file" else outside)
    with pytest.raises(ArchiveError, match=re.escape(f"{linked}: a symbolic link")):
        pack(tmp_path / "d.tar", results, METADATA)
    assert not (tmp_path / "d.tar").exists()


def test_pack_refuses_a_linked_member(tmp_path: Path, results: dict[str, Path]) -> None:
    (tmp_path / "elsewhere").symlink_to(results["tables"])
    with pytest.raises(ArchiveError, match=re.escape(
            f"members['tables']: {tmp_path / 'elsewhere'} is a symbolic link; expected")):
        pack(tmp_path / "d.tar", {"tables": tmp_path / "elsewhere"}, METADATA)


_UNMADE = {
    "stray shard file": (lambda d: (next(d.glob("store/**/summary.parquet")).parent
                                    / "notes.txt").write_text("x"),
                         "notes.txt: not a store file; expected only summary.parquet and "
                         "jobs.parquet", "move it out of the store"),
    "table deleted": (lambda d: (d / "tables/t.csv").unlink(), "tables/t.csv: missing",
                      "tables and run snakemake again"),
    "table edited": (lambda d: (d / "tables/t.csv").write_text("n\n2\n"),
                     "tables/t.csv: edited since it was made", "tables and run snakemake"),
    "table added": (lambda d: (d / "tables/u.csv").write_text("n\n2\n"),
                    "tables/u.csv: present but not made with the rest", "tables and run"),
    "tables unstamped": (lambda d: (d / ".tables.sha256").unlink(),
                         "tables: no stamp .tables.sha256", "tables and run snakemake"),
    "stamp out of place": (lambda d: (d / ".tables.sha256").write_text(
        f"{'0' * 64}  ../secret\n"), ".tables.sha256:1: '", "expected '<sha256>  <path>'"),
    "stamp not text": (lambda d: (d / ".tables.sha256").write_bytes(b"\xff\n"),
                       ".tables.sha256: not UTF-8 text", "remove"),
    "figures deleted": (lambda d: shutil.rmtree(d / "figures"), "figures/e/f.png: missing",
                        "figures and run snakemake again"),
    "report edited": (lambda d: (d / "reproduction.md").write_text("# Better numbers\n"),
                      "reproduction.md: edited since it was made", "reproduction.md and run"),
    "schedule edited": (lambda d: (d / SCHEDULE / "run.json").write_text("{ }\n"),
                        "run=0/run.json: edited since it was made", "run=0 and run snakemake"),
    "schedule file astray": (lambda d: (d / "schedules/notes.txt").write_text("x"),
                             "schedules/notes.txt: in no schedule export", "move it out"),
}


@pytest.mark.parametrize("case", _UNMADE)
def test_pack_dataset_refuses_what_the_workflow_did_not_make(tmp_path: Path, dataset: Path,
                                                             case: str) -> None:
    change, what, advice = _UNMADE[case]
    change(dataset)
    with pytest.raises(ArchiveError, match=re.escape(str(dataset))) as refused:
        pack_dataset(tmp_path / "d.tar", dataset, {"dataset": dataset.name})
    assert what in str(refused.value) and advice in str(refused.value)
    assert "as the workflow made it" in str(refused.value) or case in (
        "stray shard file", "schedule file astray")
    assert not (tmp_path / "d.tar").exists()


def test_pack_dataset_packs_what_was_made(tmp_path: Path, dataset: Path) -> None:
    """What the workflow made, the configuration files as written under their own names,
    and a README whose layout marks only directories as such."""
    given = tmp_path / "my-study.yaml"
    given.write_text("# the study\ndataset: d\n")
    members = _members(pack_dataset(tmp_path / "d.tar", dataset, {"dataset": dataset.name},
                                    configfiles=[given]))
    assert {"tables/t.csv", "figures/e/f.png", "reproduction.md", f"{SCHEDULE}/run.json",
            f"{SCHEDULE}/gantt.png"} <= set(members)
    assert not any(Path(n).name.startswith(".") for n in members)
    assert members["config/my-study.yaml"] == given.read_bytes()
    assert not any(n.startswith("config/") for n in members if n != "config/my-study.yaml")
    readme = members["README.md"].decode()
    assert "| `reproduction.md` | 1 |" in readme and "| `config/` | 1 |" in readme
    assert "| `tables/` | 2 |" in readme


def test_pack_dataset_refuses_two_configuration_files_of_one_name(tmp_path: Path,
                                                                   dataset: Path) -> None:
    files = [tmp_path / "a/study.yaml", tmp_path / "b/study.yaml"]
    for file in files:
        file.parent.mkdir()
        file.write_text("dataset: d\n")
    with pytest.raises(ArchiveError, match=re.escape(
            f"{files[1]}: the same name as {files[0]}; expected configuration files of "
            "different names")):
        pack_dataset(tmp_path / "d.tar", dataset, {"dataset": dataset.name}, configfiles=files)


def test_verify_refuses_a_regenerated_sha256_manifest(tmp_path: Path,
                                                      results: dict[str, Path]) -> None:
    """An edit listed again in MANIFEST.sha256 but not in manifest.json is found."""
    def edit(contents: dict[str, bytes]) -> None:
        contents["figures/utilization.png"] += b"edited"
        _relist(contents, json_too=False)

    bad = _rewrite(pack(tmp_path / "d.tar", results, METADATA), tmp_path / "bad.tar", edit)
    with pytest.raises(ArchiveError, match=re.escape(
            f"{bad}: figures/utilization.png: sha256 ")) as refused:
        verify(bad)
    assert "in MANIFEST.sha256 but " in str(refused.value)
    assert "in manifest.json" in str(refused.value)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: (c.pop("manifest.json"), _relist(c)), "no manifest.json member"),
    (lambda c: c.update({"manifest.json": b'{"members": [{"path": "x"}]}'}),
     "manifest.json: expected an object whose 'members' list path, sha256 and size"),
    (lambda c: (c.update({"manifest.json": json.dumps({"members": [
        {"path": "x", "sha256": "0" * 64, "size": 1}] * 2}).encode()}), _relist(c, json_too=False)),
     "manifest.json: expected an object whose 'members' list path, sha256 and size"),
], ids=["no-manifest-json", "no-sha256", "listed-twice"])
def test_verify_refuses_a_missing_or_malformed_manifest_json(
        tmp_path: Path, results: dict[str, Path], edit: Callable[[dict[str, bytes]], None],
        message: str) -> None:
    bad = _rewrite(pack(tmp_path / "d.tar", results, METADATA), tmp_path / "bad.tar", edit)
    with pytest.raises(ArchiveError, match=re.escape(f"{bad}: {message}")):
        verify(bad)


def test_verify_refuses_an_unlisted_member_before_writing_anything(
        tmp_path: Path, results: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A large unlisted `*.parquet` member (a stand-in for 1 GB of zeros) is refused
    from the manifests alone: nothing is extracted, to a temporary directory or asked for."""
    def add(contents: dict[str, bytes]) -> None:
        contents["store/zeros.parquet"] = bytes(4 << 20)

    bad = _rewrite(pack(tmp_path / "d.tar", results, METADATA), tmp_path / "bad.tar", add)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for extract_to in (None, tmp_path / "x"):
        with pytest.raises(ArchiveError, match=re.escape(
                f"{bad}: store/zeros.parquet: present but not listed in {MANIFEST}")):
            verify(bad, extract_to=extract_to)
        assert list(scratch.iterdir()) == [] and not (tmp_path / "x").exists()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), relist=st.sampled_from(["none", MANIFEST]))
def test_any_edited_member_is_refused(tmp_path: Path, results: dict[str, Path],
                                      data: st.DataObject, relist: str) -> None:
    """One byte of any member changed, listed again in MANIFEST.sha256 or not: refused.
    (manifest.json's own metadata is covered by MANIFEST.sha256 alone: rewriting both is
    the forgery no checksum inside an archive can find.)"""
    out = tmp_path / "d.tar"
    if not out.exists():
        pack(out, results, METADATA)
    contents = _members(out)
    name = data.draw(st.sampled_from(sorted(
        n for n in contents if n != MANIFEST and (relist == "none" or n != "manifest.json"))))
    at = data.draw(st.integers(0, len(contents[name]) - 1))
    edited = bytearray(contents[name])
    edited[at] ^= data.draw(st.integers(1, 255))

    def edit(members: dict[str, bytes]) -> None:
        members[name] = bytes(edited)
        if relist == MANIFEST:
            _relist(members, json_too=False)

    bad = _rewrite(out, tmp_path / "bad.tar", edit)
    with pytest.raises(ArchiveError, match=re.escape(f"{bad}: ")):
        verify(bad)


def test_verify_refuses_an_archive_replaced_between_its_passes(
        tmp_path: Path, results: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """What the second pass extracts is hashed again: an archive replaced after the first
    pass checked it is refused, not checked by its former contents."""
    out = pack(tmp_path / "d.tar", results, METADATA)
    other = _rewrite(out, tmp_path / "other.tar", lambda c: c.update(
        {"tables/wait.parquet": c["tables/wait.parquet"][:-1] + b"!"}))
    scan = archive._scan

    def scan_then_replace(path: Path) -> object:
        found = scan(path)
        shutil.copy(other, path)
        return found

    monkeypatch.setattr(archive, "_scan", scan_then_replace)
    with pytest.raises(ArchiveError, match=re.escape(
            f"{out}: tables/wait.parquet: changed while being verified")):
        verify(out)
