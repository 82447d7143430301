"""Run policies over a task set, grade every answer, and summarise per dataset.

Results are written to the trace store as each task completes, so an interrupted evaluation keeps
everything it finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from consortium.coord.base import Coordinator, Outcome
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError, reason
from consortium.evaluation.results import (
    PolicySummary,
    TaskResult,
    stored_results,
    summaries_of,
)
from consortium.pool.config import PoolConfig
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, Work, shards, split_like
from consortium.runtime.jobs import RemoteJob
from consortium.runtime.store_records import ResultRecord
from consortium.tasks.base import Grade, Grader, Task


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
    finished: Sequence[TaskResult] = (),
) -> list[TaskResult]:
    """Every task through `coordinator`, graded, in task order; `deadline` (seconds) bounds each
    task's whole run: past it the task's calls are cancelled and it is graded wrong with the
    reason. A task whose result `finished` holds (this policy's stored results of the same run,
    resumed) is not run again."""
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

    done = {result.task.id: result for result in finished}
    fresh = await asyncio.gather(*(one(task) for task in tasks if task.id not in done))
    done |= {result.task.id: result for result in fresh}
    return [done[task.id] for task in tasks]


def _reference(task: Task) -> str | None:
    """The reference answer as text, for the trace store (None when a task has none, or its
    reference is a test program rather than an answer)."""
    if task.reference is None or task.dataset in ("humaneval", "mbpp"):
        return None
    return str(task.reference)[:2000]


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
        stored: Sequence[TaskResult] = []
        if self.resumable and caller.store is not None:
            found = stored_results(caller.store, caller.run_id, tasks)
            stored = found.get(coordinator.name, [])
        return await run_policy(
            coordinator,
            tasks,
            self.grader,
            caller,
            concurrency=self.concurrency,
            task_limits=self.task_limits,
            deadline=self.deadline,
            finished=stored,
        )


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
    return [
        await run_policy(
            coordinator,
            tasks,
            grader,
            caller,
            concurrency=concurrency,
            task_limits=task_limits,
            on_done=on_done,
            deadline=deadline,
            finished=(finished or {}).get(coordinator.name, []),
        )
        for coordinator in coordinators
    ]


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
