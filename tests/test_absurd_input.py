"""Absurd input is refused precisely: exit status 2, one line on stderr naming the file and
line, key or argument and what was expected, and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.base.errors import ConfigError, SpecError, SWFValueError, TraceError
from simcore.base.jsontext import json_text
from simcore.base.patterns import NAME
from simcore.base.yamlfiles import parse_yaml
from simcore.cli.main import main
from simcore.jobs.swf import MAX_TIME_S, read_swf
from simcore.machines.bgl.wiring import load_wiring
from simcore.machines.slurm.menu import load_menu
from simcore.report.reproduction import load_published
from simcore.sweep import limits
from simcore.sweep.config import read_config, validate
from simcore.sweep.experiments import plan
from simcore.sweep.planning import SCHEMA
from simcore.workload.synthetic import SyntheticSpec
from simcore.workload.traces import load_catalogue

ROOT = Path(__file__).resolve().parents[1]
LINE = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1"


def swf(tmp_path: Path, *lines: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text("; MaxProcs: 64\n" + "\n".join(lines) + "\n")
    return path


def job(number: int, submit: str = "0", run: str = "100", wait: str = "0") -> str:
    return f"{number} {submit} {wait} {run} 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1"


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run `simcore argv` in this process; it must exit 2 with one line on stderr and
    nothing on stdout. Returns that line."""
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("simcore: error: ") and err.count("\n") == 1, err
    return err


def small_config() -> dict:
    return yaml.safe_load((ROOT / "config/test/small.yaml").read_text())


# --- SWF files: times beyond the bound, repeated job numbers, nothing left -------------

@pytest.mark.parametrize(("field", "line"), [
    ("submit_time", job(2, submit="1e308")),
    ("run_time", job(2, run="9223372036854775807")),
    ("wait_time", job(2, wait=str(int(MAX_TIME_S) + 1))),
])
def test_times_beyond_the_bound_are_refused_with_the_line(tmp_path, capsys, field, line):
    path = swf(tmp_path, job(1), line)
    with pytest.raises(SWFValueError, match=rf"t\.swf:3: field \d+ \({field}\) is .* beyond"):
        read_swf(path)
    err = refused(capsys, "run", "--workload", str(path), "--machine", "flat:64",
                  "--scheduler", "fcfs", "--json")
    assert f"{path}:3: field" in err and "expected a time of at most 1e+09 s" in err


def test_times_up_to_the_bound_are_read(tmp_path):
    table = read_swf(swf(tmp_path, job(1), job(2, submit=f"{MAX_TIME_S:.0f}")))
    assert table.column("submit_time").to_pylist() == [0.0, MAX_TIME_S]


def test_repeated_job_number_is_refused_with_both_lines(tmp_path, capsys):
    path = swf(tmp_path, job(7), job(8), job(7, submit="10"))
    err = refused(capsys, "swf-info", str(path), "--json")
    assert f"{path}:4: job number 7 already used on line 2; expected each job number once" \
        in err


def test_convert_trace_refuses_a_trace_that_cleaning_empties(tmp_path, capsys):
    path = swf(tmp_path, job(1, run="-1"), job(2, run="0"))
    out = tmp_path / "jobs.parquet"
    err = refused(capsys, "convert-trace", str(path), str(out))
    assert "cleaning removed all 2 (nonpositive_runtime 2)" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [path]


# --- JSON output ---------------------------------------------------------------------

def test_json_output_holds_no_infinity_or_nan():
    text = json_text({"a": float("inf"), "b": [float("-inf"), float("nan")], "c": 1.5})
    assert json.loads(text, parse_constant=lambda name: pytest.fail(name)) == {
        "a": None, "b": [None, None], "c": 1.5}


# --- command-line arguments ----------------------------------------------------------

@pytest.mark.parametrize("seed", ["-1", "x", "1.5", str(2**63)])
def test_synthesize_refuses_a_bad_seed(tmp_path, capsys, seed):
    out = tmp_path / "w.parquet"
    err = refused(capsys, "synthesize", "lublin:64", "--jobs", "10", "--seed", seed,
                  "--out", str(out))
    assert f"--seed: seed={seed!r}; expected an integer >= 0" in err
    assert not out.exists()


