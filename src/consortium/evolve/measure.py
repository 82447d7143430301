"""Running strategies on task batches, and what the loop measures about the collaboration: not
only accuracy, but calls, tokens and cost per task, escalations, disagreement, which policies
and models produced the right answers, and how well verifiers' verdicts matched the grader."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from consortium.coord.base import Coordinator, Outcome
from consortium.coord.strategy import Plan, Strategy, StrategyCoordinator
from consortium.core.costs import CostMeasure, cost_of
from consortium.core.types import user
from consortium.evaluation.results import TaskResult, summarise
from consortium.evaluation.runner import CoordinatorBuilder, evaluate_on
from consortium.evolve.guards import Measured
from consortium.evolve.library import ClusterRecord
from consortium.evolve.state import ClusterCollaboration, SplitSummary
from consortium.pool.config import PoolConfig
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller, TaskCaller
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.tasks.base import Grader, Task


class Evaluator:
    """Grades strategies with the task set's external grader; a strategy's results on a batch are
    kept for the round, so proposers and guards never pay twice for the same measurement. On a
    remote executor, strategies run as jobs built from the pool configuration and their policy
    specs (`resolve` is then not used)."""

    def __init__(
        self,
        caller: Caller,
        grader: Grader,
        resolve: Callable[[str], Coordinator],
        *,
        concurrency: int = 32,
        task_limits: Limits | None = None,
        executor: Executor = LocalExecutor(),
        seed: int = 0,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.note = note
        """Told a line after each measurement (progress: what ran, on what, how long)."""
        self.caller = caller
        self.grader = grader
        self.resolve = resolve
        self.concurrency = concurrency
        self.task_limits = task_limits
        self.executor = executor
        self.seed = seed
        self._seen: dict[tuple[str, tuple[str, ...]], list[TaskResult]] = {}
        """Results by (policy name, which is `ID@split`, and the tasks)."""

    async def strategy(
        self, strategy: Strategy, tasks: Sequence[Task], split: str
    ) -> list[TaskResult]:
        name = f"{strategy.id}@{split}"
        return await self._measure(
            StrategyCoordinator(strategy, self.resolve, name),
            StrategyBuilder(strategy.model_dump_json(), name, self.seed),
            tasks,
            split,
            f"{'; '.join(strategy.describe())} ({strategy.id})",
        )

    async def sample(
        self, model: str, k: int, tasks: Sequence[Task], split: str
    ) -> list[TaskResult]:
        """`model`'s sample k of each task, asked as an answer-aware policy asks it (`seed=k`):
        what the answer-aware proposer reads agreement from. A task without that sample (a
        records pool past its last, a failed call) has its error set."""
        sampler = SampleOf(model, k, f"sample:{model}#{k}@{split}")
        return await self._measure(sampler, sampler, tasks, split, f"{model} sample {k}")

    async def _measure(
        self,
        coordinator: Coordinator,
        builder: CoordinatorBuilder,
        tasks: Sequence[Task],
        split: str,
        said: str,
    ) -> list[TaskResult]:
        key = (coordinator.name, tuple(t.id for t in tasks))
        if key not in self._seen:
            started = time.perf_counter()
            (self._seen[key],) = await evaluate_on(
                self.executor,
                [(coordinator, builder)],
                tasks,
                self.grader,
                self.caller,
                concurrency=self.concurrency,
                task_limits=self.task_limits,
            )
            if self.note is not None:
                done = self._seen[key]
                self.note(
                    f"{said} on {len(done)} {split} tasks: {100 * accuracy(done):.1f} % · "
                    f"{time.perf_counter() - started:.0f} s"
                )
        return self._seen[key]

    async def policy(self, spec: str, tasks: Sequence[Task], split: str) -> list[TaskResult]:
        """One policy spec alone (as a one-plan strategy)."""
        return await self.strategy(Strategy(default=Plan(first=spec)), tasks, split)


class SampleOf:
    """One model's sample k of a task, asked with `seed=k`; picklable, so it is its own builder
    on a remote executor."""

    def __init__(self, model: str, k: int, name: str) -> None:
        self.model = model
        self.k = k
        self.name = name

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        completion = await caller.call(self.model, [user(task.question)], seed=self.k, final=True)
        return Outcome(completion.text, model=self.model)

    def __call__(self, config: PoolConfig) -> Coordinator:
        return self


def measured(results: Sequence[TaskResult], cost: CostMeasure = "usd") -> Measured:
    """What the guards compare; `cost`: the measure the run's cost is in."""
    return Measured.of(
        [r.grade.correct for r in results],
        [cost_of(r, cost) for r in results],
        [r.calls for r in results],
    )


