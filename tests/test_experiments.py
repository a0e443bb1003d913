"""The experiment planner: shards, runs, run keys and precise configuration errors."""

from __future__ import annotations

import copy

import pytest
import yaml

from simcore.base.errors import ConfigError
from simcore.base.patterns import CATALOGUE
from simcore.sweep.config import validate
from simcore.sweep.experiments import Run, Shard, plan
from simcore.sweep.identity import code_files, definitions
from simcore.sweep.planning import SCHEMA
from simcore.workload.traces import load_catalogue
from tests.conftest import ROOT

SMALL = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())


def shards(config=SMALL):
    return {s.label(): s for s in plan(config)}


def test_cross_product_skips_migration_off_torus():
    labels = set(shards())
    assert "small/lublin16/torus/bm" in labels
    assert "small/lublin16/flat/backfill" in labels
    assert "small/lublin16/flat/bm" not in labels
    assert "small/lublin16/flat/migration-always" not in labels
    assert len(labels) == 8


def test_runs_in_grid_order_with_seeds():
    runs = shards()["small/lublin16/torus/fcfs"].runs
    assert [(r.transforms.offered_load, r.seed) for r in runs] == [(0.6, 1), (0.6, 2),
                                                                   (0.9, 1), (0.9, 2)]


def test_shapes_collapse_on_machines_that_do_not_allocate_them():
    config = copy.deepcopy(SMALL)
    config["experiments"]["small"]["grid"]["p_fat"] = [0, 1]
    runs = shards(config)["small/lublin16/torus/fcfs"].runs
    assert len(runs) == 4 and {r.transforms.p_fat for r in runs} == {0.0}
    bgl = shards(config)["shapes/lublin128/bgl/backfill"].runs
    assert {r.transforms.p_fat for r in bgl} == {0.0, 1.0}


def test_seed_dropped_where_nothing_is_random():
    config = copy.deepcopy(SMALL)
    config["workloads"]["trace"] = {"trace": "NASA-iPSC-1993-3.1-cln"}
    config["experiments"]["small"]["workloads"] = ["trace"]
    runs = shards(config)["small/trace/torus/fcfs"].runs
    assert [r.seed for r in runs] == [0, 0], "a trace on a torus is deterministic"
    config["experiments"]["shapes"]["workloads"] = ["trace"]
    config["experiments"]["shapes"]["grid"]["p_torus"] = [0.5]
    runs = shards(config)["shapes/trace/bgl/backfill"].runs
    assert sorted({r.seed for r in runs}) == [1], "random torus draws keep their seed"


def test_shard_json_round_trip_and_stable_keys():
    shard = shards()["small/lublin16/torus/bm"]
    again = Shard.from_json(shard.to_json())
    assert again.to_json() == shard.to_json()
    code = definitions(shard)
    keys = {shard.run_key(run, "w" * 64, code) for run in shard.runs}
    assert len(keys) == len(shard.runs)
    other = shards()["small/lublin16/torus/fcfs"]
    assert keys.isdisjoint(other.run_key(r, "w" * 64, definitions(other))
                           for r in other.runs)
    assert shard.run_key(shard.runs[0], "v" * 64, code) not in keys


#: The key of small/lublin16/torus/fcfs's first run with the transform oversize: drop, at
#: workload hash "0" x 64 and definitions "1" x 64, as computed before the transform was
#: renamed machine_fit: results stored then must stay cached. (Recomputed once, when every
#: machine gained the failure option down_fraction, an edit of the run code that re-keyed
#: every run anyway.)
KEY_BEFORE_RENAME = "49ea3d1cbd7d47c6cc6ad5a925ff43bc4e0a8c418a8a4bbedf2fc762f44ea03d"


