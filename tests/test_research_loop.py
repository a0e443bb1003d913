"""The research loop: a run's key holds the registry rows it uses and the code it executes,
so adding a row, a column or a parameter elsewhere, or editing help text, re-simulates
nothing, and editing a module re-simulates exactly the runs that execute it. Measured as a
user would, with `simcore plan` (cached / to simulate) on a store of config/test/small.yaml
built once, in copies of the checkout edited as a researcher would edit it."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simcore.sweep.config import read_config
from simcore.sweep.identity import code_files
from simcore.sweep.planning import load_plan
from simcore.sweep.runner import run_shard
from tests.conftest import ROOT, write_samples_of

SMALL = ROOT / "config/test/small.yaml"

#: In a copy of the checkout: what `simcore plan` reports, how many cache entries the
#: runner itself accepts as they are (it reads each with this code's store schema) and the
#: kernel cache directories of the engines the runs use.
MEASURE = """
import json, sys
from pathlib import Path
from simcore.base.caches import engine_directory
from simcore.simulate import engine_modules
from simcore.sweep.planning import load_plan, summarize_plan
from simcore.sweep.cache import find, read_entries
from simcore.sweep.identity import definitions
from simcore.sweep.runner import shard_tasks

results = Path(sys.argv[1])
report = summarize_plan("config/test/small.yaml", results)
shards = load_plan("config/test/small.yaml")
valid = 0
for shard in shards:
    keys = [task.key for task in shard_tasks(shard, results)]
    valid += len(read_entries(find(results, definitions(shard), keys, shard.per_job),
                              shard.per_job))
engines = sorted({engine_directory(engine_modules(s.machine_spec.allocator_row,
                                                  s.policy_spec.row))[0].name for s in shards})
print(json.dumps({"runs": report["runs"], "to_simulate": report["to_simulate"],
                  "valid": valid, "engines": engines}))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """The results root of small.yaml, every run simulated."""
    root = tmp_path_factory.mktemp("small") / "results"
    shards = load_plan(SMALL)
    write_samples_of(root, *shards)
    for shard in shards:
        run_shard(shard, root, log=io.StringIO())
    return root


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the package, its configs and its schema, to edit."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "simcore", copy / "simcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "config", copy / "config")
    shutil.copytree(ROOT / "workflow/schemas", copy / "workflow/schemas")
    return copy


def measure(checkout: Path, store: Path) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(store)], cwd=checkout, capture_output=True,
        text=True, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin",
                        "HOME": str(Path.home())})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def edit(checkout: Path, module: str, old: str, new: str, count: int = 1) -> None:
    """Replace `old` by `new` in a module of the copy (`old` must be there `count` times)."""
    path = checkout / "simcore" / module
    text = path.read_text()
    assert text.count(old) == count, (module, old)
    path.write_text(text.replace(old, new))


def add_row(checkout: Path, module: str, table: str, row: str) -> None:
    """Add `row` to the registry `table` of `module` (a dict built from a tuple of rows)."""
    path = checkout / "simcore" / module
    text = path.read_text()
    start = text.index(f"{table}: dict[")
    end = text.index("\n)}\n", start)
    path.write_text(text[:end] + f"\n    {row}," + text[end:])


SCHEDULERS = "schedulers/registry.py"
SCHEDULER_ROW = ('Scheduler("fcfs-again", "FCFS, a second row", _PHASED, (START_DELAY, '
                 'Parameter("patience_s", float, 5.0, "new", unit="s", minimum=0.0)))')
ALLOCATOR_ROW = ('Allocator("any-free-again", "any free units, a second row", ("flat",), '
                 '"simcore.machines.flat", frozenset({"counts"}))')
KIND_ROW = ('MachineKind("ring", "units on a ring", "ring:64", "any-free-again", max_dims=1, '
            'wraps=True)')
MODEL_ROW = ('Model("uniform", "uniform sizes", (JOBS,), "simcore.workload.lublin")')
METRIC_ROW = 'Column("fake_metric", float, "s", "a metric added after the store was made"),'

UNCHANGED = [
    ("a scheduler row", lambda c: add_row(c, SCHEDULERS, "SCHEDULERS", SCHEDULER_ROW)),
    ("an allocator row", lambda c: add_row(c, "machines/registry.py", "ALLOCATORS",
                                           ALLOCATOR_ROW)),
    ("a machine kind", lambda c: (
        add_row(c, "machines/registry.py", "ALLOCATORS", ALLOCATOR_ROW),
        add_row(c, "machines/registry.py", "KINDS", KIND_ROW))),
    ("a workload model", lambda c: add_row(c, "workload/synthetic.py", "MODELS", MODEL_ROW)),
    ("a run metric", lambda c: edit(c, "core/columns.py", "    *fidelity_metrics(),\n)",
                                    f"    *fidelity_metrics(),\n    {METRIC_ROW}\n)")),
    ("a parameter of another scheduler", lambda c: edit(
        c, SCHEDULERS, '"simcore.schedulers.conservative", (START_DELAY, ESTIMATES),',
        '"simcore.schedulers.conservative", (START_DELAY, ESTIMATES, Parameter("slack_s", '
        'float, 0.0, "new", unit="s", minimum=0.0)),')),
    ("help text", lambda c: (
        edit(c, SCHEDULERS, '"seconds between allocation and start;',
             '"time from allocation to start;'),
        edit(c, SCHEDULERS, '"first come, first served;', '"first come, first served (FCFS);'),
        edit(c, "machines/registry.py", '"N fully connected units"', '"N units, all linked"'))),
    ("the progress bar", lambda c: edit(c, "base/progress.py", '"""Progress of long work',
                                         '"""Progress (a bar) of long work')),
]


