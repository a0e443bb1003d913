"""What the schedule commands refuse: `simcore show` checks every file of an export
directory before it draws, each fault one line naming the file, line and column."""

from __future__ import annotations

import csv
import io
import json
import resource
import shutil
import subprocess
import sys

import pytest

from simcore.base.errors import SpecError
from simcore.cli.main import main
from simcore.schedules.export import FILES
from simcore.schedules.exported import read_exported
from tests.conftest import ROOT

#: Hostile texts put in one cell at a time.
EDITS = {"not a number": "x", "negative": "-1", "NaN": "nan", "huge": "1e999",
         "huge integer": "99999999999999999999", "swapped interval": "9-2",
         "id out of range": "1000000", "empty": ""}
#: Columns whose cells are free text (or left empty by simcore export): any edit reads.
FREE = {"workload_name", "profile", "consumed_energy", "metadata", "partition"}
#: Edits that leave a valid file: the cell still holds what its column allows.
VALID = {("jobs.csv", "job_id", "id out of range"),  # an id no other row uses
         ("jobs.csv", "bounded_slowdown", "id out of range"),
         ("jobs.csv", "requested_time", "negative"), ("jobs.csv", "requested_time",
                                                      "id out of range"),
         ("jobs.csv", "runs_cut_short", "id out of range")}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A B+M run of 40 jobs on torus:2x2x4, exported: jobs that moved have placements."""
    out = tmp_path_factory.mktemp("export") / "run"
    assert main(["run", "--workload", "lublin:16", "--jobs", "40", "--machine", "torus:2x2x4",
                 "--scheduler", "bm", "--seed", "2", "--export", str(out)]) == 0
    return out


def table(path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


def write_table(path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue())


def cells(export):
    """(file, column, line) of one cell per column of each CSV file that show reads: the
    second data row's (its first where there is one)."""
    for name in ("jobs.csv", "placements.csv", "machine_states.csv", "resources.csv"):
        rows = table(export / name)
        assert len(rows) > 2, name
        for column in rows[0]:
            yield name, column, 3


def test_every_hostile_cell_is_one_line_naming_its_file_line_and_column(export, tmp_path):
    read_exported(export)  # the export as written reads
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    accepted = set()
    for name, column, line in cells(export):
        rows = table(export / name)
        k = rows[0].index(column)
        for what, text in EDITS.items():
            if rows[line - 1][k] == text:
                continue
            edited = [list(r) for r in rows]
            edited[line - 1][k] = text
            write_table(copy / name, edited)
            try:
                read_exported(copy)
            except SpecError as exc:
                message = str(exc)
                assert "\n" not in message
                assert message.startswith((f"{copy / name}:{line}: ",  # an order broken
                                           f"{copy / name}:{line + 1}: ")), (what, message)
                assert column in message and "; expected " in message, (what, message)
            else:
                accepted.add((name, column, what))
        write_table(copy / name, rows)
    assert {a for a in accepted if a[1] not in FREE} == VALID


@pytest.mark.parametrize("name, column", [("jobs.csv", "allocated_resources"),
                                          ("placements.csv", "allocated_resources")])
def test_an_interval_past_the_machine_is_refused_before_anything_is_allocated(
        export, tmp_path, name, column):
    """`0-999999999` on a machine of 16 units: refused under a 1 GiB address-space limit
    (listing its ids would take 8 GB)."""
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    rows = table(copy / name)
    rows[1][rows[0].index(column)] = "0-999999999"
    write_table(copy / name, rows)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    done = subprocess.run([sys.executable, "-m", "simcore", "show", str(copy), "--out",
                           str(tmp_path / "pictures")], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit, cwd=ROOT)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == (f"simcore: error: {copy / name}:2: {column} '0-999999999'; "
                           "expected unit ids below the machine's 16 units\n")
    assert not (tmp_path / "pictures").exists()


