"""Machine kinds and their allocators: one row each.

Machine specs (`simcore.machines.spec`), the command line (`--machine`, `--allocator`),
the config schema, the checks between schedulers and machines, memory limits and
`simcore list` all derive from `KINDS` and `ALLOCATORS`. A kind is a topology; an
allocator is the module that chooses units on it: it builds the machine struct the
kernels run on (`build(spec, jobs)`), states what its tables cost (`memory_bytes(spec)`)
and implements the operations of `simcore.core.allocate` for its struct
(`simcore.machines.contract.AllocatorModule`). Rows that share a module differ by their
`variant`, the keyword arguments they pass to its `build`. Adding one is a module plus a
row here (docs/extending.md). A row's modules are imported, and checked against their
protocols, when first used (`Allocator.implementation`), not with the registry.

Every machine, whatever its allocator, also takes the options of a failure process
(`FAILURE_OPTIONS`, see `simcore.core.failures`).

Allocators offer capabilities that schedulers may need (`Scheduler.needs`); `steady` is a
machine's rather than an allocator's: it holds unless the machine has a failure process:
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simcore.base.contracts import hooks, load
from simcore.base.errors import SpecError
from simcore.base.params import Parameter
from simcore.machines.contract import (
    CAPABILITIES,
    STEADY,
    AllocatorImplementation,
    KindGrammar,
    KindHooks,
    OrderingModule,
    UnitLayout,
    WiringReader,
)

__doc__ += "".join(f"\n- {name}: {meaning};" for name, meaning in CAPABILITIES.items())


@dataclass(frozen=True)
class MachineKind:
    """A topology. Wired kinds read their wiring from `<name>.yaml` (any such file makes
    a machine of that name) with the module `wiring`; `shaped_jobs`: jobs ask for shapes
    (p_fat, p_torus apply).
    `grammar`: a module reading the kind's own spec argument (`kind:ARGUMENT`, instead of
    `kind:AxBxC`) with `parse_argument(argument) -> dims` and `argument_key(argument)`
    (the content hash of a file it names, or ""), and where its units are not row-major
    over the dimensions, `unit_layout(argument)` (`KindHooks`). `packed`: its units have no
    identity (any free ones will do), so a schedule's exports number them as a packing."""

    name: str
    summary: str
    example: str
    default_allocator: str
    min_dims: int = 1
    max_dims: int | None = 3
    wraps: bool = False
    wiring: str | None = None
    shaped_jobs: bool = False
    grammar: str | None = None
    packed: bool = False

    @property
    def wired(self) -> bool:
        return self.wiring is not None

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules that read this kind's descriptions (its grammar, its wiring)."""
        return tuple(m for m in (self.grammar, self.wiring) if m is not None)

    def grammar_module(self) -> KindGrammar:
        """The module reading the kind's spec argument."""
        assert self.grammar is not None
        return load(self.grammar, KindGrammar, f"machine kind {self.name}")

    def unit_layout(self, argument: str) -> UnitLayout | None:
        """Where the units of its machine `argument` are, from its grammar module (None:
        row-major over the dimensions, `KindHooks.unit_layout`)."""
        if self.grammar is None:
            return None
        return hooks(self.grammar_module(), KindHooks)["unit_layout"](argument)

    def wiring_module(self) -> WiringReader:
        """The module reading wiring files."""
        assert self.wiring is not None
        return load(self.wiring, WiringReader, f"machine kind {self.name}")


@dataclass(frozen=True)
class Allocator:
    """A rule choosing units on machines of `kinds`, implemented by `module`, which
    `variant` (keyword arguments of the module's `build`) tells which of its rules to
    apply. `ordering`: the module of the processor orderings it packs jobs along, which
    machines using it name; `parameters` are options set per machine; `max_dims`: the most
    dimensions it handles (None: any)."""

    name: str
    summary: str
    kinds: tuple[str, ...]
    module: str
    capabilities: frozenset[str]
    parameters: tuple[Parameter, ...] = ()
    ordering: str | None = None
    example: str = ""  # a machine it runs on, where its kinds' examples do not
    max_dims: int | None = None
    variant: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def machine_example(self) -> str:
        return self.example or KINDS[self.kinds[0]].example

    @property
    def ordered(self) -> bool:
        return self.ordering is not None

    @functools.cached_property
    def implementation(self) -> AllocatorImplementation:
        """Its module, checked against `simcore.machines.contract.AllocatorModule` and
        the variant (imported on first use, once)."""
        return AllocatorImplementation.resolve(self.module, self.variant,
                                               f"allocator {self.name}")

    def ordering_module(self) -> OrderingModule:
        """The module of its processor orderings."""
        assert self.ordering is not None
        return load(self.ordering, OrderingModule, f"allocator {self.name}")

    @property
    def options(self) -> tuple[Parameter, ...]:
        """What a machine using this allocator may set: its parameters and the failure
        process."""
        return self.parameters + FAILURE_OPTIONS