@pytest.mark.parametrize(("seeds", "out", "expected"), [
    (["1", "2"], "w.parquet", "several seeds need '{seed}' in the path"),
    (["1", "1"], "seed={seed}/w.parquet", "--seed: [1, 1] repeats a seed"),
])
def test_synthesize_refuses_seeds_without_one_file_each(tmp_path, capsys, seeds, out,
                                                        expected):
    flags = [arg for seed in seeds for arg in ("--seed", seed)]
    err = refused(capsys, "synthesize", "lublin:64", "--jobs", "10", *flags,
                  "--out", str(tmp_path / out))
    assert expected in err
    assert not any(tmp_path.iterdir()), "nothing is written"


@pytest.mark.parametrize(("flags", "expected"), [
    (["--seeds", "3-1"], "--seeds '3-1': '3-1': expected SEED or FIRST-LAST with 0 <= FIRST"),
    (["--seeds", "1-x"], "--seeds '1-x': '1-x': expected SEED or FIRST-LAST"),
    (["--seeds", str(2**63)], f"--seeds '{2**63}': seed={2**63}; expected an integer >= 0"),
    (["--seeds", "1-2", "--seed", "3"], "expected --seed with --out, or --seeds with --samples"),
    (["--seeds", "1-2", "--out", "w.parquet"],
     "expected --seed with --out, or --seeds with --samples"),
    (["--seeds", "1-2", "--samples", "w.parquet"], "is a file; expected a directory"),
])
def test_synthesize_refuses_bad_seed_ranges(tmp_path, capsys, flags, expected):
    (tmp_path / "w.parquet").write_bytes(b"not a directory")
    flags = [str(tmp_path / f) if f.endswith("parquet") else f for f in flags]
    if "--samples" not in flags and "--out" not in flags:
        flags += ["--samples", str(tmp_path / "samples")]
    err = refused(capsys, "synthesize", "lublin:64", "--jobs", "10", *flags)
    assert expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.parquet"], "nothing is written"


