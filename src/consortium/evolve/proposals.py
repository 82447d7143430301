"""Proposers: each reads the round's tuning measurements and proposes candidate strategies.

They see only the tuning batch; the guards judge their proposals on held-out tasks.
- `ClusterSpecialists`: per cluster, the single model most accurate on tuning tasks, or the
  cheapest one within `tolerance` of it (cost-aware).
- `Escalation`: per cluster, keep the first policy and learn when to escalate to the cluster's
  most accurate model: never, always, when a cheap second opinion disagrees, or when the first
  policy's confidence is below a threshold; the cheapest option within `tolerance` of the most
  accurate one on the tuning tasks wins (thresholds learned from the observed confidences).
- `Templates`: per cluster, a workflow template (majority vote, mixture-of-agents) over the
  cluster's three most accurate models.
- `Prune`: drop escalation from a cluster, or a cluster plan equal to the default.
- `RetrainTrinity`: warm-start sep-CMA-ES from a TRINITY policy's weights on the tuning tasks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from consortium.coord.agreement import agree
from consortium.coord.trinity.policy import HeadSetup, load_setup, save_policy
from consortium.evaluate import TaskResult
from consortium.evolve.measure import Evaluator, accuracy, by_cluster
from consortium.evolve.strategies import Plan, Strategy
from consortium.runtime.caller import Caller
from consortium.tasks.base import Task
from consortium.train.es import TrainConfig, train_es


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


class Proposer(Protocol):
    name: str

    async def propose(self, context: RoundContext) -> list[Proposal]: ...


def _cost(results: Sequence[TaskResult]) -> float:
    return sum(r.cost for r in results) / len(results) if results else 0.0


def _cheapest_adequate(
    options: dict[str, tuple[float, float]], tolerance: float, floor: float | None = None
) -> str:
    """The cheapest option whose accuracy is within `tolerance` of `floor` (default: the best
    option's accuracy); options map a name to (accuracy, cost per task); ties go to the earlier."""
    best = max(accuracy for accuracy, _ in options.values())
    bar = min(best, floor if floor is not None else best) - tolerance - 1e-12
    adequate = [name for name, (acc, _) in options.items() if acc >= bar]
    return min(adequate, key=lambda name: options[name][1])


def _replace_first(plan: Plan, spec: str) -> Plan:
    """`plan` answering first with `spec`; a check by `spec` itself would always agree, so such
    a plan loses its escalation."""
    if plan.check == spec:
        return Plan(first=spec)
    return plan.model_copy(update={"first": spec})


def _template_lead(spec: str) -> str | None:
    """The lead model of a `workflow:KIND:models=a,b,c` spec (a), or None."""
    if not spec.startswith("workflow:") or "models=" not in spec:
        return None
    return spec.split("models=", 1)[1].split(":", 1)[0].split(",", 1)[0] or None


class ClusterSpecialists:
    name = "cluster-specialists"

    def __init__(self, tolerance: float = 0.01) -> None:
        self.tolerance = tolerance

    async def propose(self, context: RoundContext) -> list[Proposal]:
        singles = await context.singles()
        clusters = sorted({t.dataset for t in context.tuning})
        proposals = []
        for mode in ("most accurate", "cheapest adequate"):
            strategy = context.incumbent
            picks = []
            for cluster in clusters:
                options = {}
                for model, results in singles.items():
                    group = by_cluster(results).get(cluster, [])
                    options[f"single:{model}"] = (accuracy(group), _cost(group))
                if mode == "most accurate":
                    spec = max(options, key=lambda s: (options[s][0], -options[s][1]))
                else:
                    spec = _cheapest_adequate(options, self.tolerance)
                acc, cost = options[spec]
                picks.append(f"{cluster}: {spec} ({acc:.1%}, ${cost:.2e}/task)")
                strategy = strategy.with_plan(
                    cluster, _replace_first(strategy.plan_for(cluster), spec)
                )
            proposals.append(
                Proposal(
                    strategy, self.name, f"{mode} single model per cluster: " + "; ".join(picks)
                )
            )
        return proposals


def _outcome(
    first: Sequence[TaskResult],
    escalated: Sequence[TaskResult],
    fires: Sequence[bool],
    extra: Sequence[float],
) -> tuple[float, float]:
    """(accuracy, cost per task) of answering with `first`, escalating where `fires`, paying
    `extra` per task for the check."""
    rows = zip(first, escalated, fires, extra, strict=True)
    correct, cost = [], []
    for f, e, fire, x in rows:
        correct.append(e.grade.correct if fire else f.grade.correct)
        cost.append(f.cost + x + (e.cost if fire else 0.0))
    return float(np.mean(correct)), float(np.mean(cost))


def _thresholds(confidences: Sequence[float]) -> list[float]:
    values = sorted(set(confidences))
    # Between neighbouring observed confidences, and above the largest (escalate everything).
    return [(a + b) / 2 for a, b in itertools.pairwise(values)] + [values[-1] + 1e-9]


Route = tuple[str, Plan, list[bool], list[float]]
"""(description, plan, escalate on each tuning task?, extra cost of each task's check)."""


def _routes(
    first_spec: str,
    first: Sequence[TaskResult],
    escalate: str,
    checks: dict[str, list[TaskResult]],
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
                [c.cost for c in check],
            )
        )
    confidences = [f.meta.get("confidence") for f in first]
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
            strongest = max(per_model, key=lambda m: (accuracy(per_model[m]), -_cost(per_model[m])))
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
                for route in _routes(spec, results, escalate, per_model)
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
                name: _outcome(firsts[new.first], top, fires, extra)
                for name, new, fires, extra in routes
            }
            plans = {name: new for name, new, _, _ in routes}
            floors = {goals[0]: None, goals[1]: accuracy(incumbent.get(cluster, []))}
            for goal, floor in floors.items():
                chosen = _cheapest_adequate(options, self.tolerance, floor)
                if plans[chosen] != plan:
                    acc, cost = options[chosen]
                    strategies[goal] = strategies[goal].with_plan(cluster, plans[chosen])
                    notes[goal].append(f"{cluster}: {chosen} (tuning {acc:.1%}, ${cost:.2e}/task)")
        return [
            Proposal(
                strategies[goal],
                self.name,
                f"cheapest escalation, {goal}: " + "; ".join(notes[goal]),
            )
            for goal in goals
            if strategies[goal] != context.incumbent
        ]