def accuracy(results: Sequence[TaskResult]) -> float:
    return sum(r.grade.correct for r in results) / len(results) if results else 0.0


def by_cluster(results: Iterable[TaskResult]) -> dict[str, list[TaskResult]]:
    groups: dict[str, list[TaskResult]] = defaultdict(list)
    for result in results:
        groups[result.task.dataset].append(result)
    return dict(groups)


def cluster_records(
    strategy_id: str, split: str, results: Sequence[TaskResult]
) -> list[ClusterRecord]:
    groups = {"*": list(results), **by_cluster(results)}
    return [
        ClusterRecord(
            strategy_id=strategy_id,
            split=split,
            cluster=cluster,
            tasks=len(group),
            correct=sum(r.grade.correct for r in group),
            calls=sum(r.calls for r in group),
            tokens=sum(r.tokens for r in group),
            cost=sum(r.cost for r in group),
            escalated=sum(_escalated(r) for r in group),
        )
        for cluster, group in groups.items()
    ]


def _escalated(result: TaskResult) -> bool:
    return result.outcome is not None and result.outcome.escalated


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def collaboration(
    results: Sequence[TaskResult], calls: Iterable[dict[str, Any]]
) -> dict[str, ClusterCollaboration]:
    """Per cluster: accuracy, cost and calls per task, escalation and disagreement rates, which
    policy gave the right answers, calls by model and role, and verifier precision / recall
    against the grader (None where no verifier spoke). `calls` are the trace rows of `results`."""
    correct_of = {r.task.id: r.grade.correct for r in results}
    cluster_of_task = {r.task.id: r.task.dataset for r in results}
    by_model_role: dict[str, Counter[str]] = defaultdict(Counter)
    verdicts: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for call in calls:
        task_id = call.get("task_id")
        if task_id not in correct_of:
            continue
        cluster = cluster_of_task[task_id]
        by_model_role[cluster][f"{call['model']}/{call.get('role') or 'worker'}"] += 1
        if call.get("verdict"):
            verdicts[cluster].append((str(call["verdict"]), correct_of[task_id]))
    summary: dict[str, ClusterCollaboration] = {}
    for cluster, group in sorted(by_cluster(results).items()):
        n = len(group)
        outcomes = [r.outcome for r in group if r.outcome is not None]
        checked = [o.disagreed for o in outcomes if o.disagreed is not None]
        said = verdicts.get(cluster, [])
        accepted_right = sum(v == "ACCEPT" and ok for v, ok in said)
        summary[cluster] = ClusterCollaboration(
            tasks=n,
            accuracy=accuracy(group),
            cost_per_task=sum(r.cost for r in group) / n,
            calls_per_task=sum(r.calls for r in group) / n,
            escalation_rate=sum(_escalated(r) for r in group) / n,
            disagreement_rate=_rate(sum(checked), len(checked)),
            right_answers_by=dict(
                Counter(
                    str(r.outcome.answered_by if r.outcome else None)
                    for r in group
                    if r.grade.correct
                )
            ),
            calls_by_model_role=dict(by_model_role.get(cluster, {})),
            verifier_precision=_rate(accepted_right, sum(v == "ACCEPT" for v, _ in said)),
            verifier_recall=_rate(accepted_right, sum(ok for _, ok in said)),
            errors=sum(r.error is not None for r in group),
        )
    return summary


def split_summary(results: Sequence[TaskResult]) -> SplitSummary:
    """`evaluate.summarise` per task, with the accuracy over all tasks beside the per-cluster."""
    summary = summarise("", results)
    n = summary.tasks or 1
    return SplitSummary(
        tasks=summary.tasks,
        accuracy=accuracy(results),
        cost_per_task=summary.cost / n,
        calls_per_task=summary.calls / n,
        tokens_per_task=summary.tokens / n,
        seconds_per_task=sum(r.seconds for r in results) / n,
        errors=summary.errors,
        per_cluster=dict(sorted(summary.accuracy.items())),
    )


@dataclass(frozen=True)
class StrategyBuilder:
    """A strategy's coordinator, built inside a remote worker from the pool configuration."""

    strategy: str
    """The strategy as JSON."""
    name: str
    seed: int = 0

    def __call__(self, config: PoolConfig) -> Coordinator:
        from consortium.coord.registry import build_coordinator

        return StrategyCoordinator(
            Strategy.model_validate_json(self.strategy),
            lambda spec: build_coordinator(spec, config, self.seed),
            self.name,
        )