FALLBACK_SPAN = Parameter(
    "fallback_span", str, "linear", "when no free interval of the ordering holds the job: the "
    "p consecutive free processors of smallest linear span (last rank - first rank) or, "
    "wrapping around the ordering, of smallest ring span; ties: the smallest first rank",
    choices=("linear", "ring"))
DILATION = Parameter(
    "dilation", float, 0.0, "run-time dilation model: a job runs run x (1 + dilation x "
    "max(0, h / h_compact - 1)), h its mean pairwise hop distance and h_compact that of the "
    "most compact placement of its size; 0: run times as given", unit="factor", minimum=0.0)
SEARCH = Parameter(
    "search", str, "auto", "how the largest-free rule finds boxes (same schedules either "
    "way): 'table' lists every box (fast on small machines, memory grows as units^2), "
    "'maximal' keeps the maximal free boxes (any size), 'auto' the table up to "
    "TABLE_MAX_BOXES boxes", choices=("auto", "table", "maximal"))
UNLISTED = Parameter(
    "unlisted", str, "round-up", "a job whose size no placement has: 'round-up' to the "
    "smallest larger placement size (the extra nodes lost capacity) or 'refuse' it (Slurm's "
    "behaviour; left out of the run and counted)", choices=("round-up", "refuse"))
SEGMENTS = Parameter(
    "segments", bool, False, "a job larger than the largest placement runs as segments of "
    "that size, each placed by the rule (Slurm's --segment; with unlisted=refuse only if "
    "the size divides the job)")
BLOCK_SIZES = Parameter(
    "block_sizes", str, "", "Slurm's BlockSizes, in nodes: the planning size of a base block "
    "(at most its nodes; fewer leaves spare nodes), then aggregation levels, each that size "
    "times a power of two (e.g. '18,72,288'); '': levels of 1, 2, 4, 8 and 16 base blocks")
SEGMENT = Parameter(
    "segment", str, "whole", "the --segment each job asks for: 'whole' (no segment: the "
    "job is placed in one block of a level), a node count s (every job: ceil(n / s) segments of s "
    "nodes, each inside one base block; the nodes added by rounding up are lost capacity) "
    "or a named size policy of SEGMENT_POLICIES (e.g. 'recommended')")
SEGMENT_PLACEMENT = Parameter(
    "segment_placement", str, "plain", "where a job's segments go: 'plain' (each by the "
    "rule on what the earlier ones left, sharing base blocks), 'spread' (--spread-segments: "
    "a base block serves one segment), 'consolidate' (--consolidate-segments: all inside "
    "one block of the level the whole job needs) or 'consolidate-spread' (both)",
    choices=("plain", "spread", "consolidate", "consolidate-spread"))
BLOCK_DILATION = Parameter(
    "block_dilation", float, 0.0, "cross-block run-time dilation d: a job whose nodes span "
    "k base blocks runs (1 + d (k - 1) / k) times its run time; 0: run times as given "
    "(apart from the curve allocators' hop-distance `dilation`)", unit="factor",
    minimum=0.0)
FAILURE_DOMAIN = Parameter(
    "failure_domain", str, "node", "what fails as a whole: a 'node', or a 'block' (a base "
    "block: a rack's switch tray or power shelf), which fails at the rate of its nodes "
    "together", choices=("node", "block"))
RACK_GROUPS = Parameter(
    "rack_groups", str, "4,16", "the switches above the racks: racks per switch at each "
    "level, ascending, each a multiple of the one before (groups of consecutive racks); "
    "one root joins them all; '': racks under the root alone")
SWITCHES = Parameter(
    "switches", int, 0, "Slurm's --switches=k for every job: a placement over more than k "
    "racks (leaf switches) waits until switch_wait_s has passed; 0: no limit", minimum=0)