def test_synthesize_writes_seed_ranges_to_sample_files(tmp_path):
    from simcore.sweep.samples import listed, sample_name

    spec = SyntheticSpec.create("lublin", {"max_procs": 64, "jobs": 10})
    assert main(["synthesize", "lublin:64", "--jobs", "10", "--seeds", "1-3,100000",
                 "--samples", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted({sample_name(spec, s) for s in (1, 100_000)})
    assert sorted(listed(tmp_path / sample_name(spec, 1))) == [1, 2, 3]


def test_synthesize_writes_one_file_per_seed(tmp_path):
    out = tmp_path / "samples" / "seed={seed}" / "jobs.parquet"
    assert main(["synthesize", "lublin:64", "--jobs", "10", "--seed", "1", "--seed", "2",
                 "--out", str(out)]) == 0
    one, two = (tmp_path / "samples" / f"seed={s}" / "jobs.parquet" for s in (1, 2))
    alone = tmp_path / "alone.parquet"
    assert main(["synthesize", "lublin:64", "--jobs", "10", "--seed", "2",
                 "--out", str(alone)]) == 0
    assert two.read_bytes() == alone.read_bytes(), "a seed's sample is the same made alone"
    assert one.read_bytes() != two.read_bytes()


def test_reproduction_refuses_published_numbers_that_are_not_a_mapping(tmp_path, capsys):
    published = tmp_path / "published.yaml"
    published.write_text("- a\n- b\n")
    store = tmp_path / "store"
    store.mkdir()
    out = tmp_path / "r.md"
    err = refused(capsys, "reproduction", "--published", str(published), "--store",
                  str(store), "--out", str(out))
    assert f"{published}: expected a mapping 'seeds'" in err and not out.exists()


@pytest.mark.parametrize("text", ["seeds: {a: 1}\n", "seeds: {a: {title: t, did: d, ours: o, "
                                  "experiments: [], claims: [1]}}\n",
                                  "seeds: {a: {title: t, did: d, ours: o, experiments: [], "
                                  "claims: {x: 1}}}\n"])
def test_published_entries_of_the_wrong_kind_name_their_key(tmp_path, text):
    path = tmp_path / "published.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"seeds\.a.*expected a"):
        load_published(path)


@pytest.mark.parametrize("text", ["- a\n", "traces: [1]\n", "just text\n"])
def test_a_catalogue_that_is_not_a_mapping_is_refused(tmp_path, capsys, text):
    catalogue = tmp_path / "traces.yaml"
    catalogue.write_text(text)
    with pytest.raises(TraceError, match="key 'traces' must map trace names"):
        load_catalogue(catalogue)
    err = refused(capsys, "fetch-trace", "X", "--catalogue", str(catalogue), "--out",
                  str(tmp_path / "x.swf.gz"))
    assert str(catalogue) in err


def test_reproduction_and_tables_refuse_a_missing_store(tmp_path, capsys):
    out = tmp_path / "r.md"
    missing = tmp_path / "missing"
    assert "no such directory" in refused(capsys, "reproduction", "--store", str(missing),
                                          "--out", str(out))
    assert "no such directory" in refused(capsys, "tables", "--store", str(missing),
                                          "--out", str(tmp_path / "tables"))
    assert list(tmp_path.iterdir()) == []


def test_archive_pack_refuses_a_missing_results_directory_and_a_path_as_name(tmp_path,
                                                                            capsys):
    out = tmp_path / "a.tar.xz"
    err = refused(capsys, "archive", "pack", "--results", str(tmp_path / "missing"),
                  "--out", str(out))
    assert "no store shards or no tables/" in err
    (tmp_path / "ds" / "tables").mkdir(parents=True)
    err = refused(capsys, "archive", "pack", "--results", str(tmp_path / "ds"), "--out",
                  str(out), "--name", "../evil")
    assert "name '../evil': expected a dataset name" in err
    assert not out.exists() and not (tmp_path / "evil").exists()


def test_menus_candidates_refuses_a_prefix_that_leaves_out(tmp_path, capsys):
    out = tmp_path / "deep" / "er"
    err = refused(capsys, "menus", "candidates", "--workload", "lublin:64", "--jobs", "20",
                  "--torus", "4x4x8", "--prefix", "../../x", "--out", str(out))
    assert "--prefix '../../x'" in err and list(tmp_path.iterdir()) == []


# --- sizes refused on an estimate, before any work ----------------------------------

@pytest.mark.parametrize("command", [
    ("run", "--workload", "lublin:64", "--jobs", "1000000000000", "--seed", "1",
     "--machine", "flat:64", "--scheduler", "fcfs"),
    ("synthesize", "lublin:64", "--jobs", "1000000000000", "--seed", "1"),
    ("menus", "candidates", "--workload", "lublin:64", "--jobs", "1000000000000",
     "--torus", "4x4x8", "--prefix", "m"),
])
def test_a_trillion_jobs_are_refused_on_the_estimate(tmp_path, capsys, command):
    out = ("--out", str(tmp_path / "out"))
    err = refused(capsys, *command, *(out if command[0] != "run" else ()))
    assert "a run of 1,000,000,000,000 jobs needs about 953,674.3 GiB" in err
    assert "--max-memory-gib" in err and list(tmp_path.iterdir()) == []


def test_replication_counts_in_the_estimate_and_the_flag_raises_the_limit(capsys):
    args = ("run", "--workload", "lublin:64", "--jobs", "1000", "--seed", "1", "--machine",
            "flat:64", "--scheduler", "fcfs", "--replication", "100000000")
    err = refused(capsys, *args)
    assert "--jobs x --replication 100000000: a run of 100,000,000,000 jobs" in err
    err = refused(capsys, *args[:-2], "--max-memory-gib", "0.0001")
    assert "above the limit of 0.0001 GiB" in err


@pytest.mark.parametrize(("command", "value"), [
    (("synthesize", "lublin:64", "--jobs", "10", "--seed", "1"), "nan"),
    (("synthesize", "lublin:64", "--jobs", "10", "--seed", "1"), "inf"),
    (("menus", "candidates", "--workload", "lublin:64", "--jobs", "10", "--torus", "4x4x8",
      "--prefix", "m"), "nan"),
    (("run", "--workload", "lublin:64", "--jobs", "10", "--seed", "1", "--machine",
      "flat:64", "--scheduler", "fcfs"), "-1"),
])
def test_a_memory_limit_that_is_not_a_positive_number_is_refused(tmp_path, capsys, command,
                                                                  value):
    out = ("--out", str(tmp_path / "out")) if command[0] != "run" else ()
    err = refused(capsys, *command, *out, "--max-memory-gib", value)
    assert f"--max-memory-gib {float(value)}; expected a finite number above 0" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("option", "value"), [("--at", "nan"), ("--at", "nanh"),
                                               ("--at", "90"), ("--from", "2 days"),
                                               ("--until", "infmin")])
def test_show_refuses_a_time_that_is_not_a_number_with_its_unit(tmp_path, capsys, option,
                                                                 value):
    err = refused(capsys, "show", str(tmp_path), option, value)
    assert err == (f"simcore: error: {option} {value}: expected a finite time with its unit "
                   "(s, min, h), as the time axes show it: e.g. 26h\n")


def test_a_config_with_a_million_seeds_is_refused_before_it_is_read_through(monkeypatch):
    config = small_config()
    config["experiments"]["small"]["seeds"] = list(range(1_000_000))

    def never(*args, **kwargs):
        raise AssertionError("the schema read the config")

    monkeypatch.setattr("jsonschema.Draft202012Validator", never)
    with pytest.raises(ConfigError, match=r"limits\.max_runs: the experiments hold up to "
                                          r"16,000,004 runs, above the limit of 1,000,000"):
        validate(config, SCHEMA)
    config["limits"] = {"max_runs": 20_000_000}
    limits.check_runs(config)  # raised: accepted


def test_a_config_found_valid_is_remembered_by_its_content_and_its_schema(monkeypatch,
                                                                          tmp_path):
    """Planning checks a large configuration on every call: a valid one is not read
    through again, unless its content or the schema file's changed."""
    config = small_config()
    validate(config, SCHEMA)

    def never(*args, **kwargs):
        raise AssertionError("read through again")

    monkeypatch.setattr("jsonschema.Draft202012Validator", never)
    validate(config, SCHEMA)
    edited = tmp_path / "schema.yaml"
    edited.write_text(Path(SCHEMA).read_text() + "\n# edited\n")
    with pytest.raises(AssertionError, match="read through again"):
        validate(config, edited)
    config["experiments"]["small"]["seeds"] = [1, 2, 3]
    with pytest.raises(AssertionError, match="read through again"):
        validate(config, SCHEMA)


def test_a_trillion_jobs_in_a_config_are_refused_on_the_estimate():
    config = small_config()
    config["workloads"]["lublin16"]["synthetic"]["jobs"] = 10**12
    validate(config, SCHEMA)  # the schema accepts it
    with pytest.raises(ConfigError, match=r"limits\.max_job_runs: .* the largest run "
                                          r"1,000,000,000,000 jobs \(about 953,674\.3 GiB\)"):
        plan(config)
    config["limits"] = {"max_job_runs": 10**15}
    with pytest.raises(ConfigError, match=r"limits\.max_run_memory_gib: .*953,674\.3 GiB"):
        plan(config)


def test_first_jobs_and_catalogued_sizes_enter_the_estimate():
    config = small_config()
    config["workloads"]["trace"] = {"trace": "SDSC-SP2-1998-4.2-cln"}
    config["experiments"]["small"]["workloads"] = ["trace"]
    config["experiments"]["small"]["transforms"] = {"first_jobs": 1000}
    config["limits"] = {"max_run_memory_gib": 0.0009}  # 1000 jobs: 0.00095 GiB
    catalogue = load_catalogue(ROOT / "config/traces.yaml")  # SDSC-SP2: 59,715 jobs
    with pytest.raises(ConfigError, match="the largest run 1,000 jobs"):
        plan(config, catalogue)
    del config["experiments"]["small"]["transforms"]
    config["limits"] = {"max_run_memory_gib": 0.05}
    with pytest.raises(ConfigError, match="the largest run 59,715 jobs"):
        plan(config, catalogue)


@pytest.mark.parametrize("value", [0, -1, "many", True, [1]])
def test_limits_of_the_wrong_kind_are_refused(value):
    with pytest.raises(ConfigError, match=r"limits\.max_runs: .*expected a number > 0"):
        limits.Limits.from_config({"max_runs": value})
    with pytest.raises(ConfigError, match=r"limits\.runs: unknown limit"):
        limits.Limits.from_config({"runs": 1})


LISTS = [("small", ("policies",)), ("small", ("workloads",)), ("small", ("machines",)),
         ("small", ("seeds",)), ("small", ("grid", "offered_load")),
         ("shapes", ("grid", "p_fat"))]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(LISTS), st.data())