@pytest.mark.slow
@pytest.mark.parametrize("what, change", UNCHANGED, ids=[u[0] for u in UNCHANGED])
def test_adding_elsewhere_re_simulates_nothing(store, checkout, what, change):
    before = measure(checkout, store)
    assert before["to_simulate"] == 0 and before["valid"] == before["runs"] == 28
    change(checkout)
    after = measure(checkout, store)
    assert after == before, f"adding {what} changed run keys, refused cache entries or moved " \
                            "an engine's kernel cache"


EDITED = [
    ("machines/flat.py", "def build(", "def build(  "),
    ("machines/bgl/allocator.py", "def build(", "def build(  "),
    ("schedulers/migration.py", "import ", "import  "),
    ("core/state.py", "import ", "import  "),
]


TRANSFORM_MODULE = '''"""Arrivals rounded down to a multiple of a step: an extension transform."""
import dataclasses

import numpy as np


def apply(jobs, value, machine, seed):
    return dataclasses.replace(jobs, submit_s=np.floor(jobs.submit_s / value) * value)
'''
TRANSFORM_FIELD = '''    arrival_step_s: float = _transform(Parameter(
        "arrival_step_s", float, 0.0, "arrivals rounded down to a multiple of this; 0: kept",
        unit="s", minimum=0.0), module="simcore.workload.round_arrivals")

    def __post_init__'''
USE_TRANSFORM = """
from simcore.machines.spec import MachineSpec
from simcore.sweep.identity import code_modules
from simcore.sweep.planning import load_plan
from simcore.workload.spec import WorkloadSpec
from simcore.workload.synthetic import SyntheticSpec, synthesize
from simcore.workload.transforms import prepare

table = synthesize(SyntheticSpec.create("lublin", {"jobs": 50, "max_procs": 16}), 1)
jobs = prepare(table, WorkloadSpec(arrival_step_s=3600.0), MachineSpec.parse("flat:16"))
print(all(t % 3600 == 0 for t in jobs.submit_s), len(jobs))
shard = load_plan("config/test/small.yaml")[0]
print("simcore.workload.round_arrivals" in code_modules(shard))
"""


@pytest.mark.slow
def test_an_extension_transform_is_one_row_and_one_module(store, checkout):
    """A transform whose default leaves jobs unchanged: a field naming its module, and the
    module. No run is simulated again and no engine recompiled; where it is set, prepare
    applies it, and only runs that set it execute its module."""
    before = measure(checkout, store)
    (checkout / "simcore/workload/round_arrivals.py").write_text(TRANSFORM_MODULE)
    edit(checkout, "workload/spec.py", "\n    def __post_init__", "\n" + TRANSFORM_FIELD)
    assert measure(checkout, store) == before
    out = subprocess.run([sys.executable, "-c", USE_TRANSFORM], cwd=checkout, text=True,
                         capture_output=True, env={"PYTHONPATH": str(checkout),
                                                   "PATH": "/usr/bin:/bin",
                                                   "HOME": str(Path.home())})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "50", "False"]


@pytest.mark.slow
@pytest.mark.parametrize("module, old, new", EDITED, ids=[e[0] for e in EDITED])
def test_editing_a_module_re_simulates_exactly_the_runs_that_execute_it(store, checkout,
                                                                        module, old, new):
    path = ROOT / "simcore" / module
    executing = sum(len(s.runs) for s in load_plan(SMALL) if path in code_files(s))
    assert executing > 0
    text = (checkout / "simcore" / module).read_text()
    edit(checkout, module, old, new, text.count(old))
    assert measure(checkout, store)["to_simulate"] == executing


def test_a_changed_default_re_simulates_the_runs_that_use_it(store, checkout):
    """A default is part of the row: runs of the schedulers having it are keyed anew."""
    edit(checkout, SCHEDULERS, '"start_delay_s", float, 0.0,', '"start_delay_s", float, 1.0,')
    assert measure(checkout, store)["to_simulate"] == 28


GRID = {"workloads": ["lublin16"], "machines": ["torus", "flat"],
        "policies": ["fcfs", "backfill", "migration", "bm"],
        "grid": {"offered_load": [0.9], "fn_tor": [0.0, 0.3], "max_growth": [0, 2]},
        "seeds": {"first": 1, "count": 2}, "per_job": True}