SWITCH_WAIT = Parameter(
    "switch_wait_s", float, 300.0, "how long a job waits for a placement within its "
    "switches, from the first placement tried for it (Slurm's max_switch_wait)", unit="s",
    minimum=0.0)
TREE_RELEASE = Parameter(
    "tree_release", str, "25.11", "the Slurm release whose cons_tres tree selection is "
    "followed: '22.05' differs after the first leaf (a nearer leaf replaces the best so far "
    "unless the comparison prefers the best; switch counts not decreased as leaves are used "
    "up)", choices=("25.11", "22.05"))
RING_OPTIONS = (
    Parameter("ring_racks", int, 0, "racks per ring: the nodes of that many consecutive "
              "racks, in order, form a ring whose last node is next to its first; 0: one "
              "ring of every node", minimum=0),
    Parameter("ring_segment", int, 0, "Slurm's --segment=s for every job: k = n / s runs of "
              "s nodes, each in a different ring (sizes rounded up to whole segments, the "
              "nodes added lost capacity; a job no larger than s is one run); 0: none",
              minimum=0),
)
TAS_OPTIONS = (
    Parameter("tas_request", str, "preferred", "each pod set's topology request: "
              "'required' (one domain of tas_level, else it waits; refused where the idle "
              "machine has none), 'preferred' (one domain of tas_level, else of the level "
              "above, else several at the top) or 'unconstrained' (any hosts)",
              choices=("required", "preferred", "unconstrained")),
    Parameter("tas_level", str, "rack", "the level of the request: 'host', 'rack', a rack "
              "count of rack_groups (e.g. '4') or 'fit' (each job the lowest level whose "
              "domains can hold it; larger than all: preferred at the top)"),
    Parameter("slice_size", int, 0, "podset-slice-size S: the pod set runs as slices of S "
              "pods, each inside one domain of slice_level (sizes rounded up to whole "
              "slices, the nodes added lost capacity); 0: none", minimum=0),
    Parameter("slice_level", str, "rack", "podset-slice-required-topology: 'rack' or a rack "
              "count of rack_groups, at or below tas_level"),
    Parameter("tas_profile", str, "mixed", "the placement profile: 'mixed' (v0.15's "
              "default: LeastFreeCapacity for unconstrained requests, BestFit for the "
              "others), 'best-fit' (every request) or 'least-free' (every request)",
              choices=("mixed", "best-fit", "least-free")),
)
_BUSY_LIST_OPTIONS = (
    Parameter("edges", bool, True, "nodes beyond a mesh edge count as busy neighbours in "
              "a candidate's boundary value"),
    Parameter("mesh_corners", str, "first", "where the candidates at the mesh's corners "
              "come among the busy list's (ties go to the first candidate)",
              choices=("first", "last")),
)
_BL_MOD_OPTIONS = (*_BUSY_LIST_OPTIONS, Parameter(
    "positions", str, "sides", "candidates: 'sides' (every position along the busy "
    "submeshes' sides and the mesh corners, in busy-list order) or 'anywhere' (every free "
    "position; ties: smallest x, then smallest y)", choices=("sides", "anywhere")))
_BDI_OPTIONS = (
    Parameter("rotation", str, "on-failure", "J(h, w) is tried only when J(w, h) finds no "
              "free region (Fig. 8.3), or 'both' orientations are scored together",
              choices=("on-failure", "both")),
    Parameter("distance", str, "line", "a busy distance: hops along the corner's row or "
              "column ('line'), or to the nearest busy node of the half-plane that way "
              "('half-plane'); the boundary counts as busy just outside the mesh either way",
              choices=("line", "half-plane")),
    Parameter("candidates", str, "regions", "the candidates scored: the four corners of "
              "every free region (Fig. 8.3), the busy list's ('busy-list': the mesh corners "
              "and every free position along the busy submeshes' sides) or Best Fit's "
              "corners of the coverage array ('best-fit')",
              choices=("regions", "busy-list", "best-fit")),
)
#: Options of the 2D-mesh rows that read the thesis in more than one way (docs/chu.md).
_MESH2D_OPTIONS = {"bl": _BUSY_LIST_OPTIONS, "bl-mod": _BL_MOD_OPTIONS, "bdi": _BDI_OPTIONS}
_CURVES = "simcore.machines.curves.allocator"
_ORDERINGS = "simcore.machines.curves.orderings"
_CUBES = "simcore.machines.cubes.allocator"

