"""What every proposer shares: the round's measurements it reads, the proposal it returns, and
the helpers that pick a cheaper plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from consortium.coord.strategy import Plan, Strategy
from consortium.core.costs import CostMeasure
from consortium.core.costs import cost_of as task_cost
from consortium.evaluation.results import TaskResult
from consortium.evolve.answer_folders import CandidateFolder
from consortium.evolve.measure import Evaluator
from consortium.tasks.base import Task


@dataclass
class RoundContext:
    round: int
    incumbent: Strategy
    tuning: list[Task]
    models: list[str]
    evaluator: Evaluator
    out_dir: Path
    seed: int = 0
    tuning_pool: list[Task] = field(default_factory=list)
    """Every tuning task (coordinator retraining samples its minibatches here)."""
    cost: CostMeasure = "usd"
    """What "cheaper" means for the proposers: usd, tokens or seconds."""
    max_calls_per_task: float | None = None
    max_cost_per_task: float | None = None
    """The guards' caps (cost in the `cost` measure): a proposer need not propose past them."""

    async def singles(self) -> dict[str, list[TaskResult]]:
        """Every model alone on the tuning batch."""
        return {
            model: await self.evaluator.policy(f"single:{model}", self.tuning, "tuning")
            for model in self.models
        }


@dataclass(frozen=True)
class Proposal:
    strategy: Strategy
    proposer: str
    rationale: str
    folders: tuple[CandidateFolder, ...] = ()
    """Answer-aware policy folders the strategy names that the loop writes before measuring it
    (and rewrites with the measured figures after)."""


class Proposer(Protocol):
    name: str

    async def propose(self, context: RoundContext) -> list[Proposal]: ...


def cost_of(results: Sequence[TaskResult], measure: CostMeasure = "usd") -> float:
    """Mean cost per task in `measure`."""
    return sum(task_cost(r, measure) for r in results) / len(results) if results else 0.0


def cheapest_adequate(
    options: dict[str, tuple[float, float]], tolerance: float, floor: float | None = None
) -> str:
    """The cheapest option whose accuracy is within `tolerance` of `floor` (default: the best
    option's accuracy); options map a name to (accuracy, cost per task); ties go to the earlier."""
    best = max(accuracy for accuracy, _ in options.values())
    bar = min(best, floor if floor is not None else best) - tolerance - 1e-12
    adequate = [name for name, (acc, _) in options.items() if acc >= bar]
    return min(adequate, key=lambda name: options[name][1])


def replace_first(plan: Plan, spec: str) -> Plan:
    """`plan` answering first with `spec`; a check by `spec` itself would always agree, so such
    a plan loses its escalation."""
    if plan.check == spec:
        return Plan(first=spec)
    return plan.model_copy(update={"first": spec})


def template_lead(spec: str) -> str | None:
    """The lead model of a `workflow:KIND:models=a,b,c` spec (a), or None."""
    if not spec.startswith("workflow:") or "models=" not in spec:
        return None
    return spec.split("models=", 1)[1].split(":", 1)[0].split(",", 1)[0] or None


def fair_share(
    proposed: Sequence[Sequence[Proposal]], incumbent_id: str, limit: int
) -> list[Proposal]:
    """At most `limit` distinct proposals other than the incumbent, taken from the proposers in
    turn (each one's first, then each one's second …) so that no proposer crowds out the
    others; measured in the order they were proposed."""
    order: dict[str, tuple[int, int]] = {}
    by_id: dict[str, Proposal] = {}
    for p_index, proposals in enumerate(proposed):
        for i, proposal in enumerate(proposals):
            key = proposal.strategy.id
            if key != incumbent_id and key not in by_id:
                by_id[key] = proposal
                order[key] = (p_index, i)
    turns = sorted(by_id, key=lambda key: (order[key][1], order[key][0]))[:limit]
    return [by_id[key] for key in sorted(turns, key=lambda key: order[key])]