@pytest.mark.parametrize("key, value, expected", [
    ("units", {"count": 1e9}, "units.count"),
    ("units", {"count": 16, "axes": ["x"], "sides": [10**9], "packing": False,
               "wraps": True, "curve_rank": False}, "units.sides"),
    ("machine", None, "machine"),
])
def test_run_json_gives_the_machine_and_is_checked(export, tmp_path, key, value, expected):
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    run = json.loads((copy / "run.json").read_text())
    run[key] = value
    (copy / "run.json").write_text(json.dumps(run))
    with pytest.raises(SpecError, match=rf"^{copy / 'run.json'}: {expected} .*; expected "):
        read_exported(copy)


def refusal(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("simcore: error: ") and err.count("\n") == 1
    return err


def test_a_repeated_param_or_moment_is_refused(export, tmp_path, capsys):
    names = ["--experiment", "e", "--workload", "w", "--machine", "m", "--policy", "p"]
    err = refusal(capsys, "export", "--store", str(tmp_path), *names, "--param", "seed=1",
                  "--param", "seed=2", "--out", str(tmp_path / "o"))
    assert "--param 'seed=2': seed given twice (seed=1 before); expected each KEY once" in err
    err = refusal(capsys, "show", str(export), "--out", str(tmp_path / "p"), "--at", "5s",
                  "--at", "5.0s")
    assert "--at 5.0s: given twice" in err
    err = refusal(capsys, "show", str(export), "--out", str(tmp_path / "p"), "--at", "nan")
    assert "--at nan: expected a finite time with its unit" in err
    err = refusal(capsys, "show", str(export), "--out", str(tmp_path / "p"), "--from", "2h",
                  "--until", "1h")
    assert "--until 1h: not after --from 2h" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "p").exists()
    err = refusal(capsys, "run", "--workload", "lublin", "--jobs", "10", "--machine", "flat:8",
                  "--scheduler", "fcfs", "--machine-param", "x=1", "--machine-param", "x=2")
    assert "--machine-param 'x=2': x given twice (x=1 before)" in err
    err = refusal(capsys, "synthesize", "lublin:16", "--jobs", "10", "--seed", "1",
                  "--param", "a=1", "--param", "a=3", "--out", str(tmp_path / "w.parquet"))
    assert "--param 'a=3': a given twice (a=1 before)" in err


def test_an_export_replaces_a_previous_one_whole_and_refuses_other_directories(
        export, tmp_path, capsys):
    """A previous export, pictures and all, is replaced by the new files alone; a
    directory holding anything else, or no run.json, is refused and left as it was."""
    previous = tmp_path / "previous"
    shutil.copytree(export, previous)
    assert main(["show", str(previous)]) == 0
    assert (previous / "gantt.png").is_file()
    argv = ["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "torus:2x2x4",
            "--scheduler", "fcfs", "--seed", "5", "--export"]
    assert main([*argv, str(previous)]) == 0
    assert sorted(p.name for p in previous.iterdir()) == sorted(FILES)
    assert json.loads((previous / "run.json").read_text())["seed"] == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    capsys.readouterr()
    for name, found in (("notes.txt", "holds notes.txt, which no export writes"),
                        ("gantt.png", "holds no run.json")):
        used = tmp_path / f"used-{name}"
        used.mkdir()
        (used / name).write_text("kept")
        err = refusal(capsys, *argv, str(used))
        assert f"--export {used}: {found}; expected a new or empty directory" in err
        assert [p.name for p in used.iterdir()] == [name]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*argv, str(empty)]) == 0
    assert sorted(p.name for p in empty.iterdir()) == sorted(FILES)


def test_two_runs_said_to_share_a_machine_must_number_its_units_alike(
        export, tmp_path, capsys):
    """A torus:2x2x8 export whose run.json says torus:2x2x4 reads on its own, but not
    beside a torus:2x2x4 run: the pictures would number its 32 units as the other's 16."""
    other = tmp_path / "other"
    assert main(["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "torus:2x2x8",
                 "--scheduler", "bm", "--seed", "2", "--export", str(other)]) == 0
    run = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**run, "machine": "torus:2x2x4"}))
    read_exported(other)
    err = refusal(capsys, "show", str(export), str(other), "--out", str(tmp_path / "p"))
    assert f"{other / 'run.json'}: units of torus:2x2x4 unlike those of" in err
