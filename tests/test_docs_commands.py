"""Every command README.md and docs/ show, found in the files and checked as CHECKS says.

What counts as a command: a line of a fenced block with no language (or sh, bash,
console), or of an indented block, whose first word is a program of PROGRAMS (so the
layout table, diagrams and quoted error messages are not); in prose, an inline code span
that is a program followed by a word (`simcore plan --timing`, `snakemake -n`; not
`simcore/`, `simcore.jobs.swf` or a bare `snakemake`). Backslash continuations are joined,
`# comments` dropped, whitespace collapsed, and `&&` chains split into their commands.
Python and YAML blocks are code, not commands. README's test command (the block after
`<!-- test-command -->`) is what runs this suite, and is left out.

CHECKS holds every command, by its text, and how it is checked (the kinds of `Check`).
A command the docs show that CHECKS does not hold fails the test with its file:line; a
row of CHECKS whose command the docs no longer show fails too. Adding a command to the
docs is one row here.

Commands run as argument lists (shlex.split of the text after substitution, never a
shell), in a scratch copy of the workflow, with the environment inherited (so
TORUS_SWEEP_CACHE's compiled kernels are reused). To pay for imports once, consecutive
`simcore` commands run in one process through the function the `simcore` script calls,
Snakemake's dry runs in Snakemake's own command line in the test's process, and the
`--help` of forms is asked of simcore's parser. Where the text has optional parts
(`[--json]`) the run includes them, with the first of alternatives `[a|b]`. Placeholders
(`TRACE.swf.gz`, `DIR`, ...) are replaced from PLACEHOLDERS, and in commands on a full
study from STUDY as well: config/test/small.yaml for a paper's configuration. The study
commands read one results directory: tests/test_sweep.py runs them on its small sweep
(`check_study_commands`) rather than running the workflow a second time.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.workflow import scratch_workflow

PROGRAMS = ("simcore", "snakemake", "python", "python3", "pip", "git", "cd", "export", ".")
INLINE_PROGRAMS = ("simcore", "snakemake", "python", "python3", "pip")
SHELL_LANGUAGES = ("", "sh", "bash", "console", "shell")
TEST_COMMAND_MARK = "<!-- test-command -->"
SMALL = "config/test/small.yaml"
EXCERPTS = "tests/data/traces"

# Placeholders of every command that runs, as whole words, in this order.
PLACEHOLDERS = {
    "TRACE.swf.gz": f"{EXCERPTS}/SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-SP2-1998-4.2-cln": f"{EXCERPTS}/SDSC-SP2-1998-4.2-cln.swf.gz",
    "CTC-SP2-1996-3.1-cln": f"{EXCERPTS}/CTC-SP2-1996-3.1-cln.swf.gz",
    "Sandia-Ross-2001-1.1-cln": f"{EXCERPTS}/Sandia-Ross-2001-1.1-cln.swf.gz",
    "SDSC-BLUE-2000-4.2-cln.swf.gz": f"{EXCERPTS}/SDSC-BLUE-2000-4.2-cln.swf.gz",
    "DIR": "out",
    "N": "2",
    "my-config.yaml": SMALL,
}
# ... and of the commands on a full study, run on the small configuration's results
# (replaced wherever they occur).
STUDY = {
    "config/papers.yaml": SMALL,
    "torus-sweep-papers": "torus-sweep-test",
    "torus-sweep-default": "torus-sweep-test",
    "DATASET": "torus-sweep-test",
    "...": SMALL,
    "--experiment schedulers --workload lublin": "--experiment small --workload lublin16",
}
RUN_KEY = "3f1c2a"  # a run key the docs show: check_study_commands puts one of the store's


@dataclass(frozen=True)
class Check:
    """How a command is checked.

    run: run as written (placeholders replaced); `writes` a path it makes, `prints` a text
      its standard output or error holds.
    study: a command on a full study's results, run on the small configuration's.
    dry: a workflow run that takes hours, run with `-n` (on the small configuration where
      it names a paper's).
    help: a form (placeholders, a name in prose) or a command that runs for minutes: its
      `--help` exits 0 and names every `--option` the text shows.
    install: `pip (un)install`: the extras it names exist in pyproject.toml, the packages
      it names are requirements of an extra.
    suite: a pytest command of this suite: the files and markers it names exist.
    env: `export VAR=...`: simcore reads VAR.
    shell: the user's own set-up (a virtualenv, a clone): not the project's to check.
    """

    kind: str
    writes: str = ""
    prints: str = ""


RUN, STUDY_RUN, DRY, HELP = Check("run"), Check("study"), Check("dry"), Check("help")
INSTALL, SUITE, ENV, SHELL = Check("install"), Check("suite"), Check("env"), Check("shell")

CHECKS: dict[str, Check] = {
    # README.md
    "pip install -e .": INSTALL,
    "snakemake --cores 2": DRY,
    "export TORUS_SWEEP_TRACE_DIR=/path/to/traces": ENV,
    "snakemake --cores 2 --configfile config/papers.yaml": STUDY_RUN,
    "simcore plan --configfile config/papers.yaml": Check("run", prints="shards"),
    "snakemake --cores 2 archive --configfile config/papers.yaml":
        Check("study", writes="results/torus-sweep-test/archive/torus-sweep-test.tar.xz"),
    "snakemake --cores 2 --configfile config/papers.yaml --report report.html":
        Check("study", writes="report.html"),
    "simcore plan --configfile config/config.yaml": Check("run", prints="shards"),
    "snakemake -n": RUN,
    "simcore plan --timing --configfile ...": Check("study", prints="simulate s"),
    "python -m pytest -m \"not slow\"": SUITE,
    "simcore leung2002 figure1": HELP,
    "simcore leung2002 table1": HELP,
    "simcore menus": HELP,
    "snakemake --cores N --configfile config/papers.yaml": STUDY_RUN,
    "simcore reproduction --store results/torus-sweep-papers/store --figures reproduction "
    "--copy-figures results/torus-sweep-papers/figures --out docs/reproduction.md":
        Check("study", writes="docs/reproduction.md"),
    "simcore list transforms": Check("run", prints="runtime_scale"),
    "simcore resimulate": HELP,
    "simcore store compact --configfile C [--configfile C2 ...]": HELP,
    "simcore export": HELP,
    "simcore swf-info TRACE.swf.gz [--json]": Check("run", prints='"jobs"'),
    "simcore fidelity TRACE.swf.gz --machine flat:128 --scheduler backfill [--json] "
    "[--out DIR]": Check("run", writes="out/residuals.parquet", prints='"compared"'),
    "simcore run --workload SDSC-SP2-1998-4.2-cln --machine torus:4x4x8 --scheduler bm "
    "--first-jobs 10000 --runtime-scale 1.2 --start-delay 1 [--param fn_tor=0.1] [--json]":
        Check("run", prints='"utilization"'),
    "simcore run --workload CTC-SP2-1996-3.1-cln --machine bgl:8x4x4 --scheduler backfill "
    "--processors-per-unit 4 --p-fat 1 --p-torus 1 --offered-load 1.0 --seed 1": RUN,
    "simcore run --workload lublin:128 --jobs 5000 --seed 1 --machine flat:128 "
    "--scheduler conservative": RUN,
    "simcore list [machines|allocators|schedulers|models|transforms|traces|columns] [--json]":
        Check("run", prints="torus"),
    "simcore list config --markdown": Check("run", prints="| `limits.max_runs` |"),
    "simcore resimulate --configfile C --policy P [--where fn_tor=0.1]": HELP,
    "simcore run --workload Sandia-Ross-2001-1.1-cln --first-jobs 5000 --machine-fit drop "
    "--machine mesh:8x8x5 --allocator best-fit --ordering hilbert --scheduler cplant": RUN,
    "simcore leung2002 table1 [--dilation 0 0.5 1 2] [--out DIR]": HELP,
    "simcore leung2002 figure1 --store results/torus-sweep-papers/store --out DIR": HELP,
    "simcore bgl links --dim x --midplanes 1,2,3 --topology torus [--json]": RUN,
    "simcore run --workload lublin:128 --jobs 150 --seed 1 --machine torus:4x4x8 "
    "--scheduler bm --export runs/bm": Check("run", writes="runs/bm/jobs.csv"),
    "simcore show runs/bm": Check("run", writes="runs/bm/gantt.png"),
    "simcore show runs/bm --from 20h --until 30h": Check("run", writes="runs/bm/gantt.png"),
    "simcore bench [--json FILE]": HELP,
    "simcore bench --mesh": HELP,
    "simcore archive verify results/DATASET/archive/DATASET.tar.xz":
        Check("study", prints="checksums OK"),
    "simcore run --help": Check("run", prints="--scheduler"),
    "simcore run --json": HELP,
    "simcore run": HELP,
    "simcore bench": HELP,
    "snakemake -n --configfile config/papers.yaml": RUN,
    "python -c \"import snakemake.api\"": RUN,
    "python -c \"import numba\"": RUN,
    "simcore store compact --configfile config/papers.yaml": HELP,
    "simcore plan --timing": HELP,
    "simcore plan --timing --configfile config/papers.yaml":
        Check("study", prints="simulate s"),
    # docs/architecture.md
    "python -m pytest tests/test_layers.py": SUITE,
    "simcore sweep-shard": HELP,
    # docs/chu.md
    "simcore run --workload chu:uniform --jobs 50000 --seed 1 --offered-load 0.7 "
    "--warmup-jobs 1000 --machine mesh:32x32 --allocator bl --scheduler mq "
    "--param queues=32 --param scan=down [--json]": HELP,
    "simcore run --workload chu:uniform --jobs 50000 --offered-load 0.5 --warmup-jobs 1000 "
    "--machine mesh:32x32 --allocator as --scheduler scan-all --param wtl=500 --json": HELP,
    "simcore run --workload chu:decreasing --jobs 20000 --seed S --offered-load 0.5 "
    "--warmup-jobs 1000 --machine mesh:32x32 --allocator A --machine-param K=V "
    "--scheduler fcfs --json": HELP,
    "simcore bench --mesh --repeat 3": HELP,
    # docs/configuration.md
    "simcore plan --configfile FILE": HELP,
    "simcore list schedulers": Check("run", prints="backfill"),
    "simcore list traces": Check("run", prints="SDSC-SP2-1998-4.2-cln"),
    # docs/curves.md
    "simcore run --workload Sandia-Ross-2001-1.1-cln --first-jobs 5000 --machine-fit drop "
    "--machine mesh:8x8x5 --allocator best-fit --ordering hilbert "
    "--machine-param fallback_span=ring --scheduler cplant": RUN,
    # docs/extending.md
    "simcore list": HELP,
    "simcore run --workload model:ARG --jobs N": HELP,
    "simcore plan": HELP,
    "simcore resimulate --configfile C [--experiment E] [--policy P] [--where NAME=VALUE]":
        HELP,
    # docs/input.md
    "simcore plan --configfile": HELP,
    "simcore show": HELP,
    "simcore run --export": HELP,
    "snakemake --cores 2 archive": DRY,
    # docs/leung2002.md
    "snakemake --cores 1": DRY,
    "simcore leung2002 figure1 --store results/torus-sweep-papers/store "
    "--experiment leung2002-replication --out DIR": HELP,
    "simcore leung2002 table1 --dilation 0 0.25 0.5 0.75 1 1.5 2 3 --seeds 10 --out DIR":
        HELP,
    # docs/modern.md
    "simcore menus pareto --store results/torus-sweep-papers/store "
    "--experiment menu-search-ctc --out results/torus-sweep-papers/menus/ctc": HELP,
    "simcore tables": HELP,
    "simcore tables --store results/torus-sweep-papers/store --out DIR":
        Check("study", writes="out/utilization.md"),
    "simcore menus pareto": HELP,
    "simcore menus candidates": HELP,
    "simcore menus pareto --store S --experiment E --out D": HELP,
    "simcore blocks study --store results/torus-sweep-papers/store --out DIR": HELP,
    "simcore blocks study": HELP,
    "simcore export --store results/torus-sweep-papers/store --experiment "
    "modern-gpu-placement --workload blue-racks --machine gpu-tree --policy "
    "aggressive-backfill --param offered_load=0.9 --out tree": HELP,
    "simcore show tree kueue --from 100h --until 112h": HELP,
    "simcore run --workload SDSC-BLUE-2000-4.2-cln.swf.gz --machine blocks:64x18 "
    "--allocator slurm-ring --machine-param ring_racks=8 --scheduler backfill "
    "--fit-to-machine true --first-jobs 2000 --offered-load 0.9 --export ring":
        Check("run", writes="ring/jobs.csv"),
    "simcore show ring": Check("run", writes="ring/snapshots.png"),
    "simcore bench --blocks": HELP,
    "simcore blocks capacity": Check("run", prints="| 5% | 95.0% | 87.6% | 69.9% | 83.7% |"),
    # docs/outputs.md
    "simcore fidelity --out DIR": HELP,
    "simcore list columns --markdown": Check("run", prints="| `utilization`"),
    # docs/schedules.md
    "simcore run --workload lublin:128 --jobs 150 --seed 1 --machine torus:4x4x8 "
    "--scheduler bm --start-delay 1 --export runs/bm": Check("run", writes="runs/bm/jobs.csv"),
    "simcore run --workload lublin:128 --jobs 150 --seed 1 --machine torus:4x4x8 "
    "--scheduler fcfs --start-delay 1 --export runs/fcfs":
        Check("run", writes="runs/fcfs/jobs.csv"),
    "simcore show runs/fcfs runs/bm --out runs/fcfs-vs-bm":
        Check("run", writes="runs/fcfs-vs-bm/gantt.png"),
    "simcore show runs/bm --from 20h --until 30h --out runs/bm-20h":
        Check("run", writes="runs/bm-20h/gantt.png"),
    "simcore export --store results/torus-sweep-default/store --run-key 3f1c2a --out runs/x":
        Check("study", writes="runs/x/jobs.csv"),
    "simcore export --store results/torus-sweep-default/store --experiment schedulers "
    "--workload lublin --machine torus --policy bm --param offered_load=0.9 "
    "--param seed=1 --out runs/y": Check("study", writes="runs/y/jobs.csv"),
    "simcore export ... --run <i>": HELP,
    "simcore fidelity TRACE.swf.gz --machine flat:128 --scheduler backfill "
    "[--estimates requested] [--seed 0] [--json] [--out DIR]":
        Check("run", writes="out/fidelity.json", prints='"ties_reversed"'),
    "simcore fidelity": HELP,
    # all traces: about 8 min; test_fidelity_report writes one trace's section and its
    # ablation rows again
    "simcore fidelity --config config/fidelity.yaml --out docs": HELP,
    "simcore fidelity --config YAML --out DIR": HELP,
    "simcore swf-info": HELP,
    "simcore show DIR [DIR2] [--out DIR3] [--at T ...] [--from T] [--until T]": HELP,
    # docs/slurm.md
    "python3 -m venv ~/venvs/torus-sweep": SHELL,
    ". ~/venvs/torus-sweep/bin/activate": SHELL,
    "git clone <repository> torus-sweep": SHELL,
    "cd torus-sweep": SHELL,
    "pip install -e '.[slurm]'": INSTALL,
    "snakemake --workflow-profile profiles/slurm --configfile config/papers.yaml": DRY,
    "pip uninstall snakemake-executor-plugin-slurm": INSTALL,
    "snakemake --cores 1 --configfile my-config.yaml": DRY,
    # docs/timesharing.md
    "simcore run --workload fcs:scenario2 --scheduler fcs --json": Check("run", prints="fcs"),
    "simcore run --workload fcs:scenario3 --scheduler gang --param mpl=2": RUN,
    "simcore run --workload lublin:32 --jobs 1000 --machine flat:32 --scheduler fcs "
    "--bsp-model random --offered-load 0.8 --seed 1": HELP,
    "python -m simcore.tools.frachtenberg2003": Check("run", prints="scenario4"),
}


@dataclass(frozen=True)
class Shown:
    """A command as a doc shows it: its text and where (file:line)."""

    text: str
    where: str


def _normal(text: str) -> str:
    return " ".join(text.split())


def _commands_of_line(text: str, where: str) -> list[Shown]:
    """The commands of one logical line of a code block: comment dropped, && split."""
    text = re.sub(r"(^|\s)#\s.*$", "", text)
    parts = [_normal(part) for part in text.split("&&")]
    if not parts[0] or parts[0].split()[0] not in PROGRAMS:
        return []
    return [Shown(part, where) for part in parts if part]


def _block_commands(lines: list[tuple[int, str]], path: str) -> list[Shown]:
    """The commands of a code block's lines (number, text), continuations joined."""
    found: list[Shown] = []
    pending, start = "", 0
    for number, line in lines:
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        found += _commands_of_line(pending + line, f"{path}:{start}")
        pending = ""
    return found


def shown_commands() -> list[Shown]:
    """Every command README.md and docs/**/*.md show, in reading order."""
    shown: list[Shown] = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        path = page.relative_to(ROOT).as_posix()
        lines = page.read_text().splitlines()
        prose: list[str] = []
        block: list[tuple[int, str]] = []
        fence: str | None = None
        skip_block = False
        for number, line in enumerate(lines, 1):
            if fence is None and line.startswith("```"):
                fence = line[3:].strip()
                skip_block = fence not in SHELL_LANGUAGES or (
                    number > 1 and lines[number - 2].strip() == TEST_COMMAND_MARK)
                block, prose = [], [*prose, ""]
            elif fence is not None:
                if line.startswith("```"):
                    if not skip_block:
                        shown += _block_commands(block, path)
                    fence, block = None, []
                else:
                    block.append((number, line))
                prose.append("")
            elif line.startswith("    ") and (block or (number > 1 and not lines[number - 2])):
                block.append((number, line.strip()))
                prose.append("")
            else:
                if block:
                    shown += _block_commands(block, path)
                    block = []
                prose.append(line)
        if block:
            shown += _block_commands(block, path)
        text = "\n".join(prose)
        for span in re.finditer(r"`([^`]+)`", text):
            words = span.group(1).split()
            if len(words) > 1 and words[0] in INLINE_PROGRAMS:
                line = text.count("\n", 0, span.start()) + 1
                shown.append(Shown(_normal(span.group(1)), f"{path}:{line}"))
    return shown


def _replaced(text: str, table: dict[str, str]) -> str:
    for name, value in table.items():
        text = re.sub(rf"(?<![\w.:/-]){re.escape(name)}(?![\w.:/-])", value, text)
    return text


def _expanded(text: str) -> str:
    """The text with its optional parts in: brackets dropped, first alternative kept."""
    return re.sub(r"\[([^\]]*)\]", lambda m: m.group(1).split("|")[0].replace("...", ""), text)


def argv(text: str, study: dict[str, str] | None = None) -> list[str]:
    """The argument list a command runs as: placeholders replaced, then the `study`
    substitutions wherever they occur."""
    text = _replaced(_expanded(text), PLACEHOLDERS)
    for name, value in (study or {}).items():
        text = text.replace(name, value)
    words = shlex.split(text)
    return [sys.executable, *words[1:]] if words[0] in ("python", "python3") else words


@dataclass(frozen=True)
class Ran:
    """A command that ran: its arguments, exit status, output (stdout and stderr), and
    whether the path it promises existed right after it (True where it promises none)."""

    args: list[str]
    status: int
    output: str
    wrote: bool


# Runs `simcore` commands one after another in one process, through the function the
# `simcore` script calls. Reads [[arguments, path promised], ...] as JSON in argv[1],
# prints [[status, output, path existed], ...].
BATCH = """
import contextlib, io, json, os, sys, traceback
from simcore.cli.main import main
done = []
for words, writes in json.loads(sys.argv[1]):
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            status = main(words) or 0
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
        except Exception:  # a bug: its traceback is the command's error output
            traceback.print_exc()
            status = 1
    done.append([status, output.getvalue(), not writes or os.path.exists(writes)])
json.dump(done, sys.__stdout__)
"""


def run_all(commands: list[tuple[list[str], str]], cwd: Path) -> list[Ran]:
    """Run commands (arguments, path promised) in order. Consecutive `simcore` commands run
    in one process (BATCH), which imports simcore and numba and loads the kernels once. A
    Snakemake dry run (`-n`) runs in Snakemake's own command line in this process (it plans
    in a fraction of a second; a new process takes two to start Snakemake), at once: it
    writes nothing the others read, so it does not end a batch."""
    done: dict[int, Ran] = {}
    batch: list[int] = []

    def flush() -> None:
        done.update(zip(batch, _batch([commands[i] for i in batch], cwd), strict=True))
        batch.clear()

    for index, (words, writes) in enumerate(commands):
        if words[0] == "simcore":
            batch.append(index)
            continue
        if words[0] == "snakemake" and "-n" in words:
            status, output = _plan(words, cwd)
        else:
            flush()
            ran = subprocess.run(words, cwd=cwd, capture_output=True, text=True,
                                 env=os.environ.copy(), check=False)
            status, output = ran.returncode, ran.stdout + ran.stderr
        done[index] = Ran(words, status, output, not writes or (cwd / writes).exists())
    flush()
    return [done[index] for index in range(len(commands))]


def _batch(commands: list[tuple[list[str], str]], cwd: Path) -> list[Ran]:
    if not commands:
        return []
    todo = json.dumps([(words[1:], writes) for words, writes in commands])
    ran = subprocess.run([sys.executable, "-c", BATCH, todo], cwd=cwd, capture_output=True,
                         text=True, env=os.environ.copy(), check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return [Ran(words, *result)
            for (words, _), result in zip(commands, json.loads(ran.stdout), strict=True)]


def _plan(words: list[str], cwd: Path) -> tuple[int, str]:
    from snakemake.cli import main

    output = io.StringIO()
    with (contextlib.chdir(cwd), contextlib.redirect_stdout(output),
          contextlib.redirect_stderr(output), pytest.raises(SystemExit) as exit):
        main(words[1:])
    return exit.value.code or 0, output.getvalue()


def _failures(commands: list[Shown], cwd: Path, study: dict[str, str] | None = None,
              suffix: tuple[str, ...] = ()) -> list[str]:
    """Run `commands` (placeholders replaced, `suffix` appended); what went wrong, each
    with where the docs show the command."""
    todo = [([*argv(shown.text, study), *suffix], CHECKS[shown.text].writes)
            for shown in commands]
    return [problem for shown, ran in zip(commands, run_all(todo, cwd), strict=True)
            if (problem := failure(shown, ran, CHECKS[shown.text]))]


def failure(shown: Shown, ran: Ran, check: Check) -> str:
    """What went wrong with a command that ran, or "" if nothing did."""
    if ran.status != 0:
        problem = f"exit status {ran.status}"
    elif not ran.wrote:
        problem = f"{check.writes} not written"
    elif check.prints and check.prints not in ran.output:
        problem = f"{check.prints!r} not in its output"
    else:
        return ""
    tail = "\n    ".join(ran.output.strip().splitlines()[-6:])
    return f"{shown.where}: {shown.text}\n  ran {shlex.join(ran.args)}: {problem}\n    {tail}"


def unique(kind: str) -> list[Shown]:
    """The commands of one kind, each once (where it is first shown), in reading order."""
    seen: dict[str, Shown] = {}
    for shown in shown_commands():
        check = CHECKS.get(shown.text)
        if check is not None and check.kind == kind:
            seen.setdefault(shown.text, shown)
    return list(seen.values())


def test_every_command_the_docs_show_is_checked() -> None:
    shown = shown_commands()
    unknown = [f"{s.where}: {s.text}" for s in shown if s.text not in CHECKS]
    assert not unknown, (
        "commands the docs show that tests/test_docs_commands.py does not check; add a row "
        "to CHECKS saying how (run, study, dry, help, install, suite, env, shell):\n"
        + "\n".join(unknown))
    gone = sorted(set(CHECKS) - {s.text for s in shown})
    assert not gone, f"rows of CHECKS no doc shows any more; remove them: {gone}"


def test_the_readme_test_command_is_left_out() -> None:
    texts = {s.text for s in shown_commands()}
    assert "python -m pytest" not in texts
    assert "pip install -e '.[test,slurm]'" not in texts


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A scratch copy of the workflow with the trace excerpts, where commands write."""
    target = scratch_workflow(tmp_path_factory.mktemp("docs"))
    (target / EXCERPTS).parent.mkdir(parents=True)
    (target / EXCERPTS).symlink_to(ROOT / EXCERPTS)
    return target


@pytest.mark.slow
def test_commands_run_as_written(workdir: Path) -> None:
    failures = _failures(unique("run"), workdir)
    assert not failures, "\n".join(failures)


def test_long_workflow_runs_plan(workdir: Path) -> None:
    """Each plans (`-n`); and says how many cores, which Snakemake demands of a run but not
    of a dry run."""
    from snakemake.cli import parse_args

    failures = _failures(unique("dry"), workdir, STUDY, ("-n",))
    for shown in unique("dry"):
        with contextlib.chdir(workdir), contextlib.redirect_stderr(io.StringIO()):
            _, args = parse_args(argv(shown.text, STUDY)[1:])
        if args.cores is None and args.jobs is None:
            failures.append(f"{shown.where}: {shown.text}\n  names no --cores (nor a profile "
                            "that does): Snakemake refuses to run it")
    assert not failures, "\n".join(failures)


def _subcommand(words: list[str]) -> list[str]:
    """The program and subcommand words of a command: up to the first option or
    placeholder."""
    head = [words[0]]
    for word in words[1:]:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", word):
            break
        head.append(word)
    return head


def _help(head: tuple[str, ...]) -> tuple[int, str]:
    """Exit status and text of `simcore ... --help`, asked of simcore's own parser (no
    process per form: the forms are many and each would pay the import)."""
    from simcore.cli.main import main

    assert head[0] == "simcore", head
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit) as exit:
        main([*head[1:], "--help"])
    return exit.value.code or 0, text.getvalue()


def test_forms_and_long_commands_are_in_their_help() -> None:
    helps: dict[tuple[str, ...], tuple[int, str]] = {}
    failures = []
    for shown in unique("help"):
        head = tuple(_subcommand(shown.text.split()))
        if head not in helps:
            helps[head] = _help(head)
        status, text = helps[head]
        options = {word.strip("[]").split("=")[0] for word in shown.text.split()
                   if word.strip("[").startswith("--")}
        missing = sorted(option for option in options
                         if not re.search(rf"{option}(?![\w-])", text))
        if status != 0 or missing:
            failures.append(f"{shown.where}: {shown.text}\n  {' '.join(head)} --help: exit "
                            f"status {status}, options not in it: {missing}")
    assert not failures, "\n".join(failures)


def test_install_commands_name_what_pyproject_holds() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    requirements = {re.split(r"[<>=!~\[ ;]", line)[0]
                    for lines in extras.values() for line in lines}
    failures = []
    for shown in unique("install"):
        words = shlex.split(shown.text)
        for word in words[2:]:
            named = re.fullmatch(r"\.(?:\[(.*)\])?", word)
            if named:
                wanted = named.group(1).split(",") if named.group(1) else []
                failures += [f"{shown.where}: no extra {name!r}" for name in wanted
                             if name not in extras]
            elif not word.startswith("-") and word not in requirements:
                failures.append(f"{shown.where}: {word} is no requirement of an extra")
    assert not failures, "\n".join(failures)


def test_suite_commands_name_files_and_markers_that_exist() -> None:
    markers = {line.split(":")[0] for line in tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    failures = []
    for shown in unique("suite"):
        words = shlex.split(shown.text)
        for before, word in itertools.pairwise(words):
            if before == "-m" and word != "pytest":
                failures += [f"{shown.where}: no marker {name}" for name in
                             re.findall(r"\w+", word) if name not in ("not", "and", "or")
                             and name not in markers]
            elif word.startswith("tests/") and not (ROOT / word).exists():
                failures.append(f"{shown.where}: no {word}")
    assert not failures, "\n".join(failures)


def test_exported_variables_are_read_by_simcore() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "simcore").rglob("*.py"))
    for shown in unique("env"):
        variable = shown.text.split()[1].split("=")[0]
        assert f'"{variable}"' in source, f"{shown.where}: simcore does not read {variable}"


def check_study_commands(results: Path, already_run: list[str]) -> None:
    """Run the commands on a full study in `results`, the working directory of a run of
    the small configuration (`already_run`, its command, is not run again)."""
    import polars as pl

    shard = next((results / "results/torus-sweep-test/store").glob("**/summary.parquet"))
    study = {**STUDY, RUN_KEY: pl.read_parquet(shard)["run_key"][0][:12]}
    commands = [shown for shown in unique("study") if argv(shown.text, study) != already_run]
    assert len(commands) < len(unique("study")), (
        f"no doc shows the run {shlex.join(already_run)} stands for")
    failures = _failures(commands, results, study)
    assert not failures, "\n".join(failures)