class Templates:
    """Per cluster, a collaboration template over the cluster's three most accurate models on
    the tuning batch (the most accurate leads: judge, aggregator or reflector)."""

    name = "templates"

    def __init__(self, kinds: Sequence[str] = ("vote", "moa")) -> None:
        self.kinds = tuple(kinds)

    async def propose(self, context: RoundContext) -> list[Proposal]:
        singles = await context.singles()
        proposals = []
        for kind in self.kinds:
            strategy = context.incumbent
            picks = []
            for cluster in sorted({t.dataset for t in context.tuning}):
                per_model = {m: by_cluster(r).get(cluster, []) for m, r in singles.items()}
                ranked = sorted(
                    per_model, key=lambda m: (-accuracy(per_model[m]), _cost(per_model[m]))
                )
                spec = f"workflow:{kind}:models={','.join(ranked[:3])}"
                picks.append(f"{cluster}: {spec}")
                plan = strategy.plan_for(cluster)
                strategy = strategy.with_plan(cluster, _replace_first(plan, spec))
            proposals.append(
                Proposal(strategy, self.name, f"{kind} per cluster: " + "; ".join(picks))
            )
        return proposals


class Prune:
    name = "prune"

    async def propose(self, context: RoundContext) -> list[Proposal]:
        incumbent = context.incumbent
        proposals = []
        for cluster, plan in sorted(incumbent.clusters.items()):
            if plan == incumbent.default:
                kept = {c: p for c, p in incumbent.clusters.items() if c != cluster}
                proposals.append(
                    Proposal(
                        Strategy(default=incumbent.default, clusters=kept),
                        self.name,
                        f"{cluster}: same as the default, merged",
                    )
                )
                continue
            lead = _template_lead(plan.first)
            if lead is not None:
                proposals.append(
                    Proposal(
                        incumbent.with_plan(cluster, _replace_first(plan, f"single:{lead}")),
                        self.name,
                        f"{cluster}: replace {plan.first} by its lead model alone",
                    )
                )
            if plan.trigger != "never":
                proposals.append(
                    Proposal(
                        incumbent.with_plan(cluster, Plan(first=plan.first)),
                        self.name,
                        f"{cluster}: drop escalation to {plan.escalate}",
                    )
                )
        return proposals


