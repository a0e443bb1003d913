"""docs/extending.md, done: an allocator and a scheduler are each one module and one registry
row, and every file and name the guide points at exists."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from simcore.jobs.jobs import Jobs
from simcore.machines.registry import ALLOCATORS, Allocator
from simcore.machines.spec import MachineSpec
from simcore.policy import SCHEDULERS, START_DELAY, PolicySpec, Scheduler
from simcore.simulate import simulate
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


@pytest.fixture
def extension(tmp_path, monkeypatch):
    """A package of the user's own on the path, holding the two example modules and an
    allocator module that lacks `build`."""
    package = tmp_path / "my_extensions"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "pool.py").write_text(textwrap.dedent(ALLOCATOR))
    (package / "in_order.py").write_text(textwrap.dedent(SCHEDULER))
    (package / "broken.py").write_text("def memory_bytes(spec):\n    return 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def jobs() -> Jobs:
    rng = np.random.default_rng(7)
    n = 200
    submit = np.cumsum(rng.exponential(30.0, n))
    run = rng.exponential(600.0, n) + 1
    size = rng.integers(1, 17, n)
    return Jobs.create(np.arange(1, n + 1), submit, run, run * 2, size)


def test_an_allocator_is_one_module_and_one_row(extension, monkeypatch):
    monkeypatch.setitem(ALLOCATORS, "pool", Allocator(
        "pool", "any free units", ("flat",), "my_extensions.pool", frozenset({"counts"})))
    ours = simulate(jobs(), MachineSpec.parse("flat:16", "pool"), "backfill")
    flat = simulate(jobs(), MachineSpec.parse("flat:16"), "backfill")
    assert ours.jobs.column("start_s").equals(flat.jobs.column("start_s"))
    assert ours.summary["machine"] == "flat:16 allocator=pool"


def test_a_scheduler_is_one_module_and_one_row(extension, monkeypatch):
    monkeypatch.setitem(SCHEDULERS, "in-order", Scheduler(
        "in-order", "first come, first served", "my_extensions.in_order", (START_DELAY,)))
    ours = simulate(jobs(), "torus:2x2x4", PolicySpec("in-order"))
    fcfs = simulate(jobs(), "torus:2x2x4", "fcfs")
    assert ours.jobs.column("start_s").equals(fcfs.jobs.column("start_s"))
    assert ours.summary["policy"] == {"scheduler": "in-order", "start_delay_s": 0.0}


def test_a_module_that_breaks_its_contract_is_named(extension, monkeypatch):
    monkeypatch.setitem(ALLOCATORS, "broken", Allocator(
        "broken", "no build", ("flat",), "my_extensions.broken", frozenset({"counts"})))
    with pytest.raises(Exception, match=r"my_extensions.broken does not define build"):
        simulate(jobs(), MachineSpec.parse("flat:16", "broken"), "fcfs")


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
