"""The registries: schedulers, machine kinds and allocators, and what derives from them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from simcore.base.errors import SpecError
from simcore.base.params import Parameter
from simcore.jobs.jobs import Jobs
from simcore.machines.registry import ALLOCATORS, KINDS
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, PolicySpec
from simcore.simulate import simulate
from simcore.sweep.config import schema
from simcore.workload.spec import ALIASES, transforms
from simcore.workload.synthetic import MODELS
from tests.conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def test_config_schema_derives_from_the_registries():
    defs = schema(SCHEMA)["$defs"]
    policies = {alt["properties"]["scheduler"]["const"]: set(alt["properties"]) - {"scheduler"}
                for alt in defs["policy"]["oneOf"]}
    assert policies == {name: set(row.parameter_names) for name, row in SCHEDULERS.items()}
    assert defs["machine"]["oneOf"][1]["properties"]["allocator"]["enum"] == list(ALLOCATORS)
    assert [alt["properties"]["model"]["const"] for alt in defs["synthetic"]["oneOf"]] == \
        list(MODELS)
    named = set(transforms()) | set(ALIASES)  # a renamed transform is read under both names
    assert set(defs["transforms"]["properties"]) == named
    options = {p.name for row in ALLOCATORS.values() for p in row.options}
    parameters = {p for row in SCHEDULERS.values() for p in row.parameter_names}
    assert set(defs["grid"]["properties"]) == named | parameters | options


def test_grid_axis_names_are_unambiguous():
    """A grid axis names a transform, a scheduler parameter or an allocator option: never two
    of them, and an option has one definition across allocators."""
    options = {}
    for row in ALLOCATORS.values():
        for p in row.options:
            assert options.setdefault(p.name, p) == p, p.name
    parameters = {p for row in SCHEDULERS.values() for p in row.parameter_names}
    assert not set(transforms()) & parameters
    assert not set(transforms()) & set(options)
    assert not parameters & set(options)


def test_every_allocator_serves_a_registered_kind():
    for row in ALLOCATORS.values():
        assert set(row.kinds) <= set(KINDS)
    for kind in KINDS.values():
        assert kind.name in ALLOCATORS[kind.default_allocator].kinds


def one_job():
    return Jobs.create([1], [0.0], [1.0], [1.0], [1])


@pytest.mark.parametrize(("machine", "search", "message"), [
    ("mesh:100000", "table", r"machine mesh:100000 search=table would take \d+\.\d GiB"),
    ("torus:16x16x16", "table", r"machine torus:16x16x16 search=table would take 6\.9 GiB; "
                                r"machine tables are limited to 512 MiB"),
    ("torus:64x4096x4096", "auto", r"machine torus:64x4096x4096 would take \d+\.\d GiB"),
    ("mesh:100000", "auto", r"needs one side of at most 64 units"),
])
def test_oversized_machines_are_refused_before_anything_is_allocated(machine, search, message):
    spec = MachineSpec.parse(machine, options={"search": search})
    with pytest.raises(SpecError, match=message):
        simulate(one_job(), spec, "fcfs")


def test_huge_flat_machine_needs_no_tables():
    assert simulate(one_job(), "flat:10000000000", "fcfs").summary["jobs"] == 1


@pytest.mark.parametrize(("text", "allocator", "message"), [
    ("flat:8", "largest-free", r"allocator largest-free works on torus, mesh machines"),
    ("torus:4x4", "nope", r"allocator 'nope'; expected one of any-free, largest-free"),
    ("flat:4x4", None, r"machine flat:4x4: expected 1 dimension\(s\), e.g. flat:128"),
    ("torus:1099511627777", None, r"expected at most 2\^40"),
    ("bgl:4x4x4", None, r"wires a 8x4x4 machine; expected bgl:8x4x4"),
])
def test_machine_spec_errors(text, allocator, message):
    with pytest.raises(SpecError, match=message):
        MachineSpec.parse(text, allocator)


def test_spec_text_names_a_non_default_allocator():
    assert str(MachineSpec.parse("torus:4x4x8")) == "torus:4x4x8"
    spec = MachineSpec.parse("torus:4x4x8", "largest-free")
    assert spec == MachineSpec.parse("torus:4x4x8") and spec.to_config() == "torus:4x4x8"


def test_policy_spec_converts_checks_and_pickles():
    policy = PolicySpec.from_params("bm", {"fn_tor": "0.2", "reservation": "no",
                                           "max_growth": "3"})
    assert (policy.fn_tor, policy.reservation, policy.max_growth) == (0.2, False, 3)
    assert policy.estimates == "requested" and policy.start_delay_s == 0.0
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert policy.replace(fn_tor=0.2) == policy and hash(policy.replace()) == hash(policy)
    with pytest.raises(AttributeError):
        policy.fn_tor = 0.5  # type: ignore[misc]
    with pytest.raises(AttributeError, match="policy fcfs has no parameter 'fn_tor'"):
        _ = PolicySpec("fcfs").fn_tor
    with pytest.raises(SpecError, match=r"scheduler fcfs: parameter\(s\) \['fn_tor'\] do not"):
        PolicySpec("fcfs", fn_tor=0.1)
    with pytest.raises(SpecError, match="scheduler 'easy'; expected one of fcfs, backfill"):
        PolicySpec("easy")


@pytest.mark.parametrize(("parameter", "value", "expected"), [
    (Parameter("x", float, 0.0, "", minimum=0.0), "inf", "a finite number >= 0"),
    (Parameter("x", float, 0.0, ""), "nan", "a finite number"),
    (Parameter("x", float, 0.0, ""), 1e400, "a finite number"),
    (Parameter("x", int, 0, "", minimum=1), 2.0, "an integer >= 1"),
    (Parameter("x", int, 0, ""), 2**63, "an integer < 2^63"),
    (Parameter("x", bool, True, ""), "maybe", "true or false"),
    (Parameter("x", bool, True, ""), 1, "true or false"),
    (Parameter("x", str, "a", "", choices=("a", "b")), "c", "'a' or 'b'"),
    (Parameter("x", float, 1.0, "", minimum=0.0, exclusive_minimum=True), 0, "a finite number > 0"),
])
def test_parameters_refuse_values_outside_their_range(parameter, value, expected):
    with pytest.raises(SpecError, match=f"x={value!r}; expected {expected}".replace("^", r"\^")
                       .replace("(", r"\(").replace(")", r"\)")):
        parameter.convert(value)


def test_parameters_convert_command_line_strings():
    assert Parameter("x", float, 0.0, "").convert("1") == 1.0
    assert Parameter("x", int, 0, "").convert("7") == 7
    assert Parameter("x", bool, False, "").convert("true") is True
    assert Parameter("x", float, None, "", optional=True).convert("null") is None
    assert np.isclose(Parameter("x", float, 0.0, "").convert(np.float64(0.5)), 0.5)


def test_outputs_page_is_current_and_covers_every_column(tmp_path):
    from simcore.report.listing import outputs_markdown
    from simcore.report.tables import aggregate
    from simcore.sweep.store import JOBS_SCHEMA, SUMMARY_SCHEMA, read_summaries
    from tests.test_tables import build_store

    page = (ROOT / "docs/outputs.md").read_text()
    assert page == outputs_markdown(), "regenerate: simcore list columns --markdown"
    sections = dict.fromkeys(s.split("\n", 1)[0] for s in page.split("\n## ")[1:])

    def documented(section: str) -> set[str]:
        body = page.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        return {line.split("`")[1] for line in body.splitlines() if line.startswith("| `")}

    assert set(SUMMARY_SCHEMA.names) <= documented("summary.parquet")
    assert set(JOBS_SCHEMA.names) <= documented("jobs.parquet")
    tables = aggregate(read_summaries(build_store(tmp_path)))
    for name, table in tables.items():
        assert f"tables/{name}" in sections
        assert set(table.columns) == documented(f"tables/{name}"), name


def test_configuration_page_is_current_and_names_every_key(tmp_path):
    import re
    import subprocess
    import sys

    from simcore.policy import all_parameters
    from simcore.report.configuration import config_markdown
    from simcore.sweep.config import read_config, validate
    from simcore.sweep.experiments import plan

    page = (ROOT / "docs/configuration.md").read_text()
    assert page == config_markdown(), \
        "regenerate: simcore list config --markdown > docs/configuration.md"
    out = subprocess.run([sys.executable, "-m", "simcore", "list", "config", "--markdown"],
                         capture_output=True, text=True, check=True).stdout
    assert out == page
    full = schema(SCHEMA)
    headings = set(re.findall(r"^#+ `([^`]+)`$", page, re.M))
    experiment = full["properties"]["experiments"]["additionalProperties"]["properties"]
    assert set(full["properties"]) <= headings
    assert set(experiment) <= headings
    rows = set(re.findall(r"^\| `([^`]+)`", page, re.M))
    options = {p.name for row in ALLOCATORS.values() for p in row.options}
    model_parameters = {p.name for row in MODELS.values() for p in row.parameters}
    for names in (transforms(), SCHEDULERS, ALLOCATORS, KINDS, all_parameters(), options,
                  model_parameters):
        assert set(names) <= rows
    assert set(MODELS) <= headings
    # the opening example is a complete configuration: it loads, validates and plans
    example = tmp_path / "example.yaml"
    example.write_text(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    config = read_config(example)
    validate(config, SCHEMA)
    assert {s.experiment for s in plan(config)} == set(config["experiments"])


def test_configuration_page_follows_the_schema(tmp_path, monkeypatch):
    """A key the schema gains, a grid that takes policy parameters and seeds given as a
    mapping all reach the page without a change to its generator."""
    import yaml

    import simcore.sweep.config
    from simcore.report.configuration import config_markdown

    document = yaml.safe_load(SCHEMA.read_text())
    document["properties"]["report"] = {"type": "object", "description": "what to report",
                                        "properties": {"figures": {"type": "boolean"}}}
    experiment = document["properties"]["experiments"]["additionalProperties"]
    experiment["properties"]["seeds"] = {"oneOf": [
        {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
        {"type": "object", "properties": {"first": {"type": "integer", "minimum": 0},
                                          "count": {"type": "integer", "minimum": 1}}}]}
    experiment["properties"]["repeat"] = {"type": "integer", "description": "repeat runs"}
    changed = tmp_path / "schema.yaml"
    changed.write_text(yaml.safe_dump(document, sort_keys=False))
    original = simcore.sweep.config.schema

    def widened(path):
        filled = original(path)
        filled["$defs"]["grid"]["properties"]["fn_tor"] = {"type": "array"}
        filled["$defs"]["grid"]["properties"]["dilation"] = {"type": "array"}
        return filled

    monkeypatch.setattr(simcore.sweep.config, "schema", widened)
    page = config_markdown(changed)
    assert "## `report`" in page and "`report.figures`" in page and "### `repeat`" in page
    assert ("a non-empty list of integers >= 0 or a mapping {`first`: an integer >= 0, "
            "`count`: an integer >= 1}") in page
    grid = page.split("### `grid`", 1)[1].split("\n### ", 1)[0]
    assert "`fn_tor`" in grid and "`dilation`" in grid


def test_list_json_holds_every_registry():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "simcore", "list", "--json"],
                         capture_output=True, text=True, check=True).stdout
    listed = json.loads(out)
    assert [m["kind"] for m in listed["machines"]] == list(KINDS)
    assert {s["name"]: [p["name"] for p in s["parameters"]] for s in listed["schedulers"]} == \
        {name: list(row.parameter_names) for name, row in SCHEDULERS.items()}
    assert {t["name"] for t in listed["traces"]} >= {"SDSC-SP2-1998-4.2-cln",
                                                      "NASA-iPSC-1993-3.1-cln"}
    assert "bgl" in listed["machines"][-1]["described"]
