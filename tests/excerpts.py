"""Trace excerpts committed as test fixtures, and the whole traces where a mirror is given.

`tests/data/traces/<name>.swf.gz` is a Parallel Workloads Archive trace cut short: its SWF
header and its first job lines, verbatim. `tests/data/traces/excerpts.yaml` records, for
each, the source file and its sha256, the line ranges taken and the sha256 of the excerpt
(compressed and not). A span of the first k jobs of an excerpt is the same span of the
whole trace, so tests that replay such spans run on the excerpts.

Rebuild the excerpts from the whole traces (the manifest's line ranges are kept):

    python -m tests.excerpts /path/to/traces
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXCERPT_DIR = ROOT / "tests" / "data" / "traces"
MANIFEST = EXCERPT_DIR / "excerpts.yaml"
TRACE_DIR_ENV = "TORUS_SWEEP_TRACE_DIR"  # the same variable the pipeline reads
HOW_TO = (f"set {TRACE_DIR_ENV} to a directory holding the PWA traces "
          "(.ci/run uses ../shared/traces)")


def manifest() -> dict[str, dict]:
    """name -> the manifest's entry for that excerpt."""
    return yaml.safe_load(MANIFEST.read_text())["excerpts"]


def excerpt_path(name: str) -> Path:
    return EXCERPT_DIR / f"{name}.swf.gz"


def whole_trace_path(name: str) -> Path | str:
    """The whole trace's path, or (a str) why it cannot be had here."""
    dirs = [d for d in os.environ.get(TRACE_DIR_ENV, "").split(os.pathsep) if d]
    if not dirs:
        return f"whole trace {name}.swf.gz: {HOW_TO}"
    for directory in dirs:
        path = Path(directory).expanduser() / f"{name}.swf.gz"
        if path.is_file():
            return path
    return (f"whole trace {name}.swf.gz is not in {TRACE_DIR_ENV}="
            f"{os.environ[TRACE_DIR_ENV]}; {HOW_TO}")


def excerpt_catalogue(path: Path) -> Path:
    """Write a trace catalogue like config/traces.yaml whose entries pin the excerpts (their
    sha256 and job counts) instead of the whole traces: the workflow then takes the excerpt
    directory as a mirror."""
    catalogue = yaml.safe_load((ROOT / "config" / "traces.yaml").read_text())["traces"]
    traces = {name: {**catalogue[name], "sha256": entry["sha256"], "jobs": entry["jobs"]}
              for name, entry in manifest().items()}
    path.write_text(yaml.safe_dump({"traces": traces}, sort_keys=False))
    return path


def cut(swf: bytes, header_lines: tuple[int, int], job_lines: tuple[int, int]) -> bytes:
    """Lines header_lines[0]..[1] and job_lines[0]..[1] (1-based, inclusive) of `swf`,
    which must be comments (header) and job lines (the rest), each ending as in `swf`."""
    lines = swf.splitlines(keepends=True)
    header = lines[header_lines[0] - 1: header_lines[1]]
    jobs = lines[job_lines[0] - 1: job_lines[1]]
    if len(jobs) != job_lines[1] - job_lines[0] + 1:
        raise ValueError(f"job lines {job_lines} run past the file's {len(lines)} lines")
    if not all(line.startswith(b";") for line in header):
        raise ValueError(f"lines {header_lines} are not all header comments")
    if not all(line.strip() and not line.lstrip().startswith(b";") for line in jobs):
        raise ValueError(f"lines {job_lines} are not all job lines")
    return b"".join(header + jobs)


def raw_jobs(path: Path) -> list[list[float]]:
    """The job lines of an SWF file as lists of 18 numbers, parsed here with nothing but
    str.split: an independent reading to check the library's reader and statistics."""
    text = gzip.decompress(path.read_bytes()).decode("ascii")
    rows = [line.split() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith(";")]
    assert all(len(row) == 18 for row in rows)
    return [[float(v) for v in row] for row in rows]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rebuild(trace_dir: Path) -> None:
    """Write every excerpt anew from the whole traces in `trace_dir`, and its manifest."""
    text = MANIFEST.read_text()
    preamble = text[: text.index("excerpts:")]
    entries = manifest()
    for name, entry in entries.items():
        source = trace_dir / entry["source"]
        packed = source.read_bytes()
        if sha256(packed) != entry["source_sha256"]:
            raise SystemExit(f"{source}: sha256 {sha256(packed)}, expected "
                             f"{entry['source_sha256']}")
        swf = cut(gzip.decompress(packed), tuple(entry["header_lines"]),
                  tuple(entry["job_lines"]))
        data = gzip.compress(swf, compresslevel=9, mtime=0)
        excerpt_path(name).write_bytes(data)
        entry.update(jobs=entry["job_lines"][1] - entry["job_lines"][0] + 1,
                     swf_sha256=sha256(swf), sha256=sha256(data), bytes=len(data))
    body = yaml.safe_dump({"excerpts": entries}, sort_keys=False, width=100,
                          default_flow_style=None)
    MANIFEST.write_text(preamble + body)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.excerpts TRACE_DIR")
    rebuild(Path(sys.argv[1]))