def test_an_entry_given_twice_in_an_experiment_list_is_refused(where, data):
    experiment, path = where
    config = small_config()
    holder = config["experiments"][experiment]
    for key in path[:-1]:
        holder = holder[key]
    values = holder[path[-1]]
    copied = data.draw(st.sampled_from(values))
    at = data.draw(st.integers(values.index(copied) + 1, len(values)))
    values.insert(at, copied)
    key = ".".join(("experiments", experiment, *path))
    with pytest.raises(ConfigError) as caught:
        plan(config)
    message = str(caught.value)  # a grid value is named as converted (p_fat 0 as 0.0)
    assert message.startswith(f"{key}[{at}]: ")
    assert message.endswith(f" given again (first as [{values.index(copied)}]); expected "
                            "each value once")


def test_the_papers_configuration_is_within_the_default_limits():
    config = read_config(ROOT / "config/papers.yaml")
    catalogue = load_catalogue(ROOT / "config/traces.yaml")
    assert len(plan(config, catalogue)) > 300


# --- names matched whole ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["small\n", "a\nb", "../x", ".hidden", "", "x" * 101])
def test_names_are_matched_whole(name):
    assert not NAME.match(name)
    config = small_config()
    config["experiments"][name] = config["experiments"].pop("small")
    with pytest.raises(ConfigError, match="experiments"):
        validate(config, SCHEMA)
    with pytest.raises(ConfigError, match="experiments"):
        plan(config)


