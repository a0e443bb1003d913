"""The phased schedulers of Krevat's thesis: FCFS, then migration and/or backfilling when
the head job blocks (`fcfs`, `backfill`, `migration`, `bm` in `simcore.schedulers.registry`).

One decision: FCFS starts jobs from the head of the queue; if the head is blocked, the
block is attributed to its cause, then (if the policy migrates) a migration is tried and
FCFS runs again after a successful one, then (if it backfills) later jobs are backfilled
around the head's reservation: EASY where only counts matter (`simcore.schedulers.easy`),
weak backfilling on partitioned machines (`simcore.schedulers.backfill`). B+M is simply
both phases. With the `cplant-order` phase (`cplant`, `cplant-backfill`) the queue is
first sorted in Cplant's order (`simcore.schedulers.cplant`) instead of staying in
arrival order; with the `priority-order` phase (`priority-backfill`) it is sorted by each
job's rank (the same module). Which phases a scheduler runs is its registry row's variant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from simcore.base.jit import implements, kernel
from simcore.core.allocate import blocked_cause
from simcore.core.decide import decide
from simcore.core.state import DECISIONS, QLEN, STARTS, compact_queue
from simcore.schedulers.backfill import backfill_pass
from simcore.schedulers.cplant import sort_queue
from simcore.schedulers.easy import easy_pass
from simcore.schedulers.fcfs import fcfs_pass
from simcore.schedulers.migration import migrate

if TYPE_CHECKING:
    from simcore.schedulers.contract import Policy


class PhasedPolicy(NamedTuple):
    cplant_order: bool
    priority_order: bool
    migrate: bool
    backfill: bool
    reservation: bool
    max_growth: int
    fn_tor: float
    fn_max: float
    migrate_on_change: bool
    migrate_apply_equal: bool
    start_delay: float


def kernel_policy(policy: Policy, n_jobs: int, *, cplant_order: bool = False,
                  priority_order: bool = False, migrate: bool = False,
                  backfill: bool = False) -> PhasedPolicy:
    """The struct of a phased policy: the phases it runs besides FCFS (Cplant's or
    priority queue order, migration, backfilling) and its parameters."""
    values = policy.params()
    return PhasedPolicy(
        cplant_order, priority_order, migrate, backfill,
        values.get("reservation", True), values.get("max_growth", 0),
        values.get("fn_tor", 0.0), values.get("fn_max", 1.0),
        values.get("migrate_when") == "changed", values.get("equal_layout") != "keep",
        values["start_delay_s"])


@implements(decide, PhasedPolicy)
@kernel
def decide_phased(policy, m, st, jobs, t):
    """FCFS (in Cplant's or priority order if the policy says so), then migration and/or backfilling
    if the head blocks."""
    ctr = st.ctr
    ctr[DECISIONS] += 1
    if ctr[QLEN] == 0:
        return
    if policy.cplant_order or policy.priority_order:
        sort_queue(st, jobs, policy.priority_order)
    starts = ctr[STARTS]
    head_pos = fcfs_pass(m, st, jobs, policy.start_delay, t)
    if head_pos < ctr[QLEN]:
        cause = blocked_cause(m, st, st.queue.jobs[head_pos])
        if cause >= 0:
            ctr[cause] += 1
    if head_pos < ctr[QLEN] and policy.migrate and migrate(
            m, st, policy.fn_tor, policy.fn_max, policy.migrate_on_change,
            policy.migrate_apply_equal, t):
        head_pos = fcfs_pass(m, st, jobs, policy.start_delay, t)
    if head_pos < ctr[QLEN] and policy.backfill:
        if m.counts_only:
            easy_pass(m, st, jobs, policy.start_delay, policy.reservation, t, head_pos)
        else:
            backfill_pass(m, st, jobs, policy.start_delay, policy.max_growth,
                          policy.reservation, t, head_pos)
    if ctr[STARTS] != starts:
        compact_queue(st)
