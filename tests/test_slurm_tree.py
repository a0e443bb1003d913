"""slurm-tree against Slurm's own topology/tree selection: Debian's slurmctld 22.05 places
jobs on the tree lab of .ci/slurm-tree-lab.sh, and `slurm-tree` with `tree_release:
"22.05"` must choose the same nodes, job after job.

The lab's nodes are cloud nodes that never power up, so each job keeps the nodes the
controller gave it (CONFIGURING) and the next one sees them busy. Each of the lab's
partitions is one case: its own tree of 8 racks of 18 nodes under switches of 4 racks,
random busy nodes held by jobs naming them (`-w`), then jobs of random sizes placed by the
controller, the last of some cases with `--switches`, which the controller keeps pending
where the placement spans more racks. Like the other Slurm tests it runs only where asked
(TORUS_SWEEP_SLURM_TESTS=1); `.ci/run` starts the lab with the CI cluster. It cancels
every lab job before and after.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import numpy as np
import pytest

from simcore.machines.blocks.tree import place_tree
from tests.conftest import SLURM_ENV
from tests.racks import place_one

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
CONF = "/etc/slurm-treelab/slurm.conf"
CASES, RACKS, NODES = 16, 8, 18  # .ci/slurm-tree-lab.sh's layout
PROBES = 3
SETTLE_S = 60.0  # how long the controller may take to consider every job


def lab(*args: str) -> str:
    """A Slurm client command against the lab; its output."""
    result = subprocess.run(list(args), capture_output=True, text=True, check=False,
                            env={**os.environ, "SLURM_CONF": CONF}, timeout=60)
    if result.returncode:
        raise AssertionError(f"{' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


@pytest.fixture(scope="module")
def treelab():
    """The tree lab, answering and emptied, where the user opted in."""
    if os.environ.get(SLURM_ENV) != "1":
        pytest.skip(f"submits jobs to Slurm: set {SLURM_ENV}=1 where the tree lab of "
                    ".ci/slurm-tree-lab.sh runs (.ci/run starts it)")
    if not os.path.exists(CONF) or "UP" not in lab("scontrol", "ping"):
        pytest.fail(f"{SLURM_ENV}=1 but no tree lab answers at {CONF}; start it with "
                    "`bash .ci/slurm-tree-lab.sh up` (after .ci/slurm-up.sh)", pytrace=False)
    assert "TotalNodes=144" in lab("scontrol", "show", "partition", "c00")
    empty()  # an earlier run's jobs
    yield
    empty()


def empty() -> None:
    """Cancel every lab job and wait until none is left (their nodes are idle at once:
    the lab never powers nodes down)."""
    lab("scancel", "--user", "root")
    deadline = time.monotonic() + SETTLE_S
    while lab("squeue", "-h", "-o", "%i").strip():
        assert time.monotonic() < deadline, f"lab jobs still listed after {SETTLE_S} s"
        time.sleep(0.2)  # polling the controller, not timing anything


def units_of(nodelist: str) -> set[int]:
    """Units of a Slurm node list of one case (`c03r1n[00-11],c03r2n05`)."""
    names = lab("scontrol", "show", "hostnames", nodelist).split()
    out = set()
    for name in names:
        match = re.fullmatch(r"c\d\dr(\d)n(\d\d)", name)
        assert match, name
        out.add(int(match.group(1)) * NODES + int(match.group(2)))
    return out


def cases(seed: int = 42):
    """Per case: the busy nodes of each rack, and the probes (size, --switches or 0)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(CASES):
        busy_share = rng.choice([0.0, 0.3, 0.6, 0.9], size=RACKS)
        busy = [sorted(int(i) for i in np.flatnonzero(rng.random(NODES) < share))
                for share in busy_share]
        free = RACKS * NODES - sum(len(b) for b in busy)
        probes = []
        for k in range(PROBES):
            if free < 1:
                break
            n = int(rng.integers(1, min(free, 60) + 1))
            switches = int(rng.integers(1, 3)) if k == PROBES - 1 and rng.random() < 0.5 else 0
            probes.append((n, switches))
            free -= n
        out.append((busy, probes))
    return out


def submit(partition: str, nodes: int, *extra: str) -> str:
    out = lab("sbatch", "--parsable", "-p", partition, "-N", str(nodes), "--exclusive",
              "-o", "/dev/null", *extra, "--wrap", "sleep 3600")
    return out.strip().split(";")[0]


def settled() -> dict[str, tuple[str, str, str]]:
    """Every lab job's (state, reason, nodes) once none is left unconsidered."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        jobs = {}
        for line in lab("squeue", "-h", "-o", "%i|%T|%r|%N").splitlines():
            job, state, reason, nodes = line.split("|")
            jobs[job] = (state, reason, nodes)
        waiting = [j for j, (state, reason, _) in jobs.items()
                   if state == "PENDING" and reason in ("None", "Priority")]
        if not waiting:
            return jobs
        assert time.monotonic() < deadline, f"jobs not considered in {SETTLE_S} s: {waiting}"
        time.sleep(0.5)  # polling the controller, not timing anything


def test_slurm_tree_chooses_the_nodes_slurmctld_chooses(treelab):
    plan = cases()
    submitted = []
    for c, (busy, probes) in enumerate(plan):
        partition = f"c{c:02d}"
        for r, nodes in enumerate(busy):
            if nodes:
                names = ",".join(f"{partition}r{r}n{u:02d}" for u in nodes)
                submit(partition, len(nodes), "-w", names)
        jobs = [submit(partition, n, *((f"--switches={k}",) if k else ()))
                for n, k in probes]
        submitted.append(jobs)
    state = settled()
    compared = pending = 0
    for (busy, probes), jobs in zip(plan, submitted, strict=True):
        taken = {r * NODES + u for r, nodes in enumerate(busy) for u in nodes}
        for (n, switches), job in zip(probes, jobs, strict=True):
            ours = place_one(place_tree, f"blocks:{RACKS}x{NODES}", "slurm-tree", n,
                             taken, rack_groups="4", tree_release="22.05",
                             switches=switches)
            status, reason, nodes = state[job]
            if status == "PENDING":
                assert ours is None and switches, (job, n, switches, reason)
                pending += 1
                break  # FIFO: the partition's later jobs wait behind it
            assert status == "CONFIGURING", (job, status, reason)
            assert units_of(nodes) == ours, (job, n, nodes, sorted(ours or ()))
            taken |= ours
            compared += 1
    assert compared >= CASES * 2 and pending >= 1
