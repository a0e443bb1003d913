"""YAML read safely before anything reads it: a bomb of aliases, deep nesting, keys that
are not strings and YAML 1.1 surprises are refused with the file and line, by simcore and
by the workflow (which also refuses a file Snakemake's own loader reads otherwise). The
workflow also takes Snakemake's advice for a locked directory as given (`--unlock`, no
`--cores`)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simcore.base.errors import ConfigError
from simcore.base.yamlfiles import MAX_DEPTH, parse_yaml
from simcore.sweep.config import read_config

ROOT = Path(__file__).resolve().parents[1]
#: Nine levels of nine aliases each: 9^9 (387 million) values once expanded.
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi",
                                                                strict=True))
REFUSED_BOMB = "aliases that repeat more than 100,000 nodes"


def limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run with 2 GiB of address space and a minute at most."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=limit, timeout=60,
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("text", "found"), [
    ("seeds: [010]", "f.yaml:1: '010' is an octal number to YAML 1.1"),
    ("seeds: [1:20]", "f.yaml:1: '1:20' is a sexagesimal number"),
    ("a:\n  b: 0b101", "f.yaml:2: '0b101' is a binary number"),
    ("max_runs: 1_000", "f.yaml:1: '1_000' is a number with '_'"),
    ("a: {shuffle: on}", "f.yaml:1: 'on' is a YAML 1.1 boolean"),
    ("policies:\n  1: {scheduler: fcfs}", "f.yaml:2: key '1' is an integer; expected a string"),
    ("~: 1", "f.yaml:1: key '~' is null"),
    ("? [a]\n: 1", "f.yaml:1: key at column 3 is a sequence"),
    ("a: &a [b, *a]", "f.yaml:1: an alias inside the anchor it names"),
    ("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
     f"f.yaml:1: nesting deeper than {MAX_DEPTH}"),
    (BOMB, f"f.yaml:6: {REFUSED_BOMB}"),
])
def test_surprises_and_bombs_are_refused_at_load(text, found):
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "f.yaml", ConfigError)
    assert str(caught.value).startswith(found)


def test_what_every_reader_reads_alike_is_kept():
    text = ("a: &a {x: [1, 2.5, true, 0x1f, .inf]}\nb: {<<: *a, y: '010'}\nc: 1e3\nd: 08\n"
            "e: [*a, *a]\n")
    assert parse_yaml(text, "f", ConfigError) == yaml.safe_load(text)


def test_a_policy_named_by_a_number_names_the_file_and_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text((ROOT / "config/test/small.yaml").read_text()
                      .replace("policies:\n", "policies:\n  1: {scheduler: fcfs}\n", 1))
    with pytest.raises(ConfigError, match=r"config\.yaml:\d+: key '1' is an integer"):
        read_config(config)


def test_the_bomb_is_refused_by_simcore_under_a_memory_limit(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BOMB)
    result = limited([sys.executable, "-m", "simcore", "plan", "--configfile", "bomb.yaml"],
                     tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"simcore: error: bomb.yaml:6: {REFUSED_BOMB}; expected fewer " \
                            "(write the values out, or repeat smaller anchors)\n"


def snakemake(tmp_path: Path, configfile: str, mode: str = "-n"
              ) -> subprocess.CompletedProcess[str]:
    """Snakemake in `mode` (a dry run) on the repository's workflow, in `tmp_path`."""
    (tmp_path / "config").symlink_to(ROOT / "config")
    return limited([sys.executable, "-m", "snakemake", mode, "-s", str(ROOT / "Snakefile"),
                    "--configfile", configfile, "--directory", str(tmp_path)], tmp_path)


def test_the_bomb_is_refused_by_the_workflow_under_a_memory_limit(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BOMB)
    result = snakemake(tmp_path, "bomb.yaml")
    assert result.returncode == 1  # Snakemake's own status for a workflow error
    assert f"bomb.yaml:6: {REFUSED_BOMB}" in result.stdout + result.stderr


def test_the_workflow_refuses_a_file_snakemake_reads_otherwise(tmp_path):
    config = yaml.safe_load((ROOT / "config/test/small.yaml").read_text())
    config["limits"] = {"max_run_memory_gib": 1000.0}
    (tmp_path / "c.json").write_text(json.dumps(config).replace("1000.0", "1e3"))
    result = snakemake(tmp_path, "c.json")
    assert result.returncode == 1
    assert ("configuration: limits.max_run_memory_gib: Snakemake reads 1000.0, simcore '1e3'"
            in result.stdout + result.stderr)


def test_the_workflow_unlocks_without_cores(tmp_path):
    result = snakemake(tmp_path, "config/test/small.yaml", "--unlock")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Unlocked working directory." in result.stdout + result.stderr
