"""docs/extending.md, done: an allocator, a scheduler and a machine kind are each one module
and one registry row, an output column and a table column one line each, a figure its
drawing function and one row, and every file and name the guide points at exists."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simcore.base.errors import SpecError
from simcore.machines.registry import ALLOCATORS, Allocator
from simcore.machines.spec import MachineSpec
from tests.conftest import ROOT

ALLOCATOR = '''
"""Any free units, as a flat machine: the guide's allocator example."""
from typing import NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.allocate import place


class PoolMachine(NamedTuple):
    units: int
    words: int
    counts_only: bool


def memory_bytes(spec):
    return 0


def build(spec, jobs):
    return PoolMachine(spec.units, 1, True), jobs.size, np.zeros(len(jobs), dtype=np.int64)


@implements(place, PoolMachine)
@kernel
def place_pool(m, st, j, units, busy, growth, forbidden, out):
    return units
'''

SCHEDULER = '''
"""First come, first served, written as the guide's scheduler example."""
from typing import NamedTuple

from simcore.base.jit import implements, kernel
from simcore.core.decide import decide
from simcore.core.state import DECISIONS, QLEN, STARTS, compact_queue
from simcore.schedulers.fcfs import fcfs_pass


class InOrder(NamedTuple):
    start_delay: float


def kernel_policy(policy, n_jobs):
    return InOrder(policy.start_delay_s)


@implements(decide, InOrder)
@kernel
def decide_in_order(policy, m, st, jobs, t):
    st.ctr[DECISIONS] += 1
    if st.ctr[QLEN] == 0:
        return
    starts = st.ctr[STARTS]
    fcfs_pass(m, st, jobs, policy.start_delay, t)
    if st.ctr[STARTS] != starts:
        compact_queue(st)
'''


RUN = """
import sys
import numpy as np
from simcore.jobs.jobs import Jobs
from simcore.machines.registry import ALLOCATORS, Allocator
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, START_DELAY, PolicySpec, Scheduler
from simcore.simulate import simulate

rng = np.random.default_rng(7)
submit = np.cumsum(rng.exponential(30.0, 200))
run = rng.exponential(600.0, 200) + 1
jobs = Jobs.create(np.arange(1, 201), submit, run, run * 2, rng.integers(1, 17, 200))
ALLOCATORS["pool"] = Allocator("pool", "any free units", ("flat",),
                               "simcore.machines.mine.pool", frozenset({"counts"}))
SCHEDULERS["in-order"] = Scheduler("in-order", "first come, first served",
                                   "simcore.schedulers.in_order", (START_DELAY,))
ALLOCATORS["broken"] = Allocator("broken", "no build", ("flat",),
                                 "simcore.machines.mine.broken", frozenset({"counts"}))
flat = simulate(jobs, MachineSpec.parse("flat:16"), "fcfs")
pool = simulate(jobs, MachineSpec.parse("flat:16", "pool"), "fcfs")
in_order = simulate(jobs, MachineSpec.parse("flat:16"), PolicySpec("in-order"))
print(pool.jobs.column("start_s").equals(flat.jobs.column("start_s")), pool.summary["machine"])
print(in_order.jobs.column("start_s").equals(flat.jobs.column("start_s")),
      in_order.summary["policy"])
try:
    simulate(jobs, MachineSpec.parse("flat:16", "broken"), "fcfs")
except Exception as exc:
    print(exc)
"""


@pytest.mark.slow
def test_an_allocator_and_a_scheduler_are_one_module_and_one_row_each(tmp_path):
    """In a checkout of the user's own: the two example modules added where the guide
    says, one row each registered, and a module lacking `build` named."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "simcore", copy / "simcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "simcore/machines/mine").mkdir()
    (copy / "simcore/machines/mine/__init__.py").write_text('"""My allocators."""\n')
    (copy / "simcore/machines/mine/pool.py").write_text(textwrap.dedent(ALLOCATOR))
    (copy / "simcore/machines/mine/broken.py").write_text("def memory_bytes(spec):\n"
                                                          "    return 0\n")
    (copy / "simcore/schedulers/in_order.py").write_text(textwrap.dedent(SCHEDULER))
    out = subprocess.run([sys.executable, "-c", RUN], env={
        "PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        capture_output=True, text=True, check=True, cwd=tmp_path).stdout.splitlines()
    assert out[0] == "True flat:16 allocator=pool"
    assert out[1] == "True {'scheduler': 'in-order', 'start_delay_s': 0.0}"
    assert "simcore.machines.mine.broken does not define build" in out[2]


def test_a_row_naming_a_module_outside_the_package_is_refused(monkeypatch):
    monkeypatch.setitem(ALLOCATORS, "outside", Allocator(
        "outside", "elsewhere", ("flat",), "my_extensions.pool", frozenset({"counts"})))
    with pytest.raises(SpecError, match=r"my_extensions.pool is outside simcore"):
        assert MachineSpec.parse("flat:16", "outside").implementation


def test_every_file_and_name_the_guide_points_at_exists():
    guide = (ROOT / "docs/extending.md").read_text()
    paths = set(re.findall(r"`(simcore/[\w/]+\.py)`", guide))
    assert paths, "the guide names the files a change touches"
    for path in sorted(paths):
        assert (ROOT / path).is_file(), path
    for dotted in sorted(set(re.findall(r"`(simcore(?:\.\w+)+)`", guide))):
        module, _, name = dotted.rpartition(".")
        if (ROOT / (dotted.replace(".", "/") + ".py")).is_file() or \
                (ROOT / dotted.replace(".", "/")).is_dir():
            continue
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), dotted
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert re.search(rf"^(class|def) {name}\b|^{name}\b.*=|^    def {name}\b", source,
                         re.M), dotted


GRAMMAR = '''
"""N units on a ring, numbered backwards: the guide's machine kind example."""
import numpy as np