@pytest.mark.parametrize("name", ["machine_fit", "oversize"])
def test_a_renamed_transform_keeps_its_run_keys(name):
    """machine_fit (the machine-fit transform, once `oversize`, the name the trace cleaning
    rule keeps) is held in run keys under its former name, and a configuration may still
    spell it so; a run round-trips through its JSON under the new name."""
    config = copy.deepcopy(SMALL)
    config["experiments"]["small"]["transforms"] = {name: "drop"}
    validate(config, SCHEMA)
    shard = shards(config)["small/lublin16/torus/fcfs"]
    run = shard.runs[0]
    assert run.transforms.machine_fit == "drop"
    assert shard.run_key(run, "0" * 64, "1" * 64) == KEY_BEFORE_RENAME
    assert run.to_dict()["transforms"] == {"machine_fit": "drop", "offered_load": 0.6}
    assert Run.from_dict({**run.to_dict(), "transforms": {"oversize": "drop",
                                                          "offered_load": 0.6}}) == run


def test_a_transform_under_both_names_is_refused():
    config = copy.deepcopy(SMALL)
    config["experiments"]["small"]["transforms"] = {"oversize": "drop", "machine_fit": "drop"}
    with pytest.raises(ConfigError, match=r"experiments\.small\.transforms: oversize and "
                                          r"machine_fit both given; expected machine_fit alone"):
        plan(config)


def test_code_is_the_import_closure_of_scheduler_and_allocator():
    s = shards()
    names = lambda label: {p.relative_to(ROOT / "simcore").as_posix()  # noqa: E731
                           for p in code_files(s[label])}
    bm, flat = names("small/lublin16/torus/bm"), names("small/lublin16/flat/fcfs")
    assert {"schedulers/migration.py", "schedulers/phased.py",
            "machines/boxes/allocator.py"} <= bm
    assert "machines/boxes/allocator.py" not in flat and "machines/flat.py" in flat
    assert {"machines/bgl/allocator.py", "machines/bgl/wiring.py"} <= \
        names("shapes/lublin128/bgl/backfill")
    # what every run reads on its way: SWF fields, job tables, transforms, the engine
    for module in ("jobs/swf.py", "jobs/jobs.py", "workload/transforms.py", "core/engine.py",
                   "core/state.py"):
        assert module in bm and module in flat
    assert not {"report/plots.py", "report/tables.py", "cli/main.py", "report/archive.py"} & bm
    # no other family's code: a run executes its own machine's and scheduler's
    assert not {p for p in bm | flat if p.startswith(("machines/bgl/", "machines/mesh2d/",
                                                      "machines/curves/", "timeshare/"))}


def test_replicated_traces_keep_the_seeds_of_their_jittered_copies():
    config = copy.deepcopy(SMALL)
    config["workloads"]["trace"] = {"trace": "NASA-iPSC-1993-3.1-cln"}
    config["experiments"]["small"]["workloads"] = ["trace"]
    config["experiments"]["small"]["grid"] = {"replication": [1, 2]}
    runs = shards(config)["small/trace/torus/fcfs"].runs
    assert [(r.transforms.replication, r.seed) for r in runs] == [(1, 0), (2, 1), (2, 2)]
    config["experiments"]["small"]["transforms"] = {"replication_jitter_s": 0}
    runs = shards(config)["small/trace/torus/fcfs"].runs
    assert [(r.transforms.replication, r.seed) for r in runs] == [(1, 0), (2, 0)]


def test_curve_machines_in_a_config():
    config = copy.deepcopy(SMALL)
    config["machines"]["curve"] = {"spec": "mesh:2x2x4", "allocator": "best-fit",
                                   "ordering": "hilbert", "fallback_span": "ring"}
    config["policies"]["cplant"] = {"scheduler": "cplant"}
    config["experiments"]["small"]["machines"] = ["curve"]
    config["experiments"]["small"]["policies"] = ["fcfs", "cplant", "bm"]
    s = shards(config)
    assert {"small/lublin16/curve/fcfs", "small/lublin16/curve/cplant"} <= set(s)
    assert "small/lublin16/curve/bm" not in s, "migration needs a box allocator"
    shard = s["small/lublin16/curve/cplant"]
    assert Shard.from_json(shard.to_json()).machine_spec == shard.machine_spec
    assert str(shard.machine_spec) == \
        "mesh:2x2x4 allocator=best-fit ordering=hilbert fallback_span=ring"
    code = {p.name for p in code_files(shard)}
    assert {"allocator.py", "locality.py", "orderings.py", "phased.py", "cplant.py"} <= code
    config["machines"]["curve"]["ordering"] = "nope"
    with pytest.raises(ConfigError, match=r"machines.curve: machine mesh:2x2x4 allocator="
                                          r"best-fit ordering=nope .*: ordering 'nope'"):
        plan(config)


