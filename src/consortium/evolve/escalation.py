"""The escalation proposer: per cluster, keep the first policy and learn when to escalate to the
cluster's most accurate model (never, always, on disagreement, or below a confidence threshold)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from consortium.coord.strategy import Plan
from consortium.core.answers import agree
from consortium.core.costs import CostMeasure, unit
from consortium.core.costs import cost_of as task_cost
from consortium.evaluation.results import TaskResult
from consortium.evolve.measure import accuracy, by_cluster
from consortium.evolve.proposal import (
    Proposal,
    RoundContext,
    cheapest_adequate,
    cost_of,
)

Route = tuple[str, Plan, list[bool], list[float]]
"""(description, plan, escalate on each tuning task?, extra cost of each task's check)."""


def _outcome(
    first: Sequence[TaskResult],
    escalated: Sequence[TaskResult],
    fires: Sequence[bool],
    extra: Sequence[float],
    measure: CostMeasure = "usd",
) -> tuple[float, float]:
    """(accuracy, cost per task) of answering with `first`, escalating where `fires`, paying
    `extra` per task for the check."""
    rows = zip(first, escalated, fires, extra, strict=True)
    correct, cost = [], []
    for f, e, fire, x in rows:
        correct.append(e.grade.correct if fire else f.grade.correct)
        spent = task_cost(f, measure) + x
        cost.append(spent + (task_cost(e, measure) if fire else 0.0))
    return float(np.mean(correct)), float(np.mean(cost))


def _thresholds(confidences: Sequence[float]) -> list[float]:
    values = sorted(set(confidences))
    # Between neighbouring observed confidences, and above the largest (escalate everything).
    return [(a + b) / 2 for a, b in itertools.pairwise(values)] + [values[-1] + 1e-9]


def _routes(
    first_spec: str,
    first: Sequence[TaskResult],
    escalate: str,
    checks: dict[str, list[TaskResult]],
    measure: CostMeasure = "usd",
) -> list[Route]:
    """Every way of escalating from `first` to `escalate` the proposer weighs."""
    n = len(first)
    routes: list[Route] = [
        (f"{first_spec} alone", Plan(first=first_spec), [False] * n, [0.0] * n),
        (
            f"{first_spec}, always {escalate}",
            Plan(first=first_spec, escalate=escalate, trigger="always"),
            [True] * n,
            [0.0] * n,
        ),
    ]
    for model, check in checks.items():
        if f"single:{model}" in (first_spec, escalate):
            continue
        routes.append(
            (
                f"{first_spec}, {escalate} if {model} disagrees",
                Plan(
                    first=first_spec,
                    escalate=escalate,
                    trigger="disagreement",
                    check=f"single:{model}",
                ),
                [
                    not agree(f.answer or "", c.answer or "")
                    for f, c in zip(first, check, strict=True)
                ],
                [task_cost(c, measure) for c in check],
            )
        )
    confidences = [f.outcome.confidence if f.outcome else None for f in first]
    known = [float(c) for c in confidences if c is not None]
    if first and len(known) == n:
        for threshold in _thresholds(known):
            routes.append(
                (
                    f"{first_spec}, {escalate} if confidence < {threshold:.3f}",
                    Plan(
                        first=first_spec,
                        escalate=escalate,
                        trigger="confidence",
                        threshold=threshold,
                    ),
                    [c < threshold for c in known],
                    [0.0] * n,
                )
            )
    return routes


class Escalation:
    name = "escalation"

    def __init__(self, tolerance: float = 0.01) -> None:
        self.tolerance = tolerance

    async def propose(self, context: RoundContext) -> list[Proposal]:
        singles = await context.singles()
        # The loop has measured the incumbent on this batch already; the evaluator keeps it.
        incumbent = by_cluster(
            await context.evaluator.strategy(context.incumbent, context.tuning, "tuning")
        )
        goals = ("most accurate", "as accurate as now, cheaper")
        strategies = dict.fromkeys(goals, context.incumbent)
        notes: dict[str, list[str]] = {goal: [] for goal in goals}
        for cluster in sorted({t.dataset for t in context.tuning}):
            tasks = [t for t in context.tuning if t.dataset == cluster]
            plan = context.incumbent.plan_for(cluster)
            per_model = {m: by_cluster(r).get(cluster, []) for m, r in singles.items()}
            strongest = max(
                per_model,
                key=lambda m: (accuracy(per_model[m]), -cost_of(per_model[m], context.cost)),
            )
            escalate = f"single:{strongest}"
            singles_by_spec = {f"single:{m}": r for m, r in per_model.items()}
            # The incumbent's first policy leads, so it wins ties with an equal single model.
            firsts = {
                plan.first: singles_by_spec[plan.first]
                if plan.first in singles_by_spec
                else await context.evaluator.policy(plan.first, tasks, "tuning")
            }
            firsts.update({s: r for s, r in singles_by_spec.items() if s != plan.first})
            routes: list[Route] = [
                route
                for spec, results in firsts.items()
                if spec != escalate
                for route in _routes(spec, results, escalate, per_model, context.cost)
            ]
            routes.append(
                (
                    f"{escalate} alone",
                    Plan(first=escalate),
                    [False] * len(tasks),
                    [0.0] * len(tasks),
                )
            )
            top = per_model[strongest]
            options = {
                name: _outcome(firsts[new.first], top, fires, extra, context.cost)
                for name, new, fires, extra in routes
            }
            plans = {name: new for name, new, _, _ in routes}
            floors = {goals[0]: None, goals[1]: accuracy(incumbent.get(cluster, []))}
            for goal, floor in floors.items():
                chosen = cheapest_adequate(options, self.tolerance, floor)
                if plans[chosen] != plan:
                    acc, cost = options[chosen]
                    strategies[goal] = strategies[goal].with_plan(cluster, plans[chosen])
                    notes[goal].append(
                        f"{cluster}: {chosen} (tuning {acc:.1%}, "
                        f"{cost:.3g} {unit(context.cost)}/task)"
                    )
        return [
            Proposal(
                strategies[goal],
                self.name,
                f"cheapest escalation, {goal}: " + "; ".join(notes[goal]),
            )
            for goal in goals
            if strategies[goal] != context.incumbent
        ]
