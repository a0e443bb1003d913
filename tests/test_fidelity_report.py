"""The replay-fidelity report (`simcore fidelity --config`, `simcore.report.fidelity`): its
configuration refused precisely, its tables equal to the comparison of each replay, a log
without waits listed, stated values recomputed, and docs/fidelity.md as a run writes it."""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import replace
from pathlib import Path

import pytest

from simcore.base.errors import ConfigError
from simcore.cli.main import main
from simcore.fidelity.compare import FIGURES, compare
from simcore.report.fidelity import FidelityConfig, metric_cells, report_markdown, run_report
from simcore.simulate import simulate
from tests.test_fidelity import JOBS, log, swf_text

ROOT = Path(__file__).resolve().parent.parent
#: The hand-made log of tests/test_fidelity.py, and the same jobs with no wait recorded.
LOGS = {"hand": swf_text(JOBS),
        "nowaits": swf_text([(j, s, -1, r, p, u, q) for j, s, _, r, p, u, q in JOBS])}


def configured(tmp_path: Path, monkeypatch, extra: str = "") -> Path:
    """A catalogue of the two hand-made logs in a mirror, and a report configuration of
    them under FCFS on flat:4, in `tmp_path` (the working directory)."""
    mirror = tmp_path / "mirror"
    mirror.mkdir(parents=True)
    entries = []
    for name, text in LOGS.items():
        data = gzip.compress(text.encode(), mtime=0)
        (mirror / f"{name}.swf.gz").write_bytes(data)
        entries.append(f"  {name}:\n    url: https://example.org/{name}.swf.gz\n"
                       f"    sha256: {hashlib.sha256(data).hexdigest()}\n    jobs: 8\n"
                       "    max_procs: 4\n    machine_size: 4\n")
    (tmp_path / "traces.yaml").write_text("traces:\n" + "".join(entries))
    config = tmp_path / "fidelity.yaml"
    config.write_text(
        "catalogue: traces.yaml\nseed: 0\npolicies:\n  FCFS: {scheduler: fcfs}\n"
        "figures: FCFS\ntraces:\n  hand: {reading: A hand-made log.}\n"
        "  nowaits: {machine: 'flat:4', reading: Its waits are all unknown.}\n"
        "stated:\n  source: a hand computation\n  rows:\n"
        "    - {trace: hand, policy: FCFS, mean_wait_ratio: 0.04, wait_rho: 0.5}\n" + extra)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TORUS_SWEEP_TRACE_DIR", str(mirror))
    return config


def test_the_report_tables_are_the_comparison_of_each_replay(tmp_path, monkeypatch, capsys):
    config = configured(tmp_path, monkeypatch)
    assert main(["fidelity", "--config", str(config), "--out", "docs"]) == 0
    text = (tmp_path / "docs" / "fidelity.md").read_text()
    assert "docs/fidelity.md written" in capsys.readouterr().out
    report = compare(log(), simulate(log(), "flat:4", "fcfs").jobs).report
    assert f"| hand | flat:4 | FCFS | {' | '.join(metric_cells(report['all']))} |" in text
    assert f"| FCFS | second half | {' | '.join(metric_cells(report['second_half']))} |" \
        in text
    assert "| nowaits | flat:4 | no recorded waits |" in text
    assert "Not replayed: none of its 8 jobs records a wait" in text
    assert "- MaxProcs: 4" in text and "A hand-made log." in text
    # stated 0.04 against 200 / 5050 = 0.0396: the same to the printed digit; rho differs
    assert "| hand | FCFS | mean wait ratio | 0.04 | 0.04 |  |" in text
    assert re.search(r"\| hand \| FCFS \| wait rho \| 0\.50 \| \d\.\d\d \| [+-]0\.\d{3} \|",
                     text)
    assert "1 of 2 stated values differ: hand FCFS wait_rho." in text
    assert "Requested run times (field 9) are recorded for 7 of the cleaned jobs" in text
    for name in FIGURES:  # the FCFS replay's figures, for the log replayed only
        assert f"![{name.replace('-', ' ')}](fidelity/hand/{name}.png)" in text
        assert (tmp_path / "docs" / "fidelity" / "hand" / f"{name}.png").is_file()
    assert not (tmp_path / "docs" / "fidelity" / "nowaits").exists()


FACTORS = ("factors:\n  policy: FCFS\n  grids: {capacity: [1.0, 0.5]}\n"
           "  targets: {traces: [hand], mean_wait_ratio: [0.9, 1.1], wait_rho: 0.7, "
           "within_10_min: 0.6}\n")


def test_the_ablation_rows_are_the_comparison_of_each_model(tmp_path, monkeypatch):
    """The hand log's ablation: the textbook row is the FCFS replay, capacity alone is
    fitted over its grid (2 models), and the targets table reads the all-factors row."""
    config = configured(tmp_path, monkeypatch, FACTORS)
    assert main(["fidelity", "--config", str(config), "--out", "docs"]) == 0
    text = (tmp_path / "docs" / "fidelity.md").read_text()
    section = text.split("## Closing the replay gap")[1].split("\n## ")[0]
    report = compare(log(), simulate(log(), "flat:4", "fcfs").jobs).report
    first, second = report["first_half"], report["second_half"]
    cells = [f"{first['mean_wait_ratio']:.2f}", f"{first['wait_rho']:.2f}",
             f"{first['within_10_min']:.1%}", f"{second['mean_wait_ratio']:.2f}"]
    assert f"| hand | textbook | - | 1 | {' | '.join(cells)} |" in section
    assert re.search(r"\| hand \| capacity \| [^|]+ \| 2 \|", section)
    assert "| hand | mean wait ratio | [0.90, 1.10] |" in section
    assert "nowaits" not in section