from simcore.base.errors import SpecError
from simcore.machines.contract import UnitLayout


def parse_argument(argument):
    if not argument.isdigit() or int(argument) < 1:
        raise SpecError(f"{argument!r}: expected a unit count")
    return (int(argument),)


def argument_key(argument):
    return ""


def unit_layout(argument):
    n = int(argument)
    return UnitLayout((n,), np.arange(n - 1, -1, -1, dtype=np.int64)[:, None], True)
'''

KIND_RUN = """
import numpy as np
from simcore.jobs.jobs import Jobs
from simcore.machines.registry import ALLOCATORS, KINDS, Allocator, MachineKind
from simcore.machines.spec import MachineSpec
from simcore.schedules.units import numbering
from simcore.simulate import simulate

rng = np.random.default_rng(7)
submit = np.cumsum(rng.exponential(30.0, 200))
run = rng.exponential(600.0, 200) + 1
jobs = Jobs.create(np.arange(1, 201), submit, run, run * 2, rng.integers(1, 17, 200))
KINDS["ring"] = MachineKind("ring", "N units on a ring", "ring:16", "pool", max_dims=1,
                            wraps=True, grammar="simcore.machines.mine.ring")
ALLOCATORS["pool"] = Allocator("pool", "any free units", ("ring",),
                               "simcore.machines.mine.pool", frozenset({"counts"}))
ring = MachineSpec.parse("ring:16")
flat = simulate(jobs, MachineSpec.parse("flat:16"), "fcfs")
on_ring = simulate(jobs, ring, "fcfs")
print(on_ring.jobs.column("start_s").equals(flat.jobs.column("start_s")),
      on_ring.summary["machine"])
print(numbering(ring).coords[:3, 0].tolist(), numbering(ring).ids(np.eye(16, dtype=bool)[0]))
"""


@pytest.mark.slow
def test_a_machine_kind_is_one_module_and_one_row(tmp_path):
    """A kind of the user's own (its grammar module, with where its units are) and its
    row: machines of it parse, run, and number their units as the module says."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "simcore", copy / "simcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "simcore/machines/mine").mkdir()
    (copy / "simcore/machines/mine/__init__.py").write_text('"""My machines."""\n')
    (copy / "simcore/machines/mine/ring.py").write_text(textwrap.dedent(GRAMMAR))
    (copy / "simcore/machines/mine/pool.py").write_text(textwrap.dedent(ALLOCATOR))
    out = subprocess.run([sys.executable, "-c", KIND_RUN], env={
        "PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        capture_output=True, text=True, check=True, cwd=tmp_path).stdout.splitlines()
    assert out[0] == "True ring:16"  # its default allocator, unnamed
    assert out[1] == "[0, 1, 2] [15]"  # ids count along the ring; bit 0 sits at 15


COUNTING = '''
"""First come, first served, counting its decisions: the guide's output column example."""
from typing import NamedTuple

import numpy as np

from simcore.base.jit import implements, kernel
from simcore.core.decide import decide
from simcore.core.state import DECISIONS, QLEN, STARTS, compact_queue
from simcore.schedulers.fcfs import fcfs_pass