def _trinity_specs(strategy: Strategy) -> list[str]:
    plans = [strategy.default, *strategy.clusters.values()]
    return list(dict.fromkeys(p.first for p in plans if (Path(p.first) / "policy.json").exists()))


class RetrainTrinity:
    """Warm-start sep-CMA-ES from each TRINITY policy the incumbent uses (its weights as the
    mean) on the tuning pool; propose the retrained policy in its place."""

    name = "retrain-trinity"

    def __init__(
        self,
        config: TrainConfig,
        load: Callable[[Path], tuple[HeadSetup, np.ndarray]] = load_setup,
    ) -> None:
        self.config = config
        self.load = load

    async def propose(self, context: RoundContext) -> list[Proposal]:
        proposals = []
        for spec in _trinity_specs(context.incumbent):
            setup, vector = self.load(Path(spec))
            config = replace(self.config, seed=self.config.seed + context.round)
            evaluator = context.evaluator
            state = await train_es(
                setup,
                context.tuning_pool or context.tuning,
                evaluator.grader,
                Caller(evaluator.caller.pool, None, "retrain"),  # rollouts are not traced
                config,
                init=vector,
                executor=evaluator.executor,
            )
            out = context.out_dir / f"round-{context.round}" / f"trinity-{Path(spec).name}"
            save_policy(
                out,
                state.vector,
                setup,
                {"optimizer": "es", "warm_start": spec, "round": context.round},
            )
            strategy = context.incumbent
            for cluster, plan in [("", strategy.default), *strategy.clusters.items()]:
                if plan.first == spec:
                    new = plan.model_copy(update={"first": str(out)})
                    strategy = (
                        strategy.with_plan(cluster, new)
                        if cluster
                        else Strategy(default=new, clusters=strategy.clusters)
                    )
            reward = state.history[-1]["population_mean"] if state.history else float("nan")
            proposals.append(
                Proposal(
                    strategy,
                    self.name,
                    f"{spec}: {config.generations} generations of sep-CMA-ES from its weights "
                    f"(last population reward {reward:.3f})",
                )
            )
        return proposals


@dataclass(frozen=True)
class ProposerSettings:
    tolerance: float = 0.01
    """Accuracy (fraction) a cheaper choice may give up on tuning tasks."""
    retrain: TrainConfig = field(
        default_factory=lambda: TrainConfig(generations=3, popsize=16, minibatch=40)
    )


PROPOSERS: dict[str, Callable[[ProposerSettings], Proposer]] = {
    ClusterSpecialists.name: lambda s: ClusterSpecialists(s.tolerance),
    Escalation.name: lambda s: Escalation(s.tolerance),
    Templates.name: lambda _s: Templates(),
    Prune.name: lambda _s: Prune(),
    RetrainTrinity.name: lambda s: RetrainTrinity(s.retrain),
}
"""Proposers by name. retrain-trinity proposes only when the incumbent uses a TRINITY policy."""