def test_a_dataset_name_is_bounded_in_length(tmp_path, capsys):
    config = small_config()
    config["dataset"] = "d" * 300  # a directory and an archive name: too long for a file
    with pytest.raises(ConfigError, match=r"dataset: 'd{300}' does not match"):
        validate(config, SCHEMA)
    config["dataset"] = "d" * 100
    validate(config, SCHEMA)
    err = refused(capsys, "menus", "candidates", "--workload", "lublin:64", "--jobs", "10",
                  "--torus", "4x4x8", "--prefix", "m" * 101, "--out", str(tmp_path / "m"))
    assert "at most 100 characters" in err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("key", "value"), [("dataset", "test\n"),
                                            ("machines", {"torus": "torus:2x2x4\n"})])
def test_values_ending_in_a_newline_fail_the_schema(key, value):
    config = small_config()
    config[key] = {**config[key], **value} if isinstance(value, dict) else value
    with pytest.raises(ConfigError, match=key):
        validate(config, SCHEMA)


def test_a_machine_argument_ending_in_a_newline_is_refused():
    from simcore.machines.cubes.grammar import parse_argument

    with pytest.raises(SpecError):
        parse_argument("4x2x2:2\n")


# --- YAML: a key given twice --------------------------------------------------------

DUPLICATED = "a: 1\nb:\n  c: 2\n  c: 3\n"


def test_a_repeated_key_names_the_file_and_both_lines():
    with pytest.raises(ConfigError) as caught:
        parse_yaml(DUPLICATED, "f.yaml", ConfigError)
    assert str(caught.value) == ("f.yaml:4: key 'c' given twice (first on line 3); expected "
                                 "each key once in a mapping")
    assert parse_yaml("x: &x {a: 1}\ny:\n  <<: *x\n  a: 2\n", "f", ConfigError) == {
        "x": {"a": 1}, "y": {"a": 2}}  # a merge key may be overridden


