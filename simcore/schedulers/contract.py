"""What every scheduler module shares below the policy registry: the contract of a
scheduler the event engine runs (`SchedulerModule`), of one with an engine of its own
(`EngineModule`, the time-sharing schedulers), and their optional functions.

The scheduler registry (`simcore.schedulers.registry`) resolves the module of each of its
rows against one of the two once (`SchedulerImplementation`); everything else calls the
module through that object. A module reads its run's policy as a `Policy`, which
`simcore.policy.PolicySpec` (above this layer) satisfies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from simcore.base.contracts import check_variant, hooks, load

if TYPE_CHECKING:
    from simcore.core.result import SimulationResult
    from simcore.jobs.jobs import Jobs
    from simcore.machines.spec import MachineSpec


class Policy(Protocol):
    """What a scheduler module reads of its run's policy: the scheduler's name, its
    parameters as attributes (`policy.start_delay_s`, defaults filled in) and all of
    them (`params()`)."""

    @property
    def scheduler(self) -> str: ...

    def params(self) -> dict[str, Any]: ...

    def __getattr__(self, name: str) -> Any: ...


class SchedulerModule(Protocol):
    """A scheduler of the event engine (docs/extending.md): `kernel_policy` builds its
    policy struct for a run of `n_jobs` jobs, taking its registry row's variant as keyword
    arguments, and the module implements `simcore.core.decide.decide` for that struct.
    Its optional functions are `SchedulerHooks`."""

    def kernel_policy(self, policy: Policy, n_jobs: int, /, **variant: Any) -> Any: ...


class EngineModule(Protocol):
    """A scheduler that simulates whole runs on an engine of its own: `simulate` returns
    the result with the run metrics every engine reports (`simcore.core.result`), taking
    its registry row's variant as keyword arguments."""

    def simulate(self, jobs: Jobs, machine: MachineSpec, policy: Policy, seed: int, /,
                 **variant: Any) -> SimulationResult: ...


class SchedulerHooks:
    """The optional functions of a scheduler module, each as a module without it
    behaves."""

    @staticmethod
    def observables(struct: Any) -> dict[str, Any]:
        """Run metrics of its own, from its policy struct after the run (registered in
        `simcore.core.columns.RUN_METRICS`): none."""
        return {}


@dataclass(frozen=True)
class SchedulerImplementation:
    """A scheduler's module resolved against `SchedulerModule`, or `EngineModule` if it
    runs its own `engine`: the variant its registry row passes, and its optional
    functions or their defaults (`SchedulerHooks`)."""

    what: str
    module: Any
    variant: Mapping[str, Any]
    engine: bool
    observables: Callable[[Any], dict[str, Any]]

    @classmethod
    def resolve(cls, module: str, variant: Mapping[str, Any], engine: bool,
                what: str) -> SchedulerImplementation:
        """Module `module` of `what` (e.g. "scheduler mq") checked against its protocol
        and the variant; a SpecError names the module and what does not fit."""
        if engine:
            found = load(module, EngineModule, what)
            check_variant(found.simulate, 4, variant, what)
        else:
            found = load(module, SchedulerModule, what)
            check_variant(found.kernel_policy, 2, variant, what)
        return cls(what, found, variant, engine, **hooks(found, SchedulerHooks))

    def kernel_policy(self, policy: Policy, n_jobs: int) -> Any:
        """The policy struct of a run of `n_jobs` jobs (event-engine schedulers)."""
        assert not self.engine, f"{self.what} runs its own engine"
        return self.module.kernel_policy(policy, n_jobs, **self.variant)

    def simulate(self, jobs: Jobs, machine: MachineSpec, policy: Policy,
                 seed: int) -> SimulationResult:
        """A whole run on the scheduler's own engine."""
        assert self.engine, f"{self.what} runs on the event engine"
        return self.module.simulate(jobs, machine, policy, seed, **self.variant)
