"""Schedulers, one registry row each.

A row names the scheduler, its parameters (type, default, meaning, range), the allocator
capabilities it needs (see `simcore.machines.registry`), the kernel module that builds its
policy struct and implements `simcore.core.decide` for it
(`simcore.schedulers.contract.SchedulerModule`), and, where rows share a module, its
`variant`: the keyword arguments it passes to the module (the phases a phased scheduler
runs, a queue discipline's order). Time-sharing schedulers (gang, spin-block, FCS) run
on an engine of their own (`engine`: the module simulates the whole run,
`simcore.schedulers.contract.EngineModule`, here `simcore.timeshare.engine`) instead of
the space-sharing event engine. The command line, the config schema, the result columns,
the tables and `simcore list` all derive from `SCHEDULERS`; adding a scheduler is one
kernel module plus one row here. A row's module is imported, and checked against its
protocol, when first used (`Scheduler.implementation`). `simcore.policy` validates a
policy (`PolicySpec`) against these rows.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simcore.base.errors import SpecError
from simcore.base.params import Parameter
from simcore.schedulers.contract import SchedulerImplementation

START_DELAY = Parameter(
    "start_delay_s", float, 0.0, "seconds between allocation and start; the units are held "
    "meanwhile (Krevat's simulator: 1 s)", unit="s", minimum=0.0)
RESERVATION = Parameter(
    "reservation", bool, True, "keep a reservation for the blocked head job (weak or EASY "
    "backfilling); false: plain skip-ahead")
MAX_GROWTH = Parameter(
    "max_growth", int, 1, "units a job may grow by to be backfilled (Krevat's I)",
    unit="units", minimum=0, needs="grows", neutral=0)
ESTIMATES = Parameter(
    "estimates", str, "requested", "run times as the scheduler believes them: 'requested' (the "
    "requested time where the trace gives one, else the run time) or 'actual'",
    choices=("requested", "actual"))
FN_TOR = Parameter(
    "fn_tor", float, 0.1, "migrate only when free units / machine units >= fn_tor (Krevat: "
    "0.1; always migrate: 0)", unit="fraction", minimum=0.0, maximum=1.0)
WTL = Parameter(
    "wtl", float, None, "waiting-time limit (Chu): a waiting job that has waited this long "
    "stops Scan All passes and immediate starts of arrivals; null: no limit",
    unit="s", minimum=0.0, optional=True)
SCAN_ALL = Parameter(
    "scan_all", bool, False, "the Scan All form: passes go on past jobs that do not fit "
    "(unless past the WTL) and arrivals start at once when they fit")
QUEUES = Parameter("queues", int, 32, "number of queues Q (Chu: the mesh side, 32)",
                   unit="queues", minimum=1)
SCAN = Parameter("scan", str, "down", "down: large jobs in the first queues (ScanDown); up: "
                 "small jobs first (ScanUp)", choices=("down", "up"))
CRITERION = Parameter("criterion", str, "processors", "what puts a job in a queue: its "
                      "processors, or its larger or smaller side",
                      choices=("processors", "larger-side", "smaller-side"))
BLOCKING = Parameter("blocking", bool, False, "stop a pass at the first job that does not "
                     "fit (Krueger's original Scan) instead of scanning all queues")
MAX_PRI = Parameter("max_pri", int, None, "Das Sharma and Pradhan's MAX_PRI: once more than "
                    "this many later arrivals got ahead of the first waiting job, nothing "
                    "else is started or reserved before it; null: never",
                    unit="jobs", minimum=0, optional=True)
RESERVE = Parameter("reserve", bool, True, "reserve a submesh for jobs that do not fit (the "
                    "one holding the fewest free processors)")
MIGRATE_WHEN = Parameter(
    "migrate_when", str, "changed", "when a migration is attempted (thresholds permitting): "
    "'changed', at a blocked decision only if a job started or ended since the last attempt "
    "(Krevat: 'every time the state of the torus is modified'), or 'blocked', at every "
    "decision whose head job is blocked", choices=("changed", "blocked"))
EQUAL_LAYOUT = Parameter(
    "equal_layout", str, "apply", "a migration that leaves the largest free partition as it "
    "was: 'apply' the new layout or 'keep' the old one (a worse one is always kept)",
    choices=("apply", "keep"))
FN_MAX = Parameter(
    "fn_max", float, 0.7, "... and units of the largest free partition / free units <= "
    "fn_max (Krevat: 0.7; always migrate: 1)", unit="fraction", minimum=0.0, maximum=1.0)
MPL = Parameter(
    "mpl", int, 6, "multiprogramming level: rows (time slots) of the Ousterhout matrix, so "
    "processes a processor holds at most (FCS dynamic study: 6)", unit="jobs", minimum=1)
QUEUE = Parameter(
    "queue", str, "easy", "how waiting jobs enter the matrix: 'fcfs', or 'easy' (EASY "
    "backfilling, estimates x mpl)", choices=("fcfs", "easy"))
TIME_SLICE = Parameter(
    "time_slice_s", float, 0.1, "T_slice: time between global context switches (FCS Table "
    "2: 100 ms)", unit="s", minimum=0.0, exclusive_minimum=True)
SPIN = Parameter(
    "spin_s", float, 120e-6, "T_spin: how long a waiting process spins before it blocks "
    "(FCS Table 2: 120 us)", unit="s", minimum=0.0)
QUANTUM = Parameter(
    "quantum_s", float, 12.1e-3, "the local scheduler's quantum: how long a process that "
    "never waits, or computes longer, holds its processor before a woken one gets it "
    "(fitted to the spin-block rows of FCS scenarios 2 and 3)", unit="s", minimum=0.0,
    exclusive_minimum=True)
BLOCK_COST = Parameter(
    "block_cost_s", float, 31e-6, "CPU cost of blocking and being woken, two local context "
    "switches (fitted with quantum_s)", unit="s", minimum=0.0)
#: Cost of a global context switch on a processor whose process changes, derived once
#: from scenario 1 under gang scheduling (120 s of work end at 124 s with two jobs
#: alternating every 100 ms slice): 0.1 s x (1 - 120 / 124).
SWITCH_COST_S = 0.1 * (1 - 120 / 124)
SWITCH_COST = Parameter(
    "switch_cost_s", float, SWITCH_COST_S, "cost of a global context switch, paid at a slice "
    "start by each processor whose process changes (fitted to FCS scenario 1's gang row: "
    "3.23 ms)", unit="s", minimum=0.0)
MATRIX = Parameter(
    "matrix", str, "alternate", "gang: 'alternate': in each slice, whole jobs of other rows "
    "also run where all their processors are idle in the active row (alternate scheduling), "
    "and a job moves down to a lower row when its processors are all free there (row "
    "packing), an inference from the paper's \"conventional gang scheduling\" on an "
    "Ousterhout matrix; 'strict': a row's jobs run only in its own slice",
    choices=("alternate", "strict"))
F_PRIORITY = Parameter(
    "f_priority", str, "slot", "FCS: F processes are served before the others in their own "
    "slot ('slot', the paper's Algorithm 1) or in every slot without a CS process "
    "('always')", choices=("slot", "always"))

#: The confidence level of every interval the tables and figures report, but where a
#: study states its own (`Scheduler.confidence`).
CONFIDENCE = 0.95
#: Chu (1995): response times to 90% confidence.
CHU_CONFIDENCE = 0.90


@dataclass(frozen=True)
class Scheduler:
    """A registered scheduler (see the module docstring)."""

    name: str
    summary: str
    module: str
    parameters: tuple[Parameter, ...]
    needs: frozenset[str] = frozenset()
    variant: Mapping[str, Any] = field(default_factory=dict, hash=False)
    engine: bool = False
    #: The confidence level of its runs' intervals in the tables and figures: the one
    #: its study states (Chu's queue disciplines: CHU_CONFIDENCE), else CONFIDENCE.
    confidence: float = CONFIDENCE
    #: The parameter values under which it migrates at every chance (Krevat's "always
    #: migrate"): its runs with them bound the successful migrations of its other runs
    #: (the migrations table's maximum successful); empty: it has no such setting.
    always_migrate: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @functools.cached_property
    def implementation(self) -> SchedulerImplementation:
        """Its module, checked against its protocol and the variant (imported on first
        use, once)."""
        return SchedulerImplementation.resolve(self.module, self.variant, self.engine,
                                               f"scheduler {self.name}")



_PHASED = "simcore.schedulers.phased"
_QUEUES = "simcore.schedulers.queues"
#: Chu's queues keep their own order of waiting jobs, which requeued jobs would bypass.
_QUEUED = frozenset({"steady"})
#: Krevat's thresholds for migrating at every chance.
_ALWAYS = {"fn_tor": 0.0, "fn_max": 1.0}
_TIMESHARE = "simcore.timeshare.engine"
_TIMESHARED = frozenset({"counts", "steady"})  # any units; its engine has no failures
SCHEDULERS: dict[str, Scheduler] = {row.name: row for row in (
    Scheduler("fcfs", "first come, first served; on tori and meshes Krevat's "
              "largest-free-partition placement, growing a blocked head minimally",
              _PHASED, (START_DELAY,)),
    Scheduler("backfill", "FCFS, then backfilling behind a blocked head: weak backfilling "
              "on partitioned machines, EASY (Mu'alem-Feitelson) where only counts matter",
              _PHASED, (START_DELAY, RESERVATION, MAX_GROWTH, ESTIMATES),
              variant={"backfill": True}),
    Scheduler("migration", "FCFS, then Krevat's migration when the head blocks (re-place "
              "running jobs to enlarge the largest free partition)",
              _PHASED, (START_DELAY, FN_TOR, FN_MAX, MIGRATE_WHEN, EQUAL_LAYOUT),
              needs=frozenset({"migrates"}), variant={"migrate": True}, always_migrate=_ALWAYS),
    Scheduler("bm", "Krevat's backfilling + migration: FCFS, migration, FCFS, backfilling",
              _PHASED, (START_DELAY, RESERVATION, MAX_GROWTH, ESTIMATES, FN_TOR, FN_MAX,
                        MIGRATE_WHEN, EQUAL_LAYOUT),
              needs=frozenset({"migrates"}), variant={"migrate": True, "backfill": True},
              always_migrate=_ALWAYS),
    Scheduler("conservative", "conservative backfilling: every job gets the earliest "
              "reservation that delays no earlier one; early completions compress the plan",
              "simcore.schedulers.conservative", (START_DELAY, ESTIMATES),
              needs=frozenset({"counts", "steady"})),
    Scheduler("immediate-fit", "Chu's Immediate Fit: an arrival starts at once if it fits "
              "(unless a job has waited WTL); completions start jobs from the head until one "
              "does not fit", _QUEUES, (START_DELAY, WTL), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "arrival", "scan_all": False, "immediate": True}),
    Scheduler("scan-all", "Chu's Scan All: as Immediate Fit, but completions start every "
              "waiting job that fits, stopping only at one past the WTL", _QUEUES,
              (START_DELAY, WTL), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "arrival", "scan_all": True, "immediate": True}),
    Scheduler("mq", "Chu's Multiple Queues: Q queues by size (ScanUp or ScanDown), passes "
              "over queue 1, 2, ... as Scan All", _QUEUES,
              (START_DELAY, WTL, QUEUES, SCAN, CRITERION, BLOCKING), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "queues", "scan_all": True, "immediate": True}),
    Scheduler("smallest-jf", "Smallest Job First: waiting jobs by processors, ascending",
              _QUEUES, (START_DELAY, WTL, SCAN_ALL), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "smallest", "scan_all": False, "immediate": False}),
    Scheduler("largest-jf", "Largest Job First: waiting jobs by processors, descending",
              _QUEUES, (START_DELAY, WTL, SCAN_ALL), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "largest", "scan_all": False, "immediate": False}),
    Scheduler("sjf", "Shortest Job First: waiting jobs by estimated run time", _QUEUES,
              (START_DELAY, WTL, SCAN_ALL, ESTIMATES), needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "shortest", "scan_all": False, "immediate": False}),
    Scheduler("smallest-sdjf", "Smallest Service Demand Job First: waiting jobs by estimated "
              "run time x processors", _QUEUES, (START_DELAY, WTL, SCAN_ALL, ESTIMATES),
              needs=_QUEUED,
              confidence=CHU_CONFIDENCE,
              variant={"order": "demand", "scan_all": False, "immediate": False}),
    Scheduler("priority", "Das Sharma and Pradhan's priority scheduling with reservations "
              "(MAX_PRI) on 2D meshes", "simcore.schedulers.priority",
              (START_DELAY, MAX_PRI, RESERVE),
              needs=frozenset({"submeshes", "partitions", "steady"}),
              confidence=CHU_CONFIDENCE),
    Scheduler("cplant", "Cplant's queue order (Leung et al.): ascending requested "
              "units, then requested time, then arrival; jobs start from the front while "
              "they fit (FCFS placement)", _PHASED, (START_DELAY, ESTIMATES),
              variant={"cplant_order": True}),
    Scheduler("cplant-backfill", "Cplant's queue order, then backfilling behind a blocked "
              "front job as `backfill` does (the same schedule as cplant where placement "
              "depends on sizes only)", _PHASED, (START_DELAY, RESERVATION, MAX_GROWTH,
                                                  ESTIMATES),
              variant={"cplant_order": True, "backfill": True}),
    Scheduler("priority-backfill", "priority order: waiting jobs by rank (submit time less "
              "the job's priority head start; none: arrival order), then "
              "backfilling behind a blocked front job as `backfill` does", _PHASED,
              (START_DELAY, RESERVATION, MAX_GROWTH, ESTIMATES),
              variant={"priority_order": True, "backfill": True}),
    Scheduler("gang", "gang scheduling: an Ousterhout matrix of mpl rows; each row's jobs "
              "run alone in its time slice, with a global context switch between slices "
              "(matrix=alternate: other rows' whole jobs fill its idle processors)",
              _TIMESHARE, (MPL, QUEUE, ESTIMATES, TIME_SLICE, SWITCH_COST, MATRIX),
              needs=_TIMESHARED,
              engine=True, variant={"mode": "gang"}),
    Scheduler("spin-block", "implicit coscheduling: each processor time-shares its "
              "processes itself; a waiting process spins T_spin, then blocks",
              _TIMESHARE, (MPL, QUEUE, ESTIMATES, SPIN, QUANTUM, BLOCK_COST), needs=_TIMESHARED,
              engine=True, variant={"mode": "spin-block"}),
    Scheduler("fcs", "Flexible CoScheduling: processes classified CS (gang-scheduled), F "
              "(served first in their slot, else spin-block) or DC (fill the gaps) from "
              "their measured granularity", _TIMESHARE,
              (MPL, QUEUE, ESTIMATES, TIME_SLICE, SPIN, SWITCH_COST, F_PRIORITY, QUANTUM,
               BLOCK_COST),
              needs=_TIMESHARED, engine=True, variant={"mode": "fcs"}),
)}


def get_scheduler(name: str) -> Scheduler:
    """The registry row of scheduler `name`."""
    if name not in SCHEDULERS:
        raise SpecError(f"scheduler {name!r}; expected one of {', '.join(SCHEDULERS)}")
    return SCHEDULERS[name]


def all_parameters() -> dict[str, Parameter]:
    """Every scheduler parameter by name (one definition per name across schedulers)."""
    out: dict[str, Parameter] = {}
    for row in SCHEDULERS.values():
        for p in row.parameters:
            if out.setdefault(p.name, p) is not p:
                raise SpecError(f"scheduler parameter {p.name} is defined twice")
    return out
