"""The tables of Frachtenberg et al.'s four scenarios (termination time of each job,
turnaround, mean response), ours beside the paper's: `table` renders them for any
scheduler, `report` simulates every scenario under FCFS, gang scheduling, spin-block and
FCS (and FCS with F processes served first in every slot).
`python -m simcore.tools.frachtenberg2003` prints them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from simcore.machines.spec import MachineSpec
from simcore.policy import PolicySpec
from simcore.simulate import simulate
from simcore.workload.scenarios import JOBS, MACHINE, PAPER, SCENARIOS
from simcore.workload.synthetic import SyntheticSpec, synthesize
from simcore.workload.transforms import WorkloadSpec, prepare

#: The policies of `report`, by row label: the scheduler (whose paper row is shown) and
#: its parameters.
REPORTED = {"fcfs": ("fcfs", {}), "gang": ("gang", {}), "spin-block": ("spin-block", {}),
            "fcs": ("fcs", {}), "fcs f_priority=always": ("fcs", {"f_priority": "always"})}


def report() -> str:
    """Every scenario's table (see `table`) under the policies of REPORTED."""
    machine = MachineSpec.parse(MACHINE)
    parts = []
    for name in SCENARIOS:
        jobs = prepare(synthesize(SyntheticSpec.create("fcs", {"scenario": name}), 0),
                       WorkloadSpec(), machine)
        ends = {label: simulate(jobs, machine, PolicySpec.from_params(scheduler, params))
                .jobs.column("end_s").to_pylist()
                for label, (scheduler, params) in REPORTED.items()}
        parts.append(f"{name} (ours, the paper's in parentheses)\n\n{table(name, ends)}")
    return "\n".join(parts)


def table(name: str, results: Mapping[str, Sequence[float]]) -> str:
    """A Markdown table of a scenario in the paper's layout: for each policy (a key of
    `results`, whose value is each job's termination time in s), each job's termination
    time, the turnaround and the mean response, beside the paper's values where the
    policy is one of the paper's schedulers."""
    jobs = len(JOBS[name])
    head = [f"job {i + 1}" for i in range(jobs)] + ["turnaround", "mean response"]
    lines = ["| scheduler | " + " | ".join(head) + " |",
             "|---|" + "---:|" * len(head)]
    for label, ends in results.items():
        ours = [*ends, max(ends), sum(ends) / len(ends)]
        published = PAPER[name]
        assert isinstance(published, dict)  # the paper's values by scheduler
        paper = published.get(label)
        cells = [f"{v:.0f}" if paper is None else f"{v:.0f} ({p})"
                 for v, p in zip(ours, paper or ours, strict=True)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(report())