@pytest.mark.slow
def test_policy_parameters_are_grid_axes(tmp_path):
    """fn_tor and max_growth crossed like offered_load: each applies to the policies having
    it, a value that cannot matter (growth where no job grows) is planned once, and both
    are columns of the tables."""
    from simcore.report.tables import aggregate, markdown
    from simcore.sweep.experiments import plan
    from simcore.sweep.store import read_summaries

    config = read_config(SMALL)
    config["policies"]["migration"] = {"scheduler": "migration"}
    config["experiments"] = {"knobs": GRID}
    shards = {s.label(): s for s in plan(config)}
    runs = {label.split("/", 2)[2]: len(s.runs) for label, s in shards.items()}
    # seeds 1, 2 x fn_tor where the scheduler has it x max_growth where jobs may grow
    assert runs == {"torus/fcfs": 2, "torus/backfill": 4, "torus/migration": 4,
                    "torus/bm": 8, "flat/fcfs": 2, "flat/backfill": 2}
    bm = shards["knobs/lublin16/torus/bm"]
    assert {(bm.policy_of(r).fn_tor, bm.policy_of(r).max_growth) for r in bm.runs} == {
        (0.0, 0), (0.0, 2), (0.3, 0), (0.3, 2)}
    assert {shards["knobs/lublin16/flat/backfill"].policy_of(r).max_growth
            for r in shards["knobs/lublin16/flat/backfill"].runs} == {0}
    root = tmp_path / "results"
    write_samples_of(root, *shards.values())
    for shard in shards.values():
        run_shard(shard, root, log=io.StringIO())
    rows = read_summaries(root / "torus-sweep-test" / "store")
    assert rows.height == 22
    migrating = rows.filter(rows["policy"] == "bm")
    assert sorted(migrating["fn_tor"].unique().to_list()) == [0.0, 0.3]
    assert sorted(migrating["max_growth"].unique().to_list()) == [0, 2]
    table = aggregate(rows)["utilization"]
    assert table.filter(table["policy"] == "bm").height == 4  # one row per grid point
    text = markdown("utilization", table)
    header = next(line for line in text.splitlines() if line.startswith("| experiment")
                  or line.startswith("| workload") or line.startswith("| machine"))
    assert "fn_tor" in header and "max_growth" in header
    assert re.search(r"- bm = bm .*fn_tor=\(a column\)", text)


def test_seeds_that_cannot_differ_are_said(capsys):
    """Seeds on a trace with nothing random give one run each: the plan says so, naming
    the experiment, the runs merged and the transform that makes seeds differ."""
    from simcore.sweep.experiments import plan

    config = read_config(SMALL)
    config["workloads"]["trace"] = {"trace": "NASA-iPSC-1993-3.1-cln"}
    config["experiments"] = {"fixed": {"workloads": ["trace"], "machines": ["flat"],
                                       "policies": ["fcfs"], "seeds": [1, 2, 3]}}
    notes: list[str] = []
    shards = plan(config, None, notes)
    assert [len(s.runs) for s in shards] == [1]
    assert len(notes) == 1
    assert "experiments.fixed.seeds" in notes[0] and "2 runs were merged" in notes[0]
    assert "arrival_shake_s" in notes[0]
    config["experiments"]["fixed"]["transforms"] = {"arrival_shake_s": 60}
    notes.clear()
    assert [len(s.runs) for s in plan(config, None, notes)] == [3] and not notes



@pytest.mark.slow
def test_a_new_column_is_filled_in_for_the_runs_chosen(store, checkout, tmp_path):
    """A metric added after the store was made: no run is simulated again, the shard files
    read it as null, and `simcore resimulate` fills it in for exactly the runs selected."""
    results = tmp_path / "results"
    shutil.copytree(store, results)
    edit(checkout, "core/columns.py", "absent=None),\n)",
         'absent=None),\n    Column("fake_metric", int, "count", "new", absent=7),\n)')
    assert measure(checkout, results)["to_simulate"] == 0
    env = {"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}

    def run(*args: str) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, *args], cwd=checkout, env=env,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out

    # one engine (the wired machines'), so that the copy compiles no other
    first = run("-m", "simcore", "resimulate", "--configfile", "config/test/small.yaml",
                "--results", str(results), "--experiment", "shapes", "--where", "p_fat=1")
    assert "2 runs simulated again" in first.stderr
    again = run("-m", "simcore", "resimulate", "--configfile", "config/test/small.yaml",
                "--results", str(results), "--experiment", "shapes", "--policy", "backfill",
                "--where", "p_fat=0", "--where", "p_torus=1")
    assert "2 runs simulated again" in again.stderr
    values = run("-c", READ_METRIC, str(results)).stdout.split()
    # shapes: p_fat 1, then 0, on bgl and torus-links (4 runs); every other run of the 28
    # still has no value
    assert values.count("7") == 4 and values.count("None") == 24


READ_METRIC = """
import sys
from pathlib import Path
from simcore.sweep.store import read_summaries

rows = read_summaries(Path(sys.argv[1]) / "torus-sweep-test" / "store")
print(*rows["fake_metric"].to_list())
"""