#: A failure process, on any machine (simcore.core.failures).
FAILURE_OPTIONS = (
    Parameter("unit_mtbf_s", float, None, "mean time between failures of one unit: a failure "
              "domain of k units (a unit, a cube) fails at rate k / unit_mtbf_s, up times "
              "exponential, drawn from the run's seed; null: no drawn failures", unit="s",
              minimum=0.0, exclusive_minimum=True, optional=True),
    Parameter("repair_s", float, 14400.0, "time a failed domain stays out of service",
              unit="s", minimum=0.0, exclusive_minimum=True),
    Parameter("failure_trace", str, None, "a file of outages instead, one per line "
              "'time_s domain repair_s' (time from the first arrival); null: none",
              optional=True),
    Parameter("down_fraction", float, 0.0, "a static down set: each failure domain, with this "
              "probability (drawn from the run's seed), out of service for the whole run (no "
              "job hit); jobs that could never be placed without it are refused and counted",
              unit="share", minimum=0.0, maximum=0.99),
    Parameter("on_failure", str, "requeue", "a job running on a unit that fails: 'requeue' "
              "(back to the queue at its arrival position, to run again from the start), "
              "'kill' (it ends there) or 'drain' (it runs on; the unit goes out of service "
              "when it comes free: an announced outage; flat machines)",
              choices=("requeue", "kill", "drain")),
)

WIRED = "wired"
KINDS: dict[str, MachineKind] = {row.name: row for row in (
    MachineKind("flat", "N fully connected units", "flat:128", "any-free",
                max_dims=1, packed=True),
    MachineKind("torus", "units on a torus: partitions wrap around in every dimension",
                "torus:4x4x8", "largest-free", max_dims=None, wraps=True),
    MachineKind("mesh", "units on a mesh: partitions do not wrap", "mesh:8x8x5",
                "largest-free", max_dims=None),
    MachineKind("slurm-torus3d", "tori whose jobs take an anchor box of a placement of their "
                "size from a Slurm topology/torus3d menu: a topology.yaml, by path or in "
                "config/machines/torus3d/", "slurm-torus3d:example-8x4x4.yaml", "torus3d-menu",
                max_dims=1, grammar="simcore.machines.slurm.menu"),
    MachineKind("cubes", "AxBxC cubes of SxSxS chips joined by optical circuit switches "
                "(TPU v4-style pods); jobs ask for chip shapes", "cubes:4x4x4:4", "any-cubes",
                min_dims=3, grammar="simcore.machines.cubes.grammar"),
    MachineKind("blocks", "A base blocks of B nodes each (GPU racks: NVL72 is 18 nodes), "
                "aggregated into blocks of consecutive base blocks (Slurm's topology/block)",
                "blocks:64x18", "slurm-block", min_dims=2, max_dims=2,
                grammar="simcore.machines.blocks.grammar"),
    MachineKind(WIRED, "BG/L-style midplanes with per-line switches and cables, described "
                "by a file <name>.yaml (config/machines/)", "bgl:8x4x4", "two-phase",
                min_dims=3, wiring="simcore.machines.bgl.wiring", shaped_jobs=True),
)}

