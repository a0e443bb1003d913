"""`simcore run --export DIR` and `simcore export` (a stored run, read from the per-job rows
its shard kept or simulated again): their files, and their refusals, each one line with
exit status 2."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil

import pytest
import yaml

from simcore.base.errors import ConfigError, SimcoreError
from simcore.base.stamps import stamp_problems
from simcore.cli.main import main
from simcore.schedules.export import FILES
from simcore.schedules.stored import find_run, stored_schedule
from simcore.sweep.experiments import plan
from simcore.sweep.runner import run_shard
from tests.conftest import ROOT, write_samples_of
from tests.workflow import scratch_workflow, small_config, snakemake

STORE = "torus-sweep-test/store"
SHARD = {"experiment": "heavy", "workload": "lublin16", "machine": "torus", "policy": "bm"}
NAMES = [text for name, value in SHARD.items() for text in (f"--{name}", value)]


def made_store(root, per_job: bool, experiment: str = "heavy"):
    """A B+M shard of four runs (two loads, two seeds) on torus:2x2x4 under `root`."""
    config = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())
    config["workloads"] = {"lublin16": {"synthetic": {"model": "lublin", "jobs": 200,
                                                      "max_procs": 16}}}
    config["experiments"] = {experiment: {"workloads": ["lublin16"], "machines": ["torus"],
                                       "policies": ["bm"], "grid": {"offered_load": [0.6, 0.8]},
                                       "seeds": [1, 2], "per_job": per_job}}
    shard = plan(config)[0]
    write_samples_of(root, shard)
    run_shard(shard, root, log=io.StringIO())
    return root / STORE


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The shard run once, keeping summaries only."""
    return made_store(tmp_path_factory.mktemp("results"), per_job=False)


@pytest.fixture(scope="module")
def kept_store(tmp_path_factory):
    """The same shard, keeping per-job rows."""
    return made_store(tmp_path_factory.mktemp("kept"), per_job=True)


def test_a_run_two_experiments_share_is_listed_by_experiment(tmp_path, capsys):
    made_store(tmp_path, per_job=False)
    store = made_store(tmp_path, per_job=True, experiment="kept")
    heavy = find_run(store, names=SHARD, params={"seed": "1", "offered_load": "0.6"})
    err = refusal(capsys, "export", "--store", str(store), "--run-key", heavy.key,
                  "--out", str(tmp_path / "o"))
    assert "2 runs of the store match" in err
    assert f"{heavy.key[:12]} (experiment=heavy)" in err
    assert f"{heavy.key[:12]} (experiment=kept)" in err


