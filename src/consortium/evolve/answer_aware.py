"""The answer-aware proposer: per cluster whose answers a live policy can read, the policies of
`answer_space` played on the answers' agreement on the tuning tasks (asked live, `answer_samples`);
for each kind and cost weight λ, a strategy answering each cluster where that kind's pick beats
the incumbent on tuning with the pick's policy folder (`answer_folders`). The most promising
`limit` go to the guards, like any other proposal."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from consortium.coord.spec_values import pool_name
from consortium.coord.strategy import Plan
from consortium.core.costs import unit
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.results import TaskResult
from consortium.evolve.answer_folders import CandidateFolder, candidate_folder
from consortium.evolve.answer_samples import live_samples
from consortium.evolve.answer_space import (
    Caps,
    Member,
    Pick,
    answer_policy_in,
    most_samples,
    mot_cascades,
    picks,
    scorer_cascades,
    switches,
    tau_moves,
    votes,
)
from consortium.evolve.measure import accuracy, by_cluster
from consortium.evolve.proposal import Proposal, RoundContext, cost_of
from consortium.records.task_kind import answer_kind_of


class AnswerAware:
    name = "answer-aware"

    def __init__(self, samples: int = 3, limit: int = 3) -> None:
        self.samples = samples
        """Samples per model asked on the tuning tasks (the most a policy may ask one model)."""
        self.limit = limit

    async def propose(self, context: RoundContext) -> list[Proposal]:
        incumbent = by_cluster(
            await context.evaluator.strategy(context.incumbent, context.tuning, "tuning")
        )
        # (kind, λ) -> the clusters where that kind's pick beats the incumbent, with its folder.
        chosen: dict[tuple[str, float], list[Chosen]] = defaultdict(list)
        for cluster in sorted({t.dataset for t in context.tuning}):
            for one in await self._cluster(context, cluster, incumbent.get(cluster, [])):
                chosen[(one.pick.kind, one.pick.lam)].append(one)
        ranked: list[tuple[float, Proposal]] = []
        for (family, lam), found in chosen.items():
            strategy = context.incumbent
            for one in found:
                strategy = strategy.with_plan(one.folder.cluster, Plan(first=str(one.folder.path)))
            gain = sum(
                one.pick.gain * sum(t.dataset == one.folder.cluster for t in context.tuning)
                for one in found
            ) / len(context.tuning)
            rationale = f"answer-aware {family} (λ={lam:g}): " + "; ".join(o.said for o in found)
            folders = tuple(one.folder for one in found)
            ranked.append((gain, Proposal(strategy, self.name, rationale, folders)))
        ranked.sort(key=lambda item: -item[0])
        distinct: dict[str, Proposal] = {}
        for _gain, proposal in ranked:
            distinct.setdefault(proposal.strategy.id, proposal)
        return list(distinct.values())[: self.limit]

    async def _cluster(
        self, context: RoundContext, cluster: str, incumbent: list[TaskResult]
    ) -> list[Chosen]:
        """The cluster's picks that beat the incumbent on its tuning tasks, with their folders
        (none where a live policy cannot read the cluster's answers)."""
        tasks = [t for t in context.tuning if t.dataset == cluster]
        kind = answer_kind_of(tasks[0], context.evaluator.grader)
        if kind is None:
            return []
        config = context.evaluator.caller.pool.config
        plan = context.incumbent.plan_for(cluster)
        current = answer_policy_in(plan.first)
        # Enough samples to play the current policy's τ moves as it asks.
        needed = max(self.samples, most_samples(current.params) if current else 1)
        samples = await live_samples(context, cluster, kind, needed)
        table, usd_table = samples.table(context.cost), samples.table("usd")
        families: dict[str, list[Member]] = {
            "vote": votes(table),
            "model-switch": switches(table),
            "mot-cascade": mot_cascades(table),
            "scorer-cascade": scorer_cascades(table),
        }
        if current is not None and plan.trigger == "never":
            names = {m: pool_name(config, m) for m in current.models}
            families["τ move"] = tau_moves(table, plan.first, names)
        now = (accuracy(incumbent), cost_of(incumbent, context.cost))
        caps = Caps(context.max_calls_per_task, context.max_cost_per_task)
        found = []
        for pick in picks(families, table, now, caps):
            said = _describe(pick, now, context.cost)
            usd = run_rule(usd_table, pick.rule, pick.kind)
            folder = candidate_folder(
                context.out_dir, cluster, kind, pick.rule, pick.run, usd, config, said
            )
            if str(folder.path) != plan.first:  # the policy in charge already
                found.append(Chosen(pick, folder, f"{cluster}: {said}"))
        return found


@dataclass(frozen=True)
class Chosen:
    pick: Pick
    folder: CandidateFolder
    said: str


def _describe(pick: Pick, now: tuple[float, float], measure: str) -> str:
    run = pick.run
    return (
        f"{run.name}, tuning {100 * float(run.correct.mean()):.1f} % at "
        f"{float(run.cost.mean()):.3g} {unit(measure)}/task against the incumbent's "
        f"{100 * now[0]:.1f} % at {now[1]:.3g}"
    )