ALLOCATORS: dict[str, Allocator] = {row.name: row for row in (
    Allocator("any-free", "any free units (a flat machine)", ("flat",),
              "simcore.machines.flat", frozenset({"counts"})),
    Allocator("largest-free", "Krevat's rule: the box of the job's size (else the smallest "
              "larger one) that leaves the largest free partition, from the box table",
              ("torus", "mesh"), "simcore.machines.boxes.allocator",
              frozenset({"partitions", "grows", "migrates"}), (SEARCH,)),
    Allocator("two-phase", "Aridor et al.'s two-phase allocation: a free box of midplanes "
              "for the job's shape, then per line the link set with the fewest cables",
              (WIRED,), "simcore.machines.bgl.allocator", frozenset()),
    *(Allocator(name, summary, ("mesh",), f"simcore.machines.mesh2d.{module}",
                frozenset({"submeshes", "partitions"} if complete else {"submeshes"}),
                _MESH2D_OPTIONS.get(name, ()), example="mesh:32x32", variant=variant)
      for name, module, variant, complete, summary in (
        ("2dbs", "buddy2d", {}, False, "Li and Cheng's 2D buddy system: the job gets a "
         "2^k x 2^k block from free block lists (square power-of-two meshes)"),
        ("fs", "frame_sliding", {}, False, "Chuang and Tzeng's frame sliding: w x h frames "
         "slide by w and h from the lowest leftmost free node (may miss a free submesh)"),
        ("ff", "zhu", {"best": False, "rotate": False}, True, "Zhu's first fit: the first "
         "base in the coverage array (smallest x, then largest y)"),
        ("bf", "zhu", {"best": True, "rotate": False}, True, "Zhu's best fit: the coverage "
         "array's corner with the most busy neighbours, then the smallest area"),
        ("ff-rot", "zhu", {"best": False, "rotate": True}, True, "first fit, then the job "
         "rotated (Chu's modified FF)"),
        ("bf-rot", "zhu", {"best": True, "rotate": True}, True, "best fit over both "
         "orientations (Chu's modified BF)"),
        ("as", "adaptive_scan", {}, True, "Ding and Bhuyan's adaptive scan: bottom-up, left "
         "to right with strides over coverage submeshes, then the job rotated"),
        ("bl", "busy_list", {"modified": False}, True, "Das Sharma and Pradhan's busy list: "
         "candidates at the corners of allocated submeshes, slid until free; most busy "
         "neighbours wins"),
        ("bl-mod", "busy_list", {"modified": True}, True, "the busy list over every "
         "position along busy submeshes: the true maximum of busy neighbours (Chu's "
         "chapter 7)"),
        ("la-ff", "lookahead", {"rule": "first"}, True, "Bhattacharya and Tsai's free "
         "regions: the region with the least-x base"),
        ("la-bf", "lookahead", {"rule": "best"}, True, "free regions: the smallest region"),
        ("la-wf", "lookahead", {"rule": "worst"}, True, "free regions: the largest region"),
        ("bfl1", "lookahead", {"rule": "best-lookahead"}, True, "1-lookahead best fit: the "
         "smallest region that leaves room for the largest waiting job"),
        ("wfl1", "lookahead", {"rule": "worst-lookahead"}, True, "1-lookahead worst fit: the "
         "largest region that leaves room for the largest waiting job"),
        ("eet-sb", "eet", {"corners": False}, True, "Chu's EET-SB: candidates along busy "
         "submeshes and at mesh corners, the least total difference of estimated "
         "completion times"),
        ("eet-sc", "eet", {"corners": True}, True, "Chu's EET-SC: best fit's corners scored "
         "by the difference of estimated completion times"),
        ("bdi", "bdi", {}, True, "Chu's busy distance inverse: corners of free regions, the "
         "largest sum of inverse distances to busy nodes"),
    )),
    Allocator("torus3d-menu", "Slurm's topology/torus3d rule: a free anchor box of a "
              "placement of the job's size; ties: lower fragmentation of the next larger "
              "placement, then the torus with fewer idle nodes, then the first found",
              ("slurm-torus3d",), "simcore.machines.slurm.allocator", frozenset(),
              (UNLISTED, SEGMENTS)),
    Allocator("slurm-block", "Slurm's topology/block rule (25.11): the lowest block level "
              "that holds the job, its block of fewest free nodes, base blocks by best fit, "
              "else the fullest; with segments, each segment inside one base block",
              ("blocks",), "simcore.machines.blocks.allocator", frozenset(),
              (BLOCK_SIZES, SEGMENT, SEGMENT_PLACEMENT, BLOCK_DILATION, FAILURE_DOMAIN)),
    Allocator("slurm-tree", "Slurm's topology/tree rule (cons_tres, 25.11): racks as leaf "
              "switches, the leaf that holds the rest by best fit, else the largest under "
              "the best switch, nearer leaves first; --switches with its wait",
              ("blocks",), "simcore.machines.blocks.tree", frozenset(),
              (RACK_GROUPS, SWITCHES, SWITCH_WAIT, TREE_RELEASE, BLOCK_DILATION,
               FAILURE_DOMAIN)),
    Allocator("slurm-ring", "Slurm's topology/ring rule (26.05): a run of consecutive free "
              "nodes of one ring, wrapping around, in the ring of fewest free nodes; "
              "segments each in a different ring", ("blocks",),
              "simcore.machines.blocks.ring", frozenset(),
              (*RING_OPTIONS, BLOCK_DILATION, FAILURE_DOMAIN)),
    Allocator("kueue-tas", "Kueue's topology-aware scheduling (v0.15.8): a required or "
              "preferred level (block, rack, host) or none, slice sizes, BestFit or "
              "LeastFreeCapacity by the release's profile; admission by the scheduler "
              "(BestEffortFIFO: scan-all, StrictFIFO: fcfs)",
              ("blocks",), "simcore.machines.blocks.kueue", frozenset(),
              (RACK_GROUPS, *TAS_OPTIONS, BLOCK_DILATION, FAILURE_DOMAIN)),
    Allocator("any-cubes", "optically switched cubes: a job of one cube or more takes any "
              "free whole cubes; a smaller job a box in the fullest cube it fits in",
              ("cubes",), _CUBES, frozenset(), variant={"boxes": False}),
    Allocator("cube-boxes", "the same cubes wired as a static AxBxC torus: a job of one cube "
              "or more takes a box of whole cubes of its shape (Krevat's rule among them); "
              "a smaller job as with any-cubes", ("cubes",), _CUBES, frozenset(),
              variant={"boxes": True}),
    Allocator("free-list", "Cplant 1.9: the first p free processors of the ordering",
              ("torus", "mesh"), _CURVES, frozenset({"counts"}), (DILATION,), ordering=_ORDERINGS,
              max_dims=3, variant={"rule": "free-list"}),
    Allocator("first-fit", "the first interval of consecutive free ranks that holds the job "
              "(its p lowest ranks), else the span fallback (Leung et al.)",
              ("torus", "mesh"), _CURVES, frozenset({"counts"}), (FALLBACK_SPAN, DILATION),
              ordering=_ORDERINGS, max_dims=3, variant={"rule": "first-fit"}),
    Allocator("best-fit", "the shortest interval of consecutive free ranks that holds the job "
              "(ties: the earliest), else the span fallback (Leung et al.)",
              ("torus", "mesh"), _CURVES, frozenset({"counts"}), (FALLBACK_SPAN, DILATION),
              ordering=_ORDERINGS, max_dims=3, variant={"rule": "best-fit"}),
    Allocator("sum-of-squares", "the interval minimising the sum over lengths i of N(i)^2 "
              "after placement, N(i) the free intervals of length i (ties: the earliest), "
              "else the span fallback (Leung et al.)",
              ("torus", "mesh"), _CURVES, frozenset({"counts"}), (FALLBACK_SPAN, DILATION),
              ordering=_ORDERINGS, max_dims=3, variant={"rule": "sum-of-squares"}),
)}