def test_a_configuration_is_read_whole_and_a_stray_key_refused(tmp_path, monkeypatch):
    config = FidelityConfig.read(configured(tmp_path, monkeypatch))
    assert (list(config.policies), list(config.traces), config.figures) == (
        ["FCFS"], ["hand", "nowaits"], "FCFS")
    stray = configured(tmp_path / "stray", monkeypatch, "colour: red\n")
    with pytest.raises(ConfigError, match=re.escape(f"{stray}: unknown key(s) ['colour']")):
        FidelityConfig.read(stray)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("FCFS: {scheduler: fcfs}", "FCFS: {scheduler: fcfs, fn_tor: 0.1}",
     "policies.FCFS: "),
    ("figures: FCFS", "figures: EASY", "figures: 'EASY' is no policy"),
    ("hand: {reading: A hand-made log.}", "hand: {machine: 'flat:4'}",
     "traces.hand: expected a mapping with a reading"),
    ("policy: FCFS, mean", "policy: EASY, mean", "stated.rows[0]: expected a trace"),
    ("wait_rho: 0.5", "wait_rho: high", "stated.rows[0].wait_rho: 'high'; expected a "
     "number"),
    ("seed: 0", "seed: -1", "seed: -1; expected an integer >= 0"),
    ("  hand: {reading", "  other: {reading", "traces.other: not in the catalogue traces.yaml; "
     "expected one of ['hand', 'nowaits']"),
    ("machine: 'flat:4'", "machine: 'flat:x'", "traces.nowaits.machine: "),
    ("FCFS: {scheduler: fcfs}", "FCFS: {scheduler: gang}", "policies.FCFS: scheduler gang "
     "time-shares the machine"),
    ("hand: {reading: A hand-made log.}",
     "hand: {reading: A hand-made log., factors: {node_processors: 0}}",
     "traces.hand.factors: expected a mapping with some of"),
    ("seed: 0", "seed: 0\nfactors: {policy: FCFS}", "factors: expected a mapping with keys"),
    ("hand: {reading: A hand-made log.}",
     "hand: {reading: A hand-made log., factors: {partitions: {'1': 3, '2': 2}}}",
     "traces.hand.factors: partitions of 5 processors, nodes of 1; expected partitions "
     "within the machine's 4"),
    ("hand: {reading: A hand-made log.}",
     "hand: {reading: A hand-made log., factors: {node_processors: 3}}",
     "traces.hand.factors: partitions of 0 processors, nodes of 3"),
])
def test_a_bad_configuration_names_its_key(tmp_path, monkeypatch, old, new, message):
    config = configured(tmp_path, monkeypatch)
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))
    with pytest.raises(ConfigError, match=re.escape(f"{config}: {message}")):
        FidelityConfig.read(config)


def test_a_machine_too_small_for_a_log_names_the_trace_and_policy(tmp_path, monkeypatch,
                                                                  capsys):
    config = configured(tmp_path, monkeypatch)
    config.write_text(config.read_text().replace("hand: {reading", "hand: {machine: "
                                                 "'flat:2', reading"))
    assert main(["fidelity", "--config", str(config), "--out", "docs"]) == 2
    assert capsys.readouterr().err == (
        f"simcore: error: {config}: traces.hand: machine flat:2: job 1 needs 4 processors, "
        "the machine has 2 (2 such jobs); expected a machine of at least 4 units\n")
    assert not (tmp_path / "docs" / "fidelity.md").exists()


def test_the_command_takes_a_trace_or_a_configuration(tmp_path, monkeypatch, capsys):
    config = configured(tmp_path, monkeypatch)
    for args, message in (
            ([], "expected exactly one of TRACE (with --machine and --scheduler) or "
                 "--config (with --out)"),
            (["hand.swf", "--config", str(config)], "expected exactly one of TRACE"),
            (["--config", str(config)], "--out DIR is required"),
            (["--config", str(config), "--out", "docs", "--machine", "flat:4"],
             "fidelity --config: --machine not taken: the configuration sets"),
            (["--config", str(config), "--out", "docs", "--json", "--param", "x=1"],
             "fidelity --config: --param, --json not taken"),
            (["mirror/hand.swf.gz", "--scheduler", "fcfs"], "--machine is required")):
        assert main(["fidelity", *args]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "docs").exists()


def test_docs_fidelity_is_what_a_run_writes(whole_trace, tmp_path, monkeypatch):
    """docs/fidelity.md's SDSC-SP2 section and its ablation rows, written again from its
    configuration."""
    whole_trace("SDSC-SP2-1998-4.2-cln")  # skips where whole traces are missing
    shipped = (ROOT / "docs" / "fidelity.md").read_text()
    text = (ROOT / "config" / "fidelity.yaml").read_text()
    catalogue = ROOT / "config" / "traces.yaml"
    config = tmp_path / "fidelity.yaml"
    config.write_text(text.replace("catalogue: config/traces.yaml", f"catalogue: {catalogue}"))
    loaded = FidelityConfig.read(config)
    only = {"SDSC-SP2-1998-4.2-cln": loaded.traces["SDSC-SP2-1998-4.2-cln"]}
    monkeypatch.chdir(tmp_path)
    written = report_markdown(replace(loaded, traces=only, stated=()),
                              run_report(replace(loaded, traces=only)), "")

    def section(markdown: str) -> str:
        return markdown.split("## SDSC-SP2-1998-4.2-cln\n")[1].split("\n## ")[0]

    def ablation(markdown: str) -> list[str]:
        closing = markdown.split("## Closing the replay gap")[1].split("\n## ")[0]
        return [line for line in closing.splitlines()
                if line.startswith("| SDSC-SP2-1998-4.2-cln |")]

    assert section(written) == section(shipped)
    assert ablation(written) == ablation(shipped) and len(ablation(written)) > 8
