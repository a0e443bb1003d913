"""BG/L and the plain torus with links: allocator cases, real-trace invariants, the CLI."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest

from simcore.jobs.cleaning import clean
from simcore.jobs.swf import read_swf
from simcore.machines.bgl.allocator import cable_usage, link_machine, place_links
from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.transforms import WorkloadSpec, prepare
from tests.reference import check_capacity, check_exclusive, check_timing


def machine(name):
    return link_machine(str(MachineSpec.parse(f"{name}:8x4x4").wiring))


def occupy_all_but(m, keep):
    """A busy bitset with every midplane taken except those in `keep` ((x, y, z) tuples)."""
    busy = np.zeros(m.words, dtype=np.uint64)
    for unit in range(128):
        x, y, z = unit // 16, unit // 4 % 4, unit % 4
        if (x, y, z) not in keep:
            busy[unit >> 6] |= np.uint64(1) << np.uint64(unit & 63)
    return busy


def place(m, busy, shape, torus):
    out = np.zeros(m.words, dtype=np.uint64)
    return place_links(m, busy, np.array([shape]), 1, torus, out), out


def test_a_y_line_holds_one_multi_midplane_torus():
    """y-lines are the ring 0->1->3->2->0: a 2-midplane torus takes all four cables, so a
    second one (or even a 2-midplane mesh) on the same line is refused; a one-midplane
    torus needs no cable and still fits."""
    m = machine("bgl")
    line = {(0, y, 0) for y in range(4)}
    busy = occupy_all_but(m, line)
    units, first = place(m, busy, (1, 2, 1), True)
    assert units == 2
    cables = np.unpackbits(first[m.unit_words:].view(np.uint8)).sum()
    assert cables == 4
    busy |= first
    assert place(m, busy, (1, 2, 1), True)[0] == -1
    assert place(m, busy, (1, 2, 1), False)[0] == -1
    assert place(m, busy, (1, 1, 1), True)[0] == 1


def test_allocation_is_all_or_nothing_and_release_restores():
    """Fill BG/L with tori and meshes until nothing fits: partitions never share a midplane
    or cable, a refused job changes nothing, and releasing all gives the empty machine."""
    m = machine("bgl")
    busy = np.zeros(m.words, dtype=np.uint64)
    placed = []
    for shape, torus in [((2, 2, 2), True), ((3, 1, 1), True), ((2, 1, 1), True),
                         ((1, 4, 1), True), ((4, 2, 2), False), ((1, 1, 1), True)] * 8:
        units, mask = place(m, busy, shape, torus)
        if units < 0:
            assert not mask.any()
            continue
        assert not (busy & mask).any()
        busy |= mask
        placed.append(mask)
    assert len(placed) > 10
    assert place(m, busy, (8, 4, 4), False)[0] == -1
    for mask in placed:
        busy &= ~mask
    assert not busy.any()


@functools.cache
def ctc_span(path: str, machine_text: str, p_fat: float, p_torus: float):
    table = clean(read_swf(path))
    spec = WorkloadSpec(first_jobs=3000, processors_per_unit=4, offered_load=0.9,
                        p_fat=p_fat, p_torus=p_torus)
    return prepare(table, spec, MachineSpec.parse(machine_text), seed=5)


@pytest.mark.parametrize("machine_text", ["bgl:8x4x4", "torus-links:8x4x4"])
@pytest.mark.parametrize("scheduler", [PolicySpec("fcfs"), PolicySpec("backfill"),
                                       PolicySpec("backfill", reservation=False)])
def test_real_trace_invariants_with_links(machine_text, scheduler, trace_excerpt):
    jobs = ctc_span(str(trace_excerpt("CTC-SP2-1996-3.1-cln")), machine_text, 0.5, 0.5)
    result = simulate(jobs, machine_text, scheduler)
    check_timing(result)
    check_capacity(result, 128)
    assert check_exclusive(result) == len(jobs)  # midplanes and cables, no migration
    assert result.summary["resources_left_busy"] == 0
    times, fraction = cable_usage(result, MachineSpec.parse(machine_text))
    assert fraction.min() >= 0 and fraction.max() <= 1 and fraction[-1] == 0
    span = result.summary["makespan_s"]
    mean = float((fraction[:-1] * np.diff(times)).sum() / span)
    assert mean == pytest.approx(result.summary["cable_utilization"], rel=1e-9)
    assert mean > 0


def test_bgl_beats_the_plain_torus_on_fat_tori(trace_excerpt):
    """The paper's central comparison, on a 3000-job CTC span: fat, all-torus jobs."""
    util = {}
    for machine_text in ("bgl:8x4x4", "torus-links:8x4x4"):
        jobs = ctc_span(str(trace_excerpt("CTC-SP2-1996-3.1-cln")), machine_text, 1.0, 1.0)
        util[machine_text] = simulate(jobs, machine_text, "backfill").summary["utilization"]
    assert util["bgl:8x4x4"] > 1.4 * util["torus-links:8x4x4"]


def test_cli_lists_the_papers_link_sets():
    result = subprocess.run([sys.executable, "-m", "simcore", "bgl", "links", "--dim", "x",
                             "--midplanes", "1,2,3", "--topology", "mesh", "--json"],
                            capture_output=True, text=True, check=True)
    sets = json.loads(result.stdout)["link_sets"]
    assert sets[:2] == [[3, 6], [1, 2, 3]]


def test_wired_machine_size_must_match_its_wiring():
    from simcore.base.errors import SpecError

    with pytest.raises(SpecError, match=r"machine bgl:8x4x2: its description .*bgl.yaml wires "
                                        r"a 8x4x4 machine; expected bgl:8x4x4"):
        MachineSpec.parse("bgl:8x4x2")