def test_every_yaml_input_refuses_a_repeated_key(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text((ROOT / "config/test/small.yaml").read_text()
                      + "\ndataset: other\n")
    with pytest.raises(ConfigError, match=r"config\.yaml:\d+: key 'dataset' given twice"):
        read_config(config)
    refused(capsys, "plan", "--configfile", str(config))
    catalogue = tmp_path / "traces.yaml"
    catalogue.write_text((ROOT / "config/traces.yaml").read_text() + "traces: {}\n")
    with pytest.raises(TraceError, match="key 'traces' given twice"):
        load_catalogue(catalogue)
    published = tmp_path / "published.yaml"
    published.write_text((ROOT / "config/published.yaml").read_text() + "seeds: {}\n")
    with pytest.raises(ConfigError, match="key 'seeds' given twice"):
        load_published(published)
    wiring = tmp_path / "bgl.yaml"
    wiring.write_text((ROOT / "config/machines/bgl.yaml").read_text() + "name: x\n")
    with pytest.raises(SpecError, match="key 'name' given twice"):
        load_wiring(wiring)
    menu = tmp_path / "menu.yaml"
    menu.write_text("- topology: t\n  topology: u\n  torus3d: {toruses: []}\n")
    with pytest.raises(SpecError, match="key 'topology' given twice"):
        load_menu(str(menu))


def test_the_repository_yaml_files_hold_no_repeated_key():
    for path in [*ROOT.glob("config/**/*.yaml"), *ROOT.glob("workflow/**/*.yaml")]:
        parse_yaml(path.read_text(), str(path), ConfigError)


def test_snakemake_refuses_a_config_file_with_a_repeated_key(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text((ROOT / "config/test/small.yaml").read_text() + "\ndataset: other\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-s",
                             str(ROOT / "Snakefile"), "--configfile", str(config),
                             "--directory", str(tmp_path)], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "key 'dataset' given twice" in result.stdout + result.stderr


def test_leung_table1_refuses_a_billion_seeds_on_the_estimate(capsys):
    err = refused(capsys, "leung2002", "table1", "--seeds", "1000000000")
    assert "30,000,000,000 runs, above the limit of 1,000,000" in err and "--max-runs" in err


def test_bench_refuses_no_repeat_before_any_work(capsys):
    assert "--repeat 0; expected at least 1" in refused(capsys, "bench", "--repeat", "0")


# --- The other commands, tried once more ---------------------------------------------


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path, capsys):
    trace = swf(tmp_path, job(1), job(2, submit="10"))
    text = trace.read_bytes()
    assert "reads; expected another file name" in refused(
        capsys, "convert-trace", str(trace), str(trace))
    assert trace.read_bytes() == text
    workload = tmp_path / "w.parquet"
    assert main(["synthesize", "lublin:16", "--jobs", "20", "--seed", "1",
                 "--out", str(workload)]) == 0
    capsys.readouterr()
    data = workload.read_bytes()
    assert "--jobs-out" in refused(capsys, "run", "--workload", str(workload), "--machine",
                                   "flat:16", "--scheduler", "fcfs", "--jobs-out",
                                   str(tmp_path / "." / "w.parquet"))
    assert workload.read_bytes() == data


def shard_json(**changes: object) -> str:
    values = json.loads(plan(small_config())[0].to_json())
    return json.dumps({**values, **changes})


@pytest.mark.parametrize("changes, expected", [
    ({"dataset": "../../elsewhere"}, "dataset '../../elsewhere'; expected a name"),
    ({"policy": "p" * 101}, "policy 'ppp"),
    ({"runs": []}, "no runs; expected at least one"),
    ({"runs": [{"seed": 1, "transforms": {}}, {"seed": 1, "transforms": {}}]},
     "runs[1] given again (first as [0])"),
    ({"runs": [{"seed": 1.5, "transforms": {}}]}, "seed=1.5; expected an integer"),
])
def test_a_shard_specification_names_no_path_and_each_run_once(tmp_path, capsys, changes,
                                                                expected):
    err = refused(capsys, "sweep-shard", "--spec", shard_json(**changes), "--results",
                  str(tmp_path / "results"))
    assert "not a shard specification" in err and expected in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("option, value", [
    ("--cleaning", '{"oversize": "drop", "oversize": "reject"}'),
    ("--spec", '{"model": "lublin", "max_procs": 16, "jobs": 5, "jobs": 6}'),
])
def test_a_json_argument_with_a_key_given_twice_is_refused(tmp_path, capsys, option, value):
    out = tmp_path / "out.parquet"
    argv = (["convert-trace", str(swf(tmp_path, job(1))), str(out), option, value]
            if option == "--cleaning" else ["synthesize", option, value, "--seed", "1",
                                            "--out", str(out)])
    assert "given twice" in refused(capsys, *argv)
    assert not out.exists()


def test_a_summary_file_given_twice_is_refused(tmp_path, capsys):
    summary = tmp_path / "summary.parquet"
    summary.write_bytes(b"")
    err = refused(capsys, "tables", "--summaries", str(summary), str(tmp_path / "." /
                                                                    "summary.parquet"),
                  "--out", str(tmp_path / "tables"))
    assert "given twice" in err and not (tmp_path / "tables").exists()


@pytest.mark.parametrize("argv", [
    ["bgl", "links", "--dim", "x", "--topology", "mesh", "--midplanes", "1,2,1"],
    ["leung2002", "table1", "--seeds", "1", "--dilation", "0", "0.5", "0"],
])
def test_a_position_or_dilation_given_twice_is_refused(capsys, argv):
    assert "twice; expected each" in refused(capsys, *argv)


def test_a_menu_refuses_a_torus_beyond_the_bound(tmp_path):
    huge = tmp_path / "huge.yaml"
    huge.write_text("- topology: t\n  torus3d:\n    toruses:\n      - name: t\n        dims: "
                    "{x: 100000, y: 100000, z: 100000}\n        nodes: n[0-1]\n")
    with pytest.raises(SpecError, match=r"1,000,000,000,000,000 nodes; expected at most"):
        load_menu(str(huge))


@pytest.mark.parametrize("make", ["device", "fifo"])
@pytest.mark.parametrize("argv", [
    ["swf-info", "{f}"],
    ["convert-trace", "{f}", "{tmp}/out.parquet", "--expect-sha256", "00"],
    ["plan", "--configfile", "{f}"],
    ["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "torus:2x2x4",
     "--scheduler", "fcfs", "--machine-param", "failure_trace={f}"],
    ["tables", "--summaries", "{f}", "--out", "{tmp}/tables"],
])
def test_a_device_or_fifo_given_as_a_file_is_refused_not_read(tmp_path, capsys, make, argv):
    import os

    path = "/dev/zero" if make == "device" else str(tmp_path / "fifo")
    if make == "fifo":
        os.mkfifo(path)
    err = refused(capsys, *(a.format(f=path, tmp=tmp_path) for a in argv))
    assert f"{path}: " in err and "not a regular file" in err
    assert not (tmp_path / "out.parquet").exists()


def test_a_failure_trace_that_is_not_utf8_is_refused(tmp_path, capsys):
    trace = tmp_path / "outages.txt"
    trace.write_bytes(b"\xff 1 1\n")
    err = refused(capsys, "run", "--workload", "lublin:16", "--jobs", "20", "--machine",
                  "torus:2x2x4", "--scheduler", "fcfs", "--machine-param",
                  f"failure_trace={trace}")
    assert "not UTF-8 text (byte 0)" in err


def test_inserted_jobs_count_in_the_memory_estimate(capsys):
    err = refused(capsys, "run", "--workload", "lublin:16", "--jobs", "50", "--machine",
                  "flat:16", "--scheduler", "fcfs", "--insert-per-h", "1e12")
    assert "--jobs with --insert-per-h: a run of" in err and "above the limit" in err


def test_a_runtime_scale_beyond_the_bound_of_times_is_refused(capsys):
    err = refused(capsys, "run", "--workload", "lublin:16", "--jobs", "50", "--machine",
                  "flat:16", "--scheduler", "fcfs", "--runtime-scale", "1e300")
    assert "runtime_scale=1e+300 makes run times up to" in err and "at most 1e+09 s" in err


@pytest.mark.parametrize("argv, expected", [
    (["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "flat:16", "--scheduler",
      "fcfs", "--cleaning", "{{}}"], "--cleaning: applies to an SWF trace"),
    (["synthesize", "lublin:16", "--jobs", "50", "--param", "jobs=7", "--seed", "1", "--out",
      "{tmp}/s.parquet"], "--param jobs=7: jobs is set by 'lublin:16' or --jobs already"),
    (["reproduction", "--store", "{tmp}", "--copy-figures", "{tmp}/none", "--out",
      "{tmp}/r.md"], "--copy-figures {tmp}/none: no such directory"),
    (["sweep-shard", "--spec", "{shard}", "--workers", "0", "--results", "{tmp}/r"],
     "--workers 0; expected at least 1"),
    (["sweep-shard", "--spec", "{shard}", "--dask", '{{"backend": "nope"}}', "--results",
      "{tmp}/r"], "sweep.dask.backend: 'nope'"),
    (["resimulate", "--configfile", "config/test/small.yaml", "--workers", "0", "--results",
      "{tmp}/r"], "--workers 0; expected at least 1"),
    (["fetch-trace", "NASA-iPSC-1993-3.1-cln", "--mirror", "{tmp}/file", "--out",
      "{tmp}/t.swf.gz"], "--mirror {tmp}/file: no such directory"),
    (["plan", "--configfile", "config/test/small.yaml", "--timing", "--benchmarks-root",
      "{tmp}/none"], "--benchmarks-root {tmp}/none: no such directory"),
    (["warm", "--pair", "any-free", "fcfs", "--flag", "{tmp}"], "is a directory"),
])
def test_a_flag_that_would_be_ignored_or_checked_too_late_is_refused_first(
        tmp_path, capsys, monkeypatch, argv, expected):
    monkeypatch.chdir(ROOT)
    (tmp_path / "file").write_text("x")
    values = {"tmp": tmp_path, "shard": shard_json()}
    err = refused(capsys, *(a.format(**values) for a in argv))
    assert expected.format(**values) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_tables_are_not_written_into_the_store(tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    for out in (store, store / "tables"):
        assert "inside the store" in refused(capsys, "tables", "--store", str(store), "--out",
                                             str(out))
    assert list(store.iterdir()) == []


def test_the_sigterm_handler_is_the_commands_only_while_it_runs(capsys):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    assert main(["list", "machines"]) == 0
    capsys.readouterr()
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("argv", [
    ["convert-trace", str(ROOT / "tests/data/traces/NASA-iPSC-1993-3.1-cln.swf.gz"),
     "{out}"],
    ["synthesize", "lublin:16", "--jobs", "20", "--seed", "1", "--out", "{out}"],
    ["fetch-trace", "NASA-iPSC-1993-3.1-cln", "--mirror", str(ROOT / "tests/data/traces"),
     "--out", "{out}"],
    ["run", "--workload", "lublin:16", "--jobs", "20", "--machine", "flat:16", "--scheduler",
     "fcfs", "--jobs-out", "{out}"],
])
def test_an_output_onto_a_directory_names_the_path_given(tmp_path, capsys, argv):
    """Not the temporary file the output is written to first."""
    out = tmp_path / "outdir"
    out.mkdir()
    err = refused(capsys, *(a.format(out=out) for a in argv))
    assert err.endswith(f" {out}: is a directory; expected a file name\n"), err
    assert [p.name for p in tmp_path.iterdir()] == ["outdir"] and not any(out.iterdir())


def test_a_directory_given_as_an_input_file_says_a_file_is_expected(tmp_path, capsys):
    assert refused(capsys, "swf-info", str(tmp_path)) == (
        f"simcore: error: {tmp_path}: is a directory; expected a file\n")


def test_a_directory_output_onto_a_file_names_the_path_given(tmp_path):
    from simcore.base.atomic import atomic_directory

    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file; expected a directory name"
                       ) as caught, atomic_directory(target):
        pass
    assert caught.value.filename == str(target)
    assert [p.name for p in tmp_path.iterdir()] == ["file"]
