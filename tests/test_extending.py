"""docs/extending.md, done: an allocator and a scheduler are each one module and one registry
row, and every file and name the guide points at exists."""

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
