"""Run policies over a task set, grade every answer, and summarise per dataset.

Results are written to the trace store as each task completes, so an interrupted evaluation keeps
everything it finished.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from consortium.coord.base import Coordinator, Outcome
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError, reason
from consortium.pool.config import PoolConfig
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, Work, shards, split_like
from consortium.runtime.jobs import RemoteJob
from consortium.runtime.store import ResultRecord, TraceStore
from consortium.tasks.base import Grade, Grader, Task

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


async def run_policy(
    coordinator: Coordinator,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    concurrency: int = 32,
    task_limits: Limits | None = None,
    on_done: Callable[[TaskResult], None] | None = None,
    deadline: float | None = None,
) -> list[TaskResult]:
    """Every task through `coordinator`, graded; `deadline` (seconds) bounds each task's whole
    run: past it the task's calls are cancelled and it is graded wrong with the reason."""
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> TaskResult:
        async with gate:
            task_caller = caller.for_task(task.id, coordinator.name, task_limits)
            answer: str | None = None
            error: str | None = None
            outcome: Outcome | None = None
            started = time.perf_counter()
            try:
                outcome = await asyncio.wait_for(coordinator.run(task, task_caller), deadline)
                answer = outcome.answer
                # Graders may run code or sympy; a thread keeps the event loop answering.
                grade = await asyncio.to_thread(grader.grade, task, answer)
            except (AgentError, BudgetExceeded, CoordinatorError) as failure:
                error = reason(failure)  # a WorkflowError is a CoordinatorError
                grade = Grade(False, 0.0, f"no answer: {error}")
            except TimeoutError:
                error = f"TimeoutError: task deadline of {deadline:g}s passed"
                grade = Grade(False, 0.0, f"no answer: {error}")
            budget = task_caller.budget
            result = TaskResult(
                coordinator.name,
                task,
                answer,
                grade,
                budget.calls,
                budget.tokens,
                budget.cost,
                error,
                outcome,
                next((c.model for c in reversed(task_caller.made) if not c.failed), None),
                time.perf_counter() - started,
            )
            if caller.store is not None:
                caller.store.record_result(
                    ResultRecord(
                        run_id=caller.run_id,
                        policy=coordinator.name,
                        task_id=task.id,
                        dataset=task.dataset,
                        answer=answer,
                        correct=grade.correct,
                        score=grade.score,
                        detail=grade.detail,
                        calls=result.calls,
                        tokens=result.tokens,
                        cost=result.cost,
                        error=error,
                        reference=_reference(task),
                    )
                )
            if on_done is not None:
                on_done(result)
            return result

    return list(await asyncio.gather(*(one(task) for task in tasks)))


def _reference(task: Task) -> str | None:
    """The reference answer as text, for the trace store (None when a task has none, or its
    reference is a test program rather than an answer)."""
    if task.reference is None or task.dataset in ("humaneval", "mbpp"):
        return None
    return str(task.reference)[:2000]


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


class CoordinatorBuilder(Protocol):
    """Builds a coordinator inside a worker, from the pool configuration (picklable)."""

    def __call__(self, config: PoolConfig) -> Coordinator: ...


PolicyPart = tuple[int, list[Task]]
"""A job of an evaluation: which policy (its index), on which tasks."""


@dataclass(frozen=True)
class PolicyOnTasks:
    """A remote job's body: one of `builders`' policies on some tasks."""

    builders: tuple[CoordinatorBuilder, ...]
    grader: Grader
    concurrency: int = 32
    task_limits: Limits | None = None
    deadline: float | None = None
    resumable: bool = False
    """Skip the tasks whose result the run already stored for this policy (a job re-run after
    its node was lost, a resumed run): each task's result is stored once."""

    async def __call__(self, part: PolicyPart, caller: Caller) -> list[TaskResult]:
        index, tasks = part
        coordinator = self.builders[index](caller.pool.config)
        stored: dict[str, TaskResult] = {}
        if self.resumable and caller.store is not None:
            found = stored_results(caller.store, caller.run_id, tasks).get(coordinator.name, [])
            stored = {result.task.id: result for result in found}
        fresh = await run_policy(
            coordinator,
            [task for task in tasks if task.id not in stored],
            self.grader,
            caller,
            concurrency=self.concurrency,
            task_limits=self.task_limits,
            deadline=self.deadline,
        )
        by_id = stored | {result.task.id: result for result in fresh}
        return [by_id[task.id] for task in tasks]


