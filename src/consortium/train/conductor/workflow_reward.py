"""The GRPO reward of a Conductor's completion (the paper's gate): 0 when its three lists do not
parse and validate against the prompt's worker subset, else the workflow runs on the real workers
and scores 1 when the grader accepts the answer, 0.5 when it does not.

The cost-aware variant (`cost_weight` λ > 0) takes λ x the workflow's $ off a valid workflow's
score, the $ in units of the task's `meta["cost_unit"]` (its data set's best single model's mean
$ per question, `mixed_pool`): the gate still gives 0 to an invalid workflow, and a valid one
scores (1 or 0.5) - λ x cost/unit."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.workflow import Step, WorkflowError, parse_workflow
from consortium.core.errors import AgentError, BudgetExceeded
from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor, Work, shards, split_like
from consortium.runtime.jobs import RemoteJob
from consortium.tasks.base import Grader, Task

T = TypeVar("T")

FORMAT_FAIL = 0.0
WRONG = 0.5
RIGHT = 1.0


class BackgroundLoop:
    """An event loop in a thread, for the async pool inside TRL's synchronous reward calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


def completion_text(completion: Any) -> str:
    """TRL hands plain strings for text prompts, message lists for conversational ones."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return ""


@dataclass(frozen=True)
class Scored:
    """One rollout's reward and what it is made of."""

    reward: float
    valid: bool
    right: bool = False
    cost: float = 0.0
    calls: int = 0
    shape: tuple[int, int, int] | None = None
    """A valid workflow's steps, distinct workers and tool steps."""
    failed: bool = False
    """A valid workflow whose run stopped at a failed step (on replay: a model asked for a
    sample its records do not hold); it scores as wrong."""


def step_counts(steps: Sequence[Step]) -> tuple[int, int, int]:
    """A workflow's steps, distinct workers (models) and tool steps: its shape in the reports."""
    called = {step.model for step in steps if not step.tool}
    return len(steps), len(called), sum(1 for step in steps if step.tool)


async def score_rollout(
    text: str,
    task: Task,
    workers: list[str],
    grader: Grader,
    caller: Caller,
    *,
    max_steps: int,
    task_limits: Limits,
    executor: WorkflowExecutor,
    cost_weight: float = 0.0,
) -> Scored:
    """One completion's reward: FORMAT_FAIL if it is no workflow, else RIGHT or WRONG as the
    grader says of the workflow's answer, less `cost_weight` x its $ in the task's cost unit.
    Tool steps the executor runs pass the gate (the prompt offers the same tools)."""
    try:
        workflow = parse_workflow(
            text, workers, max_steps=max_steps, tools=executor.tools.available
        )
    except WorkflowError:
        return Scored(FORMAT_FAIL, False)
    shape = step_counts(workflow.steps)
    task_caller = caller.for_task(task.id, "grpo", task_limits)
    right = failed = False
    try:
        run = await executor.run(workflow, task.question, task_caller, task=task)
    except (AgentError, BudgetExceeded):
        failed = True  # it parsed and ran; a worker failure is not a format failure
    else:
        right = (await asyncio.to_thread(grader.grade, task, run.answer)).correct
    cost = task_caller.budget.cost
    score = (RIGHT if right else WRONG) - cost_penalty(task, cost, cost_weight)
    return Scored(score, True, right, cost, task_caller.budget.calls, shape, failed)


def cost_penalty(task: Task, cost: float, cost_weight: float) -> float:
    """λ x cost in the task's cost unit; 0 when λ is 0 or the task declares no unit."""
    unit = task.meta.get("cost_unit")
    if not cost_weight or not unit:
        return 0.0
    return cost_weight * cost / float(unit)


Rollout = tuple[str, str, list[str]]
"""A completion's text, its task id and its workers."""