class Counting(NamedTuple):
    start_delay: float
    passes: np.ndarray


def kernel_policy(policy, n_jobs):
    return Counting(policy.start_delay_s, np.zeros(1, dtype=np.int64))


def observables(struct):
    return {"fcfs_passes": int(struct.passes[0])}


@implements(decide, Counting)
@kernel
def decide_counting(policy, m, st, jobs, t):
    st.ctr[DECISIONS] += 1
    if st.ctr[QLEN] == 0:
        return
    policy.passes[0] += 1
    starts = st.ctr[STARTS]
    fcfs_pass(m, st, jobs, policy.start_delay, t)
    if st.ctr[STARTS] != starts:
        compact_queue(st)
'''

COLUMN = ('    Column("fcfs_passes", int, "count", "FCFS passes over a non-empty queue", '
          'absent=None),\n')
STATISTIC = '              Statistic("mean_wait_s_std", "mean_wait_s", "std", "sd wait"),\n'
DRAWING = '''
def wait_spread(experiment, rows):
    """The spread of the mean wait over replications against utilization."""
    if not rows.height:
        return None
    fig = new_figure(4.0, 3.0)
    ax = fig.subplots()
    ax.plot(rows["utilization_mean"].to_list(), rows["mean_wait_s_std"].to_list(), "o")
    return fig


'''
FIGURE = ('    "wait-spread": FigureDefinition("wait_slowdown", wait_spread, '
          '"The spread of the mean wait."),\n')

COLUMN_RUN = """
import sys
from pathlib import Path
import numpy as np
import polars as pl
from simcore.jobs.jobs import Jobs
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, START_DELAY, PolicySpec, Scheduler
from simcore.report.plots import captions, write_figures
from simcore.report.tables import write_tables
from simcore.simulate import simulate
from tests.test_tables import build_store

rng = np.random.default_rng(7)
submit = np.cumsum(rng.exponential(30.0, 200))
run = rng.exponential(600.0, 200) + 1
jobs = Jobs.create(np.arange(1, 201), submit, run, run * 2, rng.integers(1, 17, 200))
SCHEDULERS["counting"] = Scheduler("counting", "FCFS, counting its passes",
                                   "simcore.schedulers.counting", (START_DELAY,))
counted = simulate(jobs, MachineSpec.parse("flat:16"), PolicySpec("counting"))
print(counted.summary["fcfs_passes"] > 0, simulate(jobs, MachineSpec.parse("flat:16"),
                                                     "fcfs").summary["fcfs_passes"])
root = Path(sys.argv[1])
write_tables(build_store(root / "results", experiments=("krevat",)), root / "tables")
print("mean_wait_s_std" in pl.read_parquet(root / "tables/wait_slowdown.parquet").columns)
paths = write_figures(root / "tables", root / "figures")
print(sorted(p.name for p in paths if p.stem == "wait-spread"), captions()["wait-spread"])
"""


def _insert(path: Path, after: str, text: str) -> None:
    """Insert `text` into the file after the first line starting with `after`."""
    source = path.read_text()
    at = source.index("\n", source.index(after)) + 1
    path.write_text(source[:at] + text + source[at:])


@pytest.mark.slow
def test_an_output_column_a_table_column_and_a_figure_are_a_line_or_a_row_each(tmp_path):
    """A run metric (one line in metrics.py, reported by a scheduler module of the user's
    own), a table column (one Statistic line) and a figure (its drawing function and one
    row in plots.py) reach the summary, the table and the figure files with its caption."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "simcore", copy / "simcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", copy / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    (copy / "simcore/schedulers/counting.py").write_text(textwrap.dedent(COUNTING))
    _insert(copy / "simcore/core/columns.py", "MODULE_METRICS = (", COLUMN)
    _insert(copy / "simcore/report/tables.py", '              Statistic("mean_wait_s_mean"',
            STATISTIC)
    plots = copy / "simcore/report/plots.py"
    source = plots.read_text()
    plots.write_text(source.replace("class FigureDefinition(", DRAWING.lstrip("\n")
                                    + "class FigureDefinition(", 1))
    _insert(plots, "FIGURES: dict[str, FigureDefinition] = {", FIGURE)
    out = subprocess.run([sys.executable, "-c", COLUMN_RUN, str(tmp_path)], env={
        "PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        capture_output=True, text=True, check=False, cwd=copy)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "True None"  # the built-in fcfs reports it absent
    assert lines[1] == "True"
    assert lines[2] == "['wait-spread.png', 'wait-spread.svg'] The spread of the mean wait."
