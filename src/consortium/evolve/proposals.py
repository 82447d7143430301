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
- `AnswerAware`: per cluster, answer-aware policies (vote, ModelSwitch, MoT and scorer cascades,
  τ moves of the current cascade) chosen on the answers' agreement on the tuning tasks, each as a
  policy folder (`answer_aware`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.coord.strategy import Plan, Strategy
from consortium.coord.trinity.policy import HeadSetup, load_setup, save_policy
from consortium.core.costs import unit
from consortium.evolve.answer_aware import AnswerAware
from consortium.evolve.escalation import Escalation
from consortium.evolve.measure import accuracy, by_cluster
from consortium.evolve.proposal import (
    Proposal,
    Proposer,
    RoundContext,
    cheapest_adequate,
    cost_of,
    replace_first,
    template_lead,
)
from consortium.runtime.caller import Caller
from consortium.train.trinity.online import train_online
from consortium.train.trinity.settings import RETRAIN, TrainConfig

__all__ = [
    "PROPOSERS",
    "AnswerAware",
    "ClusterSpecialists",
    "Escalation",
    "Proposal",
    "Proposer",
    "ProposerSettings",
    "Prune",
    "RetrainTrinity",
    "RoundContext",
    "Templates",
]


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
                    options[f"single:{model}"] = (accuracy(group), cost_of(group, context.cost))
                if mode == "most accurate":
                    spec = max(options, key=lambda s: (options[s][0], -options[s][1]))
                else:
                    spec = cheapest_adequate(options, self.tolerance)
                acc, cost = options[spec]
                picks.append(f"{cluster}: {spec} ({acc:.1%}, {cost:.3g} {unit(context.cost)}/task)")
                strategy = strategy.with_plan(
                    cluster, replace_first(strategy.plan_for(cluster), spec)
                )
            proposals.append(
                Proposal(
                    strategy, self.name, f"{mode} single model per cluster: " + "; ".join(picks)
                )
            )
        return proposals


class Templates:
    """Per cluster, a collaboration template over the cluster's three most accurate models on
    the tuning batch (the most accurate leads: judge, aggregator or reflector)."""

    name = "templates"

    def __init__(self, kinds: Sequence[str] = ("judge-vote", "moa")) -> None:
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
                    per_model,
                    key=lambda m: (-accuracy(per_model[m]), cost_of(per_model[m], context.cost)),
                )
                spec = f"workflow:{kind}:models={','.join(ranked[:3])}"
                picks.append(f"{cluster}: {spec}")
                plan = strategy.plan_for(cluster)
                strategy = strategy.with_plan(cluster, replace_first(plan, spec))
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
            lead = template_lead(plan.first)
            if lead is not None:
                proposals.append(
                    Proposal(
                        incumbent.with_plan(cluster, replace_first(plan, f"single:{lead}")),
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
            state = await train_online(
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
    retrain: TrainConfig = RETRAIN
    answer_samples: int = 3
    """Samples per model the answer-aware proposer asks on the tuning tasks."""


PROPOSERS: dict[str, Callable[[ProposerSettings], Proposer]] = {
    ClusterSpecialists.name: lambda s: ClusterSpecialists(s.tolerance),
    Escalation.name: lambda s: Escalation(s.tolerance),
    Templates.name: lambda _s: Templates(),
    Prune.name: lambda _s: Prune(),
    RetrainTrinity.name: lambda s: RetrainTrinity(s.retrain),
    AnswerAware.name: lambda s: AnswerAware(s.answer_samples),
}
"""Proposers by name. retrain-trinity proposes only when the incumbent uses a TRINITY policy;
answer-aware only for clusters whose answers a live answer-aware policy reads."""