async def score_rollouts(
    rollouts: Sequence[Rollout],
    tasks: dict[str, Task],
    grader: Grader,
    caller: Caller,
    *,
    max_steps: int,
    task_limits: Limits,
    executor: WorkflowExecutor,
    cost_weight: float = 0.0,
) -> list[Scored]:
    """Every rollout's score, all concurrently."""
    return list(
        await asyncio.gather(
            *(
                score_rollout(
                    text,
                    tasks[task_id],
                    workers,
                    grader,
                    caller,
                    max_steps=max_steps,
                    task_limits=task_limits,
                    executor=executor,
                    cost_weight=cost_weight,
                )
                for text, task_id, workers in rollouts
            )
        )
    )


class WorkflowReward:
    """The reward function TRL calls: format gate x correctness, by running each workflow."""

    __name__ = "workflow_reward"

    def __init__(
        self,
        pool: PoolConfig,
        tasks: Sequence[Task],
        grader: Grader,
        *,
        max_steps: int = 5,
        task_limits: Limits | None = None,
        executor: WorkflowExecutor | None = None,
        jobs: Executor = LocalExecutor(),
        shards_per_call: int = 4,
        cost_weight: float = 0.0,
    ) -> None:
        self.cost_weight = cost_weight
        self.jobs = jobs
        self.shards_per_call = shards_per_call
        self.pool_config = pool
        self.tasks = {task.id: task for task in tasks}
        self.grader = grader
        self.max_steps = max_steps
        self.task_limits = task_limits or Limits(max_calls=max_steps)
        self.executor = executor or WorkflowExecutor()
        self.history: list[dict[str, float]] = []
        self._loop = BackgroundLoop()
        self._pool = self._loop.run(self._open())
        self._caller = Caller(self._pool, None, "grpo")

    async def _open(self) -> Pool:
        return Pool(self.pool_config)

    def work(self) -> Work[list[Rollout], list[Scored]]:
        """Rewards of shards of rollouts: in this process all concurrently through its pool;
        remotely one job per shard."""

        async def in_process(parts: Sequence[list[Rollout]]) -> list[list[Scored]]:
            rewards = await score_rollouts(
                [rollout for part in parts for rollout in part],
                self.tasks,
                self.grader,
                self._caller,
                max_steps=self.max_steps,
                task_limits=self.task_limits,
                executor=self.executor,
                cost_weight=self.cost_weight,
            )
            return split_like(rewards, parts)

        body = ScoreRollouts(
            self.tasks, self.grader, self.max_steps, self.task_limits, self.cost_weight
        )
        return Work(in_process, lambda: RemoteJob.like(self._caller, body))

    def __call__(
        self,
        prompts: list[Any],
        completions: list[Any],
        task_id: list[str],
        workers: list[str],
        **_: Any,
    ) -> list[float]:
        texts = [completion_text(c) for c in completions]
        rosters = [json.loads(w) for w in workers]
        return [s.reward for s in self.score(list(zip(texts, task_id, rosters, strict=True)))]

    def score(self, rollouts: list[Rollout]) -> list[Scored]:
        """Every rollout's score; the batch's means join `history`."""
        parts = shards(rollouts, self.shards_per_call)
        done = self._loop.run(self.jobs.run(self.work(), parts))
        scored = [one for part in done for one in part]
        n = len(scored)
        self.history.append(
            {
                "mean": sum(s.reward for s in scored) / n,
                "parsed": sum(s.valid for s in scored) / n,
                "right": sum(s.right for s in scored) / n,
                "cost": sum(s.cost for s in scored) / n,
                "calls": sum(s.calls for s in scored) / n,
            }
        )
        return scored

    def close(self) -> None:
        self._loop.run(self._pool.aclose())
        self._loop.close()


@dataclass(frozen=True)
class ScoreRollouts:
    """A remote job's body: rewards of a shard of rollouts, as `WorkflowReward.score` gives
    them in process."""

    tasks: dict[str, Task]
    grader: Grader
    max_steps: int
    task_limits: Limits
    cost_weight: float = 0.0

    async def __call__(self, rollouts: list[Rollout], caller: Caller) -> list[Scored]:
        return await score_rollouts(
            rollouts,
            self.tasks,
            self.grader,
            caller,
            max_steps=self.max_steps,
            task_limits=self.task_limits,
            executor=WorkflowExecutor(),
            cost_weight=self.cost_weight,
        )
