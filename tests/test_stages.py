"""Seeds planned to decide: a two-stage plan runs its pilot, then the seeds the pilot's
spread fixes, the same for the same store, each seed the run a plain list would plan."""

from __future__ import annotations

import copy
import io
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from simcore.base.confidence import half_width, mean
from simcore.base.errors import ConfigError
from simcore.cli.main import main
from simcore.sweep.cache import find, read_entries
from simcore.sweep.experiments import plan
from simcore.sweep.identity import definitions_of
from simcore.sweep.planning import run_keys, staged_plan
from simcore.sweep.runner import run_shard
from simcore.sweep.stages import Decision, TwoStage, decide
from tests.test_runner import workloads
from tests.workflow import ROOT, dry_run, scratch_workflow

TWO_STAGE = {"first": 1, "pilot": 3, "max": 8,
             "target": {"metric": "mean_wait_s", "relative_half_width": 0.05}}
CONFIG = {
    "dataset": "two-stage",
    "traces": {"catalogue": str(ROOT / "config/traces.yaml"), "mirrors": [],
               "cleaning": {"oversize": "drop"}},
    "workloads": {"lublin16": {"synthetic": {"model": "lublin", "jobs": 60, "max_procs": 16,
                                             "job_type": "batch"}}},
    "machines": {"flat": "flat:16"},
    "policies": {"fcfs": {"scheduler": "fcfs"}, "backfill": {"scheduler": "backfill"}},
    "experiments": {"decide": {"workloads": ["lublin16"], "machines": ["flat"],
                               "policies": ["fcfs", "backfill"],
                               "grid": {"offered_load": [0.6, 0.9]}, "seeds": TWO_STAGE}},
}


def configured(**seeds) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"]["decide"]["seeds"] = {**TWO_STAGE, **seeds}
    return config


def seeds_of(shards) -> list[int]:
    return sorted({run.seed for shard in shards for run in shard.runs})


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A results root holding the pilot's runs (seeds 1-3) and nothing else."""
    root = tmp_path_factory.mktemp("stages") / "results"
    for shard in plan(CONFIG):
        workloads(root, shard)
        run_shard(shard, root, log=io.StringIO())
    return root


def pilot_values(store: Path) -> dict[str, list[float]]:
    """mean_wait_s of each configuration's pilot runs, read from the run cache."""
    shards = plan(CONFIG)
    values: dict[str, list[float]] = {}
    for shard, definition in zip(shards, definitions_of(shards), strict=True):
        keyed = list(run_keys(shard, definition, store, {}))
        runs = read_entries(find(store, definition, [key for _, key in keyed]))
        for run, key in keyed:
            row = runs.row(key)
            label = f"{shard.policy} {run.transforms.offered_load}"
            values.setdefault(label, []).append(row["mean_wait_s"])
    return values


def test_before_the_pilot_only_the_pilot_is_planned(tmp_path):
    shards, (stage,) = staged_plan(CONFIG, None, tmp_path / "empty")
    assert seeds_of(shards) == [1, 2, 3]
    assert (stage.pilot_runs, stage.pilot_done, stage.decision) == (12, 0, None)
    assert stage.describe()[1].startswith("second stage: planned after the pilot")


def test_the_pilot_fixes_the_second_stage_from_its_spread(store):
    values = pilot_values(store)
    spreads = {label: half_width(v, 0.95) / abs(mean(v)) for label, v in values.items()}
    widest = max(spreads, key=spreads.__getitem__)
    relative = spreads[widest]
    # a target of half the widest relative half-width needs 3 x 2^2 seeds there
    halved = configured(max=20, target={"metric": "mean_wait_s",
                                        "relative_half_width": relative / 2})
    shards, (stage,) = staged_plan(halved, None, store)
    assert stage.decision.n == 12
    assert stage.decision.relative == relative
    policy, load = widest.split()
    assert stage.decision.widest == f"decide/lublin16/flat/{policy} offered_load={load}"
    assert seeds_of(shards) == list(range(1, 13))
    assert (stage.second_runs, stage.second_cached) == (4 * 9, 0)
    capped, (stage,) = staged_plan(configured(), None, store)
    assert relative > 0.05 and stage.decision.n == 8, "capped by max"
    assert seeds_of(capped) == list(range(1, 9))
    loose = configured(target={"metric": "mean_wait_s", "relative_half_width": 100.0})
    shards, (stage,) = staged_plan(loose, None, store)
    assert stage.decision.n == 3 and seeds_of(shards) == [1, 2, 3], "at least the pilot"
    assert stage.describe()[1].startswith("second stage: none, n = 3")


def test_an_undefined_spread_needs_max_and_a_merged_pilot_none():
    stage = TwoStage(1, 3, 8, "mean_wait_s", 0.05, 0.95)
    assert stage.needed([0.0, 0.0, 0.0]) == (8, None), "a zero mean"
    assert stage.needed([5.0, None, float("nan")]) == (8, None), "one defined value"
    assert stage.needed([10.0, 10.0, 10.0]) == (3, 0.0)
    assert decide(stage, {"deterministic": [7.0]}) == Decision(3, "", None)


