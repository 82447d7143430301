"""What an evaluation produces: a result per (policy, task), a summary per policy (the oracle over
the single models among them), the report, and the results a run already stored (a resumed run).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from consortium.coord.base import Outcome
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Grade, Task

ORACLE = "oracle (per-question best)"


@dataclass
class TaskResult:
    policy: str
    task: Task
    answer: str | None
    grade: Grade
    calls: int
    tokens: int
    cost: float
    error: str | None = None
    outcome: Outcome | None = None
    """What the coordinator returned, its typed report (turns, confidence …) included; None when
    it returned nothing (an error) or the result was read back from the trace store."""
    answered_by: str | None = None
    """Pool name of the model whose call produced the answer: the task's last successful call."""
    seconds: float = 0.0
    """Wall-clock seconds of the task's run and grading (0 when read back from the store)."""


@dataclass
class PolicySummary:
    policy: str
    accuracy: dict[str, float]
    """Per dataset, fraction of tasks graded correct."""
    tasks: int
    calls: int
    tokens: int
    cost: float
    errors: int
    datasets: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    """Per failed task id, why it failed (`core.errors.reason`: type and message)."""
    seconds: float = 0.0
    """Summed wall-clock seconds of the tasks (the cost of a zero-price pool in time)."""

    def mean(self, datasets: Sequence[str]) -> float | None:
        values = [self.accuracy[d] for d in datasets if d in self.accuracy]
        return sum(values) / len(values) if values else None


def summarise(policy: str, results: Sequence[TaskResult]) -> PolicySummary:
    by_dataset: dict[str, list[bool]] = defaultdict(list)
    for result in results:
        by_dataset[result.task.dataset].append(result.grade.correct)
    return PolicySummary(
        policy=policy,
        accuracy={d: sum(v) / len(v) for d, v in by_dataset.items()},
        tasks=len(results),
        calls=sum(r.calls for r in results),
        tokens=sum(r.tokens for r in results),
        cost=sum(r.cost for r in results),
        errors=sum(r.error is not None for r in results),
        datasets=list(by_dataset),
        failures={r.task.id: r.error for r in results if r.error is not None},
        seconds=sum(r.seconds for r in results),
    )


def oracle_summary(per_policy: Mapping[str, Sequence[TaskResult]]) -> PolicySummary:
    """Per-question best: a task counts as solved when any of the policies solved it.

    Its calls, tokens and cost are those of running every policy, the price of knowing the best.
    """
    solved: dict[str, bool] = {}
    tasks: dict[str, Task] = {}
    for results in per_policy.values():
        for result in results:
            tasks[result.task.id] = result.task
            solved[result.task.id] = solved.get(result.task.id, False) or result.grade.correct
    merged = [
        TaskResult(ORACLE, task, None, Grade(solved[task_id], float(solved[task_id])), 0, 0, 0.0)
        for task_id, task in tasks.items()
    ]
    summary = summarise(ORACLE, merged)
    everything = [r for results in per_policy.values() for r in results]
    summary.calls = sum(r.calls for r in everything)
    summary.tokens = sum(r.tokens for r in everything)
    summary.cost = sum(r.cost for r in everything)
    summary.seconds = sum(r.seconds for r in everything)
    return summary


@dataclass
class EvalReport:
    pool: str
    """Which pool the figures come from (e.g. "replay of recorded outcomes (…files…)")."""
    tasks: str
    datasets: list[str]
    summaries: list[PolicySummary]
    groups: dict[str, list[str]] = field(default_factory=dict)
    """Named dataset groups whose mean is shown, e.g. {"ID": [...], "OOD": [...]}."""
    recorded: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per policy and dataset, what the recorded data predict (replay pools only)."""
    run_id: str = ""


def stored_results(
    store: TraceStore, run_id: str, tasks: Sequence[Task]
) -> dict[str, list[TaskResult]]:
    """The results a run already wrote, per policy, for the tasks of `tasks` (a resumed run)."""
    by_id = {task.id: task for task in tasks}
    answered_by = _last_answering_models(store, run_id)
    found: dict[str, list[TaskResult]] = defaultdict(list)
    for row in store.iter_results(run_id):
        task = by_id.get(row["task_id"])
        if task is None:
            continue
        grade = Grade(bool(row["correct"]), float(row["score"] or 0.0), row["detail"] or "")
        found[row["policy"]].append(
            TaskResult(
                row["policy"],
                task,
                row["answer"],
                grade,
                row["calls"] or 0,
                row["tokens"] or 0,
                row["cost"] or 0.0,
                row["error"],
                answered_by=answered_by.get((row["policy"], row["task_id"])),
            )
        )
    return dict(found)


def _last_answering_models(store: TraceStore, run_id: str) -> dict[tuple[str, str], str]:
    """Per (policy, task id), the model of the task's last successful call, as `run_policy`
    records it in `TaskResult.answered_by`."""
    last: dict[tuple[str, str], str] = {}
    for call in store.iter_calls(run_id):
        if call["error"] is None:
            last[(call["policy"], call["task_id"])] = call["model"]
    return last


def summaries_of(
    per_policy: Mapping[str, Sequence[TaskResult]], *, with_oracle: bool = True
) -> list[PolicySummary]:
    """A summary per policy, then the oracle over the single-model policies."""
    summaries = [summarise(name, results) for name, results in per_policy.items()]
    singles = {name: r for name, r in per_policy.items() if name.startswith("single:")}
    if with_oracle and len(singles) > 1:
        summaries.append(oracle_summary(singles))
    return summaries