def all_options() -> dict[str, Parameter]:
    """Every allocator option (failure options included) by name (one definition per name
    across allocators)."""
    out: dict[str, Parameter] = {}
    for row in ALLOCATORS.values():
        for p in row.options:
            if out.setdefault(p.name, p) != p:
                raise SpecError(f"allocator option {p.name} is defined twice")
    return out


def get_allocator(name: str) -> Allocator:
    if name not in ALLOCATORS:
        raise SpecError(f"allocator {name!r}; expected one of {', '.join(ALLOCATORS)}")
    return ALLOCATORS[name]


def check_compatible(machine: Any, needs: frozenset[str], what: str) -> None:
    """`what` (e.g. "scheduler migration") needs the allocator capabilities `needs`;
    raise a SpecError naming what is missing and which allocators have it."""
    allocator = machine.allocator_row
    if STEADY in needs and machine.fails():
        raise SpecError(f"{what} needs a machine whose units never fail; machine {machine} "
                        "has a failure process")
    needs = needs - {STEADY}
    missing = sorted(needs - allocator.capabilities)
    if not missing:
        return
    offer = [f"{row.name} ({', '.join(row.kinds)})" for row in ALLOCATORS.values()
             if needs <= row.capabilities]
    raise SpecError(
        f"{what} needs an allocator where {'; '.join(CAPABILITIES[c] for c in missing)}; "
        f"machine {machine} uses {allocator.name}, which does not"
        + (f" (these do: {', '.join(offer)})" if offer else ""))