async def evaluate_on(
    executor: Executor,
    policies: Sequence[tuple[Coordinator, CoordinatorBuilder]],
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    concurrency: int = 32,
    task_limits: Limits | None = None,
    deadline: float | None = None,
    on_done: Callable[[TaskResult], None] | None = None,
    finished: Mapping[str, Sequence[TaskResult]] | None = None,
    shards_per_policy: int = 4,
    resumable: bool = False,
) -> list[list[TaskResult]]:
    """Each policy on all tasks; results in task order, one list per policy. A policy is its
    coordinator (run in this process) and its builder (which builds it in a worker). In this
    process the policies run in turn through `caller` (its budget and cache; `on_done` after each
    task; `finished`: results of an interrupted run, by policy name, not run again). On a remote
    executor each policy's tasks run as `shards_per_policy` jobs, traced like `caller`; with
    `resumable` (every task once per policy in the run, as in `eval`) a job skips the tasks whose
    result the run already stored, so a job re-run after a lost node, or a resumed run, stores
    each result once."""
    parts = shards(tasks, shards_per_policy)
    items = [(index, part) for index in range(len(policies)) for part in parts]

    async def in_process(items: Sequence[PolicyPart]) -> list[list[TaskResult]]:
        done: dict[int, Iterator[list[TaskResult]]] = {}
        for index in dict.fromkeys(index for index, _ in items):
            own = [part for i, part in items if i == index]
            (results,) = await run_policies(
                [policies[index][0]],
                [task for part in own for task in part],
                grader,
                caller,
                concurrency=concurrency,
                task_limits=task_limits,
                deadline=deadline,
                on_done=on_done,
                finished=finished,
            )
            done[index] = iter(split_like(results, own))
        return [next(done[index]) for index, _ in items]

    body = PolicyOnTasks(
        tuple(build for _, build in policies), grader, concurrency, task_limits, deadline, resumable
    )
    work = Work(in_process, lambda: RemoteJob.like(caller, body))
    done = await executor.run(work, items)
    return [
        [result for chunk in done[i * len(parts) : (i + 1) * len(parts)] for result in chunk]
        for i in range(len(policies))
    ]


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


async def run_policies(
    coordinators: Sequence[Coordinator],
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    concurrency: int = 32,
    task_limits: Limits | None = None,
    deadline: float | None = None,
    on_done: Callable[[TaskResult], None] | None = None,
    finished: Mapping[str, Sequence[TaskResult]] | None = None,
) -> list[list[TaskResult]]:
    """Each policy over all tasks, in turn; results in task order, one list per policy.
    `finished` holds results of an interrupted run of the same evaluation, by policy name: those
    tasks are not run again."""
    per_policy = []
    for coordinator in coordinators:
        previous = {r.task.id: r for r in (finished or {}).get(coordinator.name, [])}
        fresh = await run_policy(
            coordinator,
            [t for t in tasks if t.id not in previous],
            grader,
            caller,
            concurrency=concurrency,
            task_limits=task_limits,
            on_done=on_done,
            deadline=deadline,
        )
        by_id = previous | {r.task.id: r for r in fresh}
        per_policy.append([by_id[t.id] for t in tasks])
    return per_policy


async def evaluate_policies(
    coordinators: Sequence[Coordinator],
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    concurrency: int = 32,
    task_limits: Limits | None = None,
    with_oracle: bool = True,
    on_done: Callable[[TaskResult], None] | None = None,
    deadline: float | None = None,
    finished: Mapping[str, Sequence[TaskResult]] | None = None,
) -> list[PolicySummary]:
    """`run_policies`, summarised; then the oracle over the single-model policies."""
    results = await run_policies(
        coordinators,
        tasks,
        grader,
        caller,
        concurrency=concurrency,
        task_limits=task_limits,
        deadline=deadline,
        on_done=on_done,
        finished=finished,
    )
    per_policy = {c.name: r for c, r in zip(coordinators, results, strict=True)}
    return summaries_of(per_policy, with_oracle=with_oracle)


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