def test_growth_normalised_where_jobs_never_grow():
    config = copy.deepcopy(SMALL)
    config["policies"]["backfill"]["max_growth"] = 3
    s = shards(config)
    assert s["small/lublin16/torus/backfill"].policy_spec.max_growth == 3
    assert s["small/lublin16/flat/backfill"].policy_spec.max_growth == 0
    assert s["shapes/lublin128/bgl/backfill"].policy_spec.max_growth == 0


def test_any_transform_is_a_grid_axis():
    """Spans and shaking are axes like the load: one run per value (and seed, where the
    value draws random numbers)."""
    config = copy.deepcopy(SMALL)
    config["workloads"]["trace"] = {"trace": "NASA-iPSC-1993-3.1-cln"}
    small = config["experiments"]["small"]
    small.update(workloads=["trace"], grid={"skip_jobs": [0, 5000],
                                            "arrival_shake_s": [0, 60]})
    runs = shards(config)["small/trace/torus/fcfs"].runs
    assert [(r.transforms.skip_jobs, r.transforms.arrival_shake_s, r.seed) for r in runs] == [
        (0, 0.0, 0), (0, 60.0, 1), (0, 60.0, 2), (5000, 0.0, 0), (5000, 60.0, 1),
        (5000, 60.0, 2)]


def test_numeric_grid_values_are_compared_as_converted():
    config = copy.deepcopy(SMALL)
    config["experiments"]["small"]["grid"]["offered_load"] = [1, 1.0]
    with pytest.raises(ConfigError, match=r"experiments\.small\.grid\.offered_load\[1\]: 1\.0 "
                                          r"given again \(first as \[0\]\)"):
        shards(config)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["experiments"]["small"]["machines"].append("nope"),
     r"experiments.small.machines\[2\]: unknown name 'nope'; expected one of"),
    (lambda c: c["machines"].update(torus="torus:axb"), r"machines.torus: machine 'torus:axb'"),
    (lambda c: c["policies"]["fcfs"].update(fn_tor=0.2),
     r"policies.fcfs: scheduler fcfs: parameter\(s\) \['fn_tor'\] do not apply"),
    (lambda c: c["experiments"]["small"]["grid"].update(c=[1.0]),
     r"experiments.small.grid: unknown key 'c'; expected a workload transform"),
    (lambda c: c["experiments"]["small"].update(seeds=[-1]),
     r"experiments.small.seeds\[0\]: seed=-1; expected an integer >= 0"),
    (lambda c: c["experiments"]["small"].update(seeds=[2**63]),
     r"experiments.small.seeds\[0\]: seed=9223372036854775808; expected an integer >= 0 "
     r"and < 2\^63"),
    (lambda c: c["workloads"]["lublin16"]["synthetic"].update(jobs=300.0),
     r"workloads.lublin16.synthetic: model lublin: jobs=300.0; expected an integer >= 1"),
    (lambda c: c["experiments"]["small"]["grid"].update(offered_load=[float("inf")]),
     r"experiments.small.grid.offered_load\[0\]: offered_load=inf; expected a finite"),
    (lambda c: c["workloads"].update(bad={"trace": "X", "synthetic": {}}),
     r"workloads.bad: expected exactly one of 'trace' or 'synthetic'"),
    (lambda c: c["experiments"]["small"]["grid"].update(runtime_scale=[0]),
     r"experiments.small.grid.runtime_scale\[0\]: runtime_scale=0; expected a finite number > 0"),
    (lambda c: c["experiments"].update({"a b": c["experiments"]["small"]}),
     r"experiments.a b: names may hold"),
    (lambda c: c["experiments"]["small"].update(transforms={"offered_load": 0.5}),
     r"experiments.small: \['offered_load'\] set both in transforms and in grid; expected one"),
])
def test_config_errors_name_the_key(edit, message):
    config = copy.deepcopy(SMALL)
    edit(config)
    with pytest.raises(ConfigError, match=message):
        plan(config)