def test_the_same_store_gives_the_same_plan(store):
    first, second = staged_plan(CONFIG, None, store), staged_plan(CONFIG, None, store)
    assert [s.to_json() for s in first[0]] == [s.to_json() for s in second[0]]
    assert first[1] == second[1]


def test_second_stage_runs_have_the_keys_of_a_plain_list(store):
    staged, _ = staged_plan(CONFIG, None, store)
    plain = copy.deepcopy(CONFIG)
    plain["experiments"]["decide"]["seeds"] = list(range(1, 9))
    listed = plan(plain)
    for shards in (staged, listed):
        for shard in shards:
            workloads(store, shard)
    keys = [[key for shard, d in zip(shards, definitions_of(shards), strict=True)
             for _, key in run_keys(shard, d, store, {})] for shards in (staged, listed)]
    assert len(keys[0]) == 4 * 8 and None not in keys[0]
    assert keys[0] == keys[1]


def test_simcore_plan_prints_both_stages(store, tmp_path, capsys):
    configfile = tmp_path / "two.yaml"
    configfile.write_text(yaml.safe_dump(CONFIG))
    assert main(["plan", "--configfile", str(configfile), "--results", str(store)]) == 0
    out = capsys.readouterr().out
    assert "pilot: seeds 1-3, 12 of 12 runs done" in out
    assert re.search(r"second stage: n = 8 from the pilot's spread \(largest relative "
                     r"half-width \d+\.\d% on decide/lublin16/flat/\S+ offered_load=0\.\d\), "
                     r"seeds 4-8, 20 to run", out), out
    assert main(["plan", "--configfile", str(configfile), "--results",
                 str(tmp_path / "empty"), "--json"]) == 0
    (stage,) = json.loads(capsys.readouterr().out)["stages"]
    assert (stage["pilot_seeds"], stage["pilot_done"], stage["n"]) == ([1, 2, 3], 0, None)


def test_the_workflow_runs_the_second_stage_once_the_pilot_is_stored(store, tmp_path):
    """One run of the workflow plans the pilot; the run after it plans every seed the
    pilot fixed (a dry run on a copy of the store holding the pilot's runs)."""
    workdir = scratch_workflow(tmp_path)
    (workdir / "two.yaml").write_text(yaml.safe_dump(CONFIG))
    for results, seeds in ((None, 3), (store, 8)):
        if results is not None:
            shutil.copytree(results, workdir / "results")
        dag = dry_run(workdir, "two.yaml")
        (sampled,) = [j.params.seeds for j in dag.jobs if j.rule.name == "synthesize_workload"]
        assert sampled == f"1-{seeds}"
        shards = [j for j in dag.jobs if j.rule.name == "simulate_shard"]
        assert len(shards) == 2
        assert all(j.params.identity.startswith(f"{2 * seeds} runs,") for j in shards)


@pytest.mark.parametrize(("seeds", "message"), [
    ({**TWO_STAGE, "count": 5}, r"decide\.seeds\.pilot: given with count"),
    ({**TWO_STAGE, "pilots": 3}, r"decide\.seeds\.pilots: unknown key"),
    ({k: v for k, v in TWO_STAGE.items() if k != "max"}, r"decide\.seeds\.max: missing"),
    ({**TWO_STAGE, "max": 2}, r"decide\.seeds\.max: 2; expected at least pilot \(3\)"),
    ({**TWO_STAGE, "pilot": 1}, r"decide\.seeds\.pilot: pilot=1; expected an integer >= 2"),
    ({**TWO_STAGE, "target": {"metric": "wait", "relative_half_width": 0.05}},
     r"decide\.seeds\.target\.metric: 'wait'; expected a numeric summary column"),
    ({**TWO_STAGE, "target": {"metric": "mean_wait_s"}},
     r"decide\.seeds\.target\.relative_half_width: missing"),
    ({**TWO_STAGE, "target": {"metric": "mean_wait_s", "relative_half_width": 0}},
     r"decide\.seeds\.target\.relative_half_width: relative_half_width=0; expected"),
    ({**TWO_STAGE, "target": {**TWO_STAGE["target"], "level": 1}},
     r"decide\.seeds\.target\.level: level=1; expected"),
    ({**TWO_STAGE, "target": {**TWO_STAGE["target"], "confidence": 0.9}},
     r"decide\.seeds\.target\.confidence: unknown key"),
])
def test_bad_two_stage_keys_are_refused_naming_the_key(seeds, message):
    config = copy.deepcopy(CONFIG)
    config["experiments"]["decide"]["seeds"] = seeds
    with pytest.raises(ConfigError, match=message):
        plan(config)
