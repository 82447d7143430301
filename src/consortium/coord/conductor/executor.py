"""Runs a workflow as a DAG: a step starts as soon as the steps it may see have finished.

Each worker gets the outputs its access list names as earlier chat turns (that step's subtask as
the user turn, its output as the assistant turn), then its own subtask with the user's question.
The last step's output is the answer. A recursive step hands its context to `recurse` (the
conductor), which writes and runs an inner workflow; its answer is the step's output.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from consortium.coord.conductor.selection import select_candidate
from consortium.coord.conductor.workflow import Step, Workflow
from consortium.core.types import Message, user
from consortium.runtime.caller import TaskCaller


@dataclass
class StepResult:
    step: Step
    output: str
    started: float
    finished: float
    inner: WorkflowRun | None = None
    """The inner run of a recursive step."""


@dataclass
class WorkflowRun:
    workflow: Workflow
    steps: list[StepResult]
    answer: str
    depth: int = 0
    text: str | None = None
    """The conductor's raw text, when a conductor wrote the workflow."""
    notes: list[str] = field(default_factory=list)
    selected: int | None = None
    """When the last step is a judge: the index of the step whose output is the answer."""

    @property
    def wall_time(self) -> float:
        if not self.steps:
            return 0.0
        return max(s.finished for s in self.steps) - min(s.started for s in self.steps)


@dataclass(frozen=True)
class RecursionRequest:
    """What an inner conductor call sees: the question, the parent workflow and the outputs the
    recursive step may see (the last of them is the "previous answer")."""

    question: str
    parent: Workflow
    step: Step
    visible: tuple[StepResult, ...]
    depth: int

    @property
    def previous_answer(self) -> str:
        return self.visible[-1].output if self.visible else ""


Recurse = Callable[[RecursionRequest], Awaitable["WorkflowRun"]]


def role_at(role: str, depth: int) -> str:
    """The trace's role of a call: `worker`, or `worker@1` inside a recursive call."""
    return role if depth == 0 else f"{role}@{depth}"


def step_prompt(question: str, subtask: str, attach_question: bool) -> str:
    if not attach_question:
        return subtask
    return f"{subtask}\n\nThe user's question, for reference:\n{question}"


def step_messages(
    step: Step, earlier: list[StepResult], question: str, *, attach_question: bool = True
) -> list[Message]:
    """The chat a worker receives: the steps it may see, then its own subtask."""
    messages: list[Message] = []
    for result in earlier:
        messages.append(user(result.step.subtask))
        messages.append({"role": "assistant", "content": result.output})
    messages.append(user(step_prompt(question, step.subtask, attach_question)))
    return messages


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            return _first_error(error)
        if not isinstance(error, asyncio.CancelledError):
            return error
    return group.exceptions[0]


def _repeats(workflow: Workflow) -> list[int]:
    """For each step, how many earlier steps call the same model."""
    seen: dict[str, int] = {}
    counts = []
    for step in workflow.steps:
        counts.append(seen.get(step.model, 0))
        seen[step.model] = counts[-1] + 1
    return counts


class WorkflowExecutor:
    """Runs workflows through a task's caller (budget, cache, trace).

    `sequential=True` runs the steps one after another in list order (the paper's execution, and
    the baseline of `bench/dag_efficiency.py`). `vary_seed` sends, as the request seed, how many
    earlier steps of the workflow went to the same model: repeated steps of one model are
    separate samples (0, 1, 2 …), and each model's first step asks for its first sample, which is
    what a recorded pool with one sample per model holds.
    """

    def __init__(
        self,
        *,
        attach_question: bool = True,
        sequential: bool = False,
        vary_seed: bool = True,
        **params: Any,
    ) -> None:
        self.attach_question = attach_question
        self.sequential = sequential
        self.vary_seed = vary_seed
        self.params = params

    async def run(
        self,
        workflow: Workflow,
        question: str,
        caller: TaskCaller,
        *,
        depth: int = 0,
        recurse: Recurse | None = None,
    ) -> WorkflowRun:
        results: dict[int, asyncio.Task[StepResult]] = {}
        repeats = _repeats(workflow)

        async def one(step: Step) -> StepResult:
            earlier = [await results[j] for j in step.visible]
            started = time.perf_counter()
            if step.recursive:
                if recurse is None:
                    raise RuntimeError("a recursive step needs a conductor to recurse into")
                inner = await recurse(
                    RecursionRequest(question, workflow, step, tuple(earlier), depth + 1)
                )
                return StepResult(step, inner.answer, started, time.perf_counter(), inner=inner)
            params: dict[str, Any] = dict(self.params)
            if self.vary_seed:
                params.setdefault("seed", repeats[step.index])
            completion = await caller.call(
                step.model,
                step_messages(step, earlier, question, attach_question=self.attach_question),
                role=role_at("worker", depth),
                turn=step.index + 1,
                **params,
            )
            return StepResult(step, completion.text, started, time.perf_counter())

        if self.sequential:
            for step in workflow.steps:
                results[step.index] = asyncio.ensure_future(one(step))
                await results[step.index]
        else:
            try:
                async with asyncio.TaskGroup() as group:
                    for step in workflow.steps:
                        results[step.index] = group.create_task(one(step))
            except BaseExceptionGroup as errors:
                raise _first_error(errors) from None
        finished = [results[step.index].result() for step in workflow.steps]
        answer = finished[-1].output if finished else ""
        run = WorkflowRun(workflow, finished, answer, depth)
        if finished and finished[-1].step.selects:
            _apply_selection(run)
        return run


def _apply_selection(run: WorkflowRun) -> None:
    """The judge's pick becomes the answer: the chosen step's own output."""
    judge = run.steps[-1]
    seen = [run.steps[j] for j in judge.step.visible]
    chosen = select_candidate(judge.output, [s.output for s in seen])
    if chosen is None:
        return
    picked = seen[chosen.index]
    run.answer = picked.output
    run.selected = picked.step.index
    if chosen.how == "judge":
        note = f"the judge (step {judge.step.index}) gave step {picked.step.index}'s answer"
    else:
        note = (
            f"the judge (step {judge.step.index}) gave no candidate's answer; the candidates' "
            f"majority picked step {picked.step.index}"
        )
    run.notes.append(note)