def test_unknown_trace_names_the_catalogue():
    config = copy.deepcopy(SMALL)
    config["workloads"]["t"] = {"trace": "Missing-1999"}
    with pytest.raises(ConfigError, match=r"workloads.t.trace: 'Missing-1999' is not in"):
        plan(config, traces=load_catalogue(CATALOGUE))


#: One machine of every family, each run under FCFS (and Chu's mesh under a Chu queue).
FAMILIES = {
    "flat": "flat:16",
    "torus": "torus:2x2x4",
    "curve": {"spec": "mesh:2x2x4", "allocator": "first-fit", "ordering": "hilbert"},
    "menu": "slurm-torus3d:example-8x4x4.yaml",
    "cube": "cubes:2x2x2:2",
    "bgl": "bgl:8x4x4",
    "torus-links": "torus-links:8x4x4",
    "chu": {"spec": "mesh:4x4", "allocator": "bl"},
}


def family_shards():
    config = copy.deepcopy(SMALL)
    config["machines"] = FAMILIES
    config["policies"] = {"fcfs": {"scheduler": "fcfs"}, "mq": {"scheduler": "mq"}}
    config["experiments"] = {"e": {"workloads": ["lublin16"], "machines": list(FAMILIES),
                                   "policies": ["fcfs"], "seeds": [1]},
                             "chu": {"workloads": ["lublin16"], "machines": ["chu"],
                                     "policies": ["mq"], "seeds": [1]}}
    return plan(config)


@pytest.mark.parametrize(("edited", "re_simulated"), [
    ("machines/bgl/allocator.py", {"bgl/fcfs", "torus-links/fcfs"}),
    ("machines/bgl/wiring.py", {"bgl/fcfs", "torus-links/fcfs"}),
    ("machines/mesh2d/grid.py", {"chu/fcfs", "chu/mq"}),
    ("machines/boxes/allocator.py", {"torus/fcfs", "cube/fcfs"}),
    ("machines/boxes/maximal.py", {"torus/fcfs", "cube/fcfs"}),
    ("machines/curves/allocator.py", {"curve/fcfs"}),
    ("machines/slurm/menu.py", {"menu/fcfs"}),
    ("schedulers/queues.py", {"chu/mq"}),
    ("machines/flat.py", {"flat/fcfs"}),
])
def test_an_edit_re_simulates_only_the_runs_that_execute_it(edited, re_simulated):
    """A run's key holds the digest of its code files (`code_files`), so editing a file
    re-simulates exactly the shards whose closure holds it."""
    affected = {f"{s.machine}/{s.policy}" for s in family_shards()
                if edited in {p.relative_to(ROOT / "simcore").as_posix() for p in code_files(s)}}
    assert affected == re_simulated


def test_every_run_executes_the_engine_and_its_own_family_only():
    for shard in family_shards():
        files = {p.relative_to(ROOT / "simcore").as_posix() for p in code_files(shard)}
        assert {"core/engine.py", "simulate.py", "workload/transforms.py"} <= files
        assert not {f for f in files if f.startswith(("sweep/", "report/", "cli/"))}
        assert not {"schedulers/registry.py", "machines/registry.py", "core/columns.py",
                    "workload/synthetic.py", "base/progress.py"} & files
        families = {f.split("/")[1] for f in files if f.count("/") == 2
                    and f.startswith("machines/")}
        expected = {"torus": {"boxes"}, "cube": {"boxes", "cubes"}, "curve": {"curves"},
                    "menu": {"slurm"}, "bgl": {"bgl"}, "torus-links": {"bgl"},
                    "chu": {"mesh2d"}, "flat": set()}[shard.machine]
        assert families == expected, shard.label()
