"""`simcore run --export DIR`: its files, and its refusals, each one line with exit
status 2."""

from __future__ import annotations

import csv

from simcore.cli.main import main
from simcore.schedules.export import FILES


def refusal(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("simcore: error: ") and "\n" not in err
    return err


def rows(path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_run_export_writes_every_file_and_refuses_what_it_cannot(tmp_path, capsys):
    out = tmp_path / "new" / "dir"
    assert main(["run", "--workload", "lublin:32", "--jobs", "200", "--machine", "torus:2x2x8",
                 "--scheduler", "backfill", "--seed", "3", "--export", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert len(rows(out / "jobs.csv")) == 200
    a_file = tmp_path / "file"
    a_file.write_text("")
    err = refusal(capsys, "run", "--workload", "lublin:32", "--jobs", "20", "--machine",
                  "flat:32", "--scheduler", "fcfs", "--export", str(a_file))
    assert "is a file" in err
    err = refusal(capsys, "run", "--workload", "lublin:32", "--jobs", "20", "--machine",
                  "flat:32", "--scheduler", "gang", "--export", str(tmp_path / "g"))
    assert "keeps no placement log" in err