def refusal(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("simcore: error: ") and "\n" not in err
    return err


def rows(path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_export_by_names_and_params_matches_the_stored_run(store, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--store", str(store), *NAMES, "--param", "seed=2",
                 "--param", "offered_load=0.8", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    stored = find_run(store, names=SHARD, params={"seed": "2", "offered_load": "0.8"})
    jobs = rows(out / "jobs.csv")
    assert len(jobs) == 200 and {j["final_state"] for j in jobs} == {"COMPLETED_SUCCESSFULLY"}
    waits = [float(j["waiting_time"]) for j in jobs if j["warmup"] == "0"]
    assert sum(waits) / len(waits) == pytest.approx(stored.row["mean_wait_s"], rel=1e-12)
    again = tmp_path / "again"
    assert main(["export", "--store", str(store), "--run-key", stored.key[:16],
                 "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_text() == (out / "jobs.csv").read_text()
    assert stored.key[:12] in capsys.readouterr().out


def test_export_refusals(store, tmp_path, capsys):
    err = refusal(capsys, "export", "--store", str(store), "--run-key", "feedbeef",
                  "--out", str(tmp_path / "o"))
    assert "no run of the store" in err
    err = refusal(capsys, "export", "--store", str(store), *NAMES, "--param",
                  "offered_load=0.6", "--out", str(tmp_path / "o"))
    assert "2 runs of the store match" in err and "seed=1" in err and "seed=2" in err
    a_file = tmp_path / "file"
    a_file.write_text("")
    err = refusal(capsys, "export", "--store", str(store), *NAMES, "--param", "seed=1",
                  "--param", "offered_load=0.6", "--out", str(a_file))
    assert "is a file; expected a directory" in err
    err = refusal(capsys, "export", "--store", str(store), "--experiment", "heavy",
                  "--out", str(tmp_path / "o"))
    assert "--workload" in err
    err = refusal(capsys, "export", "--store", str(store), *NAMES, "--param", "nothing=1",
                  "--out", str(tmp_path / "o"))
    assert "no such column" in err


def test_a_summary_that_differs_is_refused(store):
    stored = find_run(store, names=SHARD, params={"seed": "1", "offered_load": "0.6"})
    changed = dataclasses.replace(stored, row={**stored.row, "mean_wait_s": -1.0})
    with pytest.raises(SimcoreError, match="differs from the stored one in mean_wait_s"):
        stored_schedule(changed, store)


def test_a_shard_that_kept_per_job_rows_exports_them_without_simulating(
        store, kept_store, tmp_path, monkeypatch):
    """The per-job rows hold the run's placements: the export reads them (no simulation)
    and writes the same schedule as the run simulated again."""
    params = ["--param", "seed=1", "--param", "offered_load=0.8"]
    again = tmp_path / "again"
    assert main(["export", "--store", str(store), *NAMES, *params, "--out", str(again)]) == 0

    def no_simulation(*args, **kwargs):
        raise AssertionError("a run whose shard kept its per-job rows was simulated again")

    monkeypatch.setattr("simcore.simulate.simulate", no_simulation)
    kept = tmp_path / "kept"
    assert main(["export", "--store", str(kept_store), *NAMES, *params,
                 "--out", str(kept)]) == 0
    assert rows(kept / "placements.csv"), "B+M at load 0.8 should move jobs"
    for name in FILES:
        if name != "run.json":
            assert (kept / name).read_text() == (again / name).read_text(), name


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
    assert "time-shares the machine" in err and "matrix_row" in err


def test_export_by_the_run_index_and_its_refusal(store, tmp_path, capsys):
    """--run I names the shard's I-th run: runs in the order the experiment lists them
    (offered load 0.6 then 0.8, each with seeds 1 and 2)."""
    out = tmp_path / "third"
    assert main(["export", "--store", str(store), *NAMES, "--run", "2", "--out", str(out)]) == 0
    third = find_run(store, names=SHARD, params={"seed": "1", "offered_load": "0.8"})
    assert third.key[:12] in capsys.readouterr().out
    err = refusal(capsys, "export", "--store", str(store), *NAMES, "--run", "4",
                  "--out", str(tmp_path / "o"))
    assert "--run 4: the shard has 4 runs, 0 to 3" in err


def test_schedules_of_a_time_sharing_policy_are_refused_in_the_config():
    config = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())
    config["policies"]["gang"] = {"scheduler": "gang"}
    config["experiments"] = {"ts": {"workloads": ["lublin16"], "machines": ["flat"],
                                    "policies": ["gang"], "schedules": 1}}
    with pytest.raises(ConfigError, match=r"experiments\.ts\.schedules: policy gang "
                                          r"\(scheduler gang\) time-shares the machine"):
        plan(config)
    config["experiments"]["ts"] = {**config["experiments"]["ts"], "policies": ["fcfs"],
                                   "schedules": -1}
    with pytest.raises(ConfigError, match=r"experiments\.ts\.schedules: expected an integer"):
        plan(config)


def test_the_workflow_exports_and_draws_the_schedules_an_experiment_asks_for(tmp_path):
    """`schedules: 1`: the shard's first run is exported, drawn and stamped under
    results/<dataset>/schedules/, the other runs not; its pictures are in the report."""
    workdir = scratch_workflow(tmp_path)
    config = small_config(workdir, experiments={"drawn": {
        "workloads": ["lublin16"], "machines": ["torus"], "policies": ["bm"],
        "grid": {"offered_load": [0.9]}, "seeds": [1, 2], "per_job": True, "schedules": 1}})
    shard = ("results/torus-sweep-test/schedules/experiment=drawn/workload=lublin16/"
             "machine=torus/policy=bm")
    snakemake(workdir, f"{shard}/run=0", "--configfile", config)
    drawn = workdir / shard
    assert sorted(p.name for p in drawn.iterdir()) == [".run=0.sha256", "run=0"]
    files = {p.name for p in (drawn / "run=0").iterdir()}
    assert set(FILES) <= files and {"gantt.png", "gantt.svg", "snapshots.png"} <= files
    run = json.loads((drawn / "run=0" / "run.json").read_text())
    assert run["seed"] == 1 and run["workload"]["store"]["experiment"] == "drawn"
    assert stamp_problems(drawn / "run=0") == []  # as the archive verifies it
    snakemake(workdir, f"{shard}/run=0", "--configfile", config, "--report", "report.html")
    html = (workdir / "report.html").read_text()
    assert '"Schedules": {"drawn: lublin16, torus, bm, run 0"' in html
    assert all(f"{picture}.png" in html for picture in ("gantt", "snapshots", "by-size"))


PARAMS = ["--param", "seed=1", "--param", "offered_load=0.8"]


def tampered(kept_store, tmp_path, change) -> tuple:
    """A copy of the kept store whose jobs.parquet has the per-job rows of the run PARAMS
    name changed by `change(rows)` (a list of dicts, changed in place), written with a
    fresh checksum as the store writes it; (store, the jobs.parquet path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simcore.base.checksums import DIGEST_KEY
    from simcore.sweep.store import write_table

    root = tmp_path / "root"
    shutil.copytree(kept_store.parent.parent, root)
    store = root / STORE
    key = find_run(store, names=SHARD, params={"seed": "1", "offered_load": "0.8"}).key
    path = next(store.glob("**/jobs.parquet"))
    table = pq.read_table(path)
    rows = table.to_pylist()
    change([r for r in rows if r["run_key"] == key])
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()
            if k != DIGEST_KEY}
    write_table(pa.Table.from_pylist(rows, schema=table.schema.remove_metadata()), path, meta)
    return store, path


def overlapping(rows: list[dict]) -> tuple[dict, dict]:
    """Two jobs of one size, placed once each, the second placed while the first runs."""
    once = [r for r in rows if len(r["placed_s"]) == 1]
    for a in once:
        for b in once:
            if a is not b and a["alloc_size"] == b["alloc_size"] and (
                    a["placed_s"][0] < b["placed_s"][0] < a["end_s"]):
                return a, b
    raise AssertionError("no two jobs of one size overlap")


def first(rows: list[dict], size: int | None = None) -> dict:
    return next(r for r in rows if len(r["placed_s"]) == 1
                and (size is None or r["alloc_size"] == size))


def _set(row: dict, **values) -> None:
    row.update(values)


@pytest.mark.parametrize("case, change, expected", [
    ("15 units for a size of 1", lambda rows: _set(first(rows, 1), placed_code=[1, 0, 15]),
     r"placed_code holds 15 units from .*; expected its alloc_size \(1\)"),
    ("no units", lambda rows: _set(first(rows), placed_code=[0]),
     r"placed_code holds 0 units from .*; expected its alloc_size"),
    ("bits beyond the machine", lambda rows: _set(first(rows, 1), placed_code=[1, 20, 1]),
     r"placed_code of entry \d+ sets bits beyond the machine's units; expected bits below 16"),
    ("a unit another job holds", lambda rows: _set(overlapping(rows)[1], placed_code=overlapping(
        rows)[0]["placed_code"]), r"placed_code holds unit \d+ from .* while job \d+ holds it "
                                  r"until .*; expected each unit held by one job at a time"),
    ("placed before submission", lambda rows: _set(
        first(rows), placed_s=[first(rows)["submit_s"] - 1.0]),
     r"placed_s .*; expected a time from its submit_s"),
    ("placed at NaN", lambda rows: _set(first(rows), placed_s=[float("nan")]),
     r"placed_s nan; expected a time from its submit_s"),
    ("end before start", lambda rows: _set(first(rows), end_s=first(rows)["start_s"] - 1.0),
     r"submit_s .*, end_s .*; expected finite times in this order"),
])
def test_tampered_placements_are_refused_where_they_are_read(
        kept_store, tmp_path, capsys, case, change, expected):
    store, path = tampered(kept_store, tmp_path, change)
    err = refusal(capsys, "export", "--store", str(store), *NAMES, *PARAMS,
                  "--out", str(tmp_path / "out"))
    assert re.match(rf"simcore: error: {re.escape(str(path))}: job \d+: {expected}", err), err
    assert not (tmp_path / "out").exists()
