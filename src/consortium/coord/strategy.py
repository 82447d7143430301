"""A strategy (what `consortium evolve` adopts): per task cluster, which policy answers first,
and when to escalate to which; `StrategyCoordinator` runs one, and an evolve folder's final one is
read by `evolved_strategy`.

Policies are named by the spec strings `consortium eval --policy` takes (`single:NAME`,
`workflow:judge-vote:models=a,b,c`, a trained TRINITY directory …), so a strategy is plain JSON and
its id is a hash of that JSON: the same strategy proposed twice is one strategy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from consortium.coord.base import Coordinator, Outcome
from consortium.core.answers import agree
from consortium.core.errors import CoordinatorError
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

Trigger = Literal["never", "always", "disagreement", "confidence"]
TRIGGERS: tuple[str, ...] = ("never", "always", "disagreement", "confidence")


class Plan(BaseModel):
    """Answer with `first`; escalate to `escalate` when the trigger fires: `disagreement` (the
    `check` policy answers differently), `confidence` (the first policy's reported confidence is
    below `threshold`) or `always`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first: str
    escalate: str | None = None
    trigger: Trigger = "never"
    check: str | None = None
    threshold: float = 0.0

    @model_validator(mode="after")
    def _consistent(self) -> Plan:
        if self.trigger != "never" and not self.escalate:
            raise CoordinatorError(f"trigger {self.trigger!r} needs an escalate policy")
        if self.trigger == "disagreement" and not self.check:
            raise CoordinatorError("trigger 'disagreement' needs a check policy")
        if self.check is not None and self.check == self.first:
            raise CoordinatorError(
                "the check policy must differ from the first (it would always agree)"
            )
        return self

    def specs(self) -> list[str]:
        return [s for s in (self.first, self.check, self.escalate) if s]

    def describe(self) -> str:
        if self.trigger == "never":
            return self.first
        condition = {
            "always": "always",
            "disagreement": f"if {self.check} disagrees",
            "confidence": f"if confidence < {self.threshold:.3f}",
        }[self.trigger]
        return f"{self.first}, escalate to {self.escalate} {condition}"


class Strategy(BaseModel):
    """A default plan and per-cluster plans; the cluster of a task is its dataset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Plan
    clusters: dict[str, Plan] = {}

    @property
    def id(self) -> str:
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    def plan_for(self, cluster: str) -> Plan:
        return self.clusters.get(cluster, self.default)

    def with_plan(self, cluster: str, plan: Plan) -> Strategy:
        return Strategy(default=self.default, clusters={**self.clusters, cluster: plan})

    def specs(self) -> list[str]:
        found = self.default.specs() + [s for p in self.clusters.values() for s in p.specs()]
        return list(dict.fromkeys(found))

    def describe(self) -> list[str]:
        lines = [f"default: {self.default.describe()}"]
        lines += [f"{c}: {p.describe()}" for c, p in sorted(self.clusters.items())]
        return lines


def cluster_of(task: Task) -> str:
    return task.dataset


class StrategyCoordinator:
    """Runs a strategy as one coordinator; every call goes through the task's caller."""

    def __init__(
        self,
        strategy: Strategy,
        resolve: Callable[[str], Coordinator],
        name: str | None = None,
    ) -> None:
        self.strategy = strategy
        self.name = name or f"strategy:{strategy.id}"
        self.policies = {spec: resolve(spec) for spec in strategy.specs()}

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        cluster = cluster_of(task)
        plan = self.strategy.plan_for(cluster)
        first = await self.policies[plan.first].run(task, caller)
        confidence = first.confidence
        disagreed: bool | None = None
        escalate = plan.trigger == "always"
        if plan.trigger == "disagreement" and plan.check:
            second = await self.policies[plan.check].run(task, caller)
            disagreed = escalate = not agree(first.answer, second.answer)
        elif plan.trigger == "confidence":
            # A first policy that reports no confidence cannot vouch for its answer.
            escalate = confidence is None or confidence < plan.threshold
        answer, answered_by, escalated = first.answer, plan.first, False
        if escalate and plan.escalate:
            answer = (await self.policies[plan.escalate].run(task, caller)).answer
            answered_by, escalated = plan.escalate, True
        return Outcome(
            answer,
            confidence=confidence,
            cluster=cluster,
            answered_by=answered_by,
            escalated=escalated,
            disagreed=disagreed,
        )


def evolved_strategy(folder: Path) -> Strategy | None:
    """The final strategy of an evolve folder (its state.json's incumbent); None when `folder`
    holds no evolve run."""
    state_path = folder / "state.json"
    if not state_path.exists():
        return None
    return Strategy.model_validate(json.loads(state_path.read_text())["incumbent"])
