"""Runs a workflow as a DAG: a step starts as soon as the steps it may see have finished.

Each worker gets the outputs its access list names as earlier chat turns (that step's subtask as
the user turn, its output as the assistant turn), then its own subtask with the user's question.
The last step's output is the answer. A recursive step hands its context to `recurse` (the
conductor), which writes and runs an inner workflow; its answer is the step's output. A tool step
(`coord.conductor.tools`) calls no model: it passes on the output of one step it sees, and its
trace row (role `tool`, the tool's name as the model, 0 tokens, $0, the chosen step as its
verdict) says which. An `accept` step that confirms an answer ends the workflow: the steps after
it, which waited for it, do not run, and its answer is the workflow's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from consortium.coord.conductor.selection import select_candidate
from consortium.coord.conductor.tool_steps import Candidate, choose
from consortium.coord.conductor.tools import STOPS, AnswerTools
from consortium.coord.conductor.workflow import Step, Workflow, WorkflowModelError
from consortium.core.types import Message, user
from consortium.runtime.caller import TaskCaller
from consortium.runtime.store_records import CallRecord
from consortium.tasks.base import Task


@dataclass
class StepResult:
    step: Step
    output: str
    started: float
    finished: float
    inner: WorkflowRun | None = None
    """The inner run of a recursive step."""
    chosen: int | None = None
    """A tool step: the index of the step whose output it passed on."""
    reason: str = ""
    """A tool step: why it chose that step."""
    ends: bool = False
    """An `accept` step that confirmed its answer: the steps after it did not run."""


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
    """When the last step is a judge or a tool: the index of the model step whose output is
    the answer (through tool steps that passed it on)."""

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
    what a recorded pool with one sample per model holds. `tools`: what tool steps read answers
    with (answer kind, vote weights, the scorer `select` needs).
    """

    def __init__(
        self,
        *,
        attach_question: bool = True,
        sequential: bool = False,
        vary_seed: bool = True,
        tools: AnswerTools | None = None,
        **params: Any,
    ) -> None:
        self.attach_question = attach_question
        self.sequential = sequential
        self.vary_seed = vary_seed
        self.tools = tools or AnswerTools()
        self.params = params

    async def run(
        self,
        workflow: Workflow,
        question: str,
        caller: TaskCaller,
        *,
        task: Task | None = None,
        depth: int = 0,
        recurse: Recurse | None = None,
    ) -> WorkflowRun:
        """`task`: the question's task, whose answer kind and options the tool steps read
        answers by (without it: a bare task of `question`)."""
        results: dict[int, asyncio.Task[StepResult | None]] = {}
        repeats = _repeats(workflow)
        asked = task or Task("", question, "", "")

        async def one(step: Step) -> StepResult | None:
            waited = {j: await results[j] for j in workflow.waits_for(step.index)}
            done = {j: r for j, r in waited.items() if r is not None and not r.ends}
            if len(done) < len(waited):
                return None  # an earlier `accept` ended the workflow
            earlier = [done[j] for j in step.visible]
            started = time.perf_counter()
            if step.tool:
                return await self._tool_step(step, earlier, asked, caller, depth, started)
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
        finished = [r for s in workflow.steps if (r := results[s.index].result()) is not None]
        answer = finished[-1].output if finished else ""
        run = WorkflowRun(workflow, finished, answer, depth)
        if finished and finished[-1].step.selects:
            _apply_selection(run)
        if finished and finished[-1].step.tool:
            _note_tool_answer(run)
        if len(finished) < len(workflow):
            run.notes.append(
                f"the accept (step {finished[-1].step.index}) ended the workflow: "
                f"{len(workflow) - len(finished)} later step(s) not run"
            )
        return run

    async def _tool_step(
        self,
        step: Step,
        earlier: list[StepResult],
        task: Task,
        caller: TaskCaller,
        depth: int,
        started: float,
    ) -> StepResult:
        if step.model not in self.tools.available:
            raise WorkflowModelError(
                f"the tool {step.model!r} is not available (tools: "
                f"{', '.join(self.tools.available)})",
                step=step.index,
                field="model_id",
            )
        candidates = [Candidate(r.step.model, r.output) for r in earlier]
        choice = await choose(step.model, candidates, task, self.tools)
        picked = earlier[choice.position]
        result = StepResult(
            step,
            picked.output,
            started,
            time.perf_counter(),
            chosen=picked.step.index,
            reason=choice.reason,
            ends=choice.ends,
        )
        messages = step_messages(step, earlier, task.question, attach_question=False)
        await caller.run.trace(
            CallRecord(
                run_id=caller.run.run_id,
                model=step.model,
                messages=messages,
                response=picked.output,
                policy=caller.policy,
                task_id=caller.task_id,
                turn=step.index + 1,
                role=role_at("tool", depth),
                verdict=_verdict(step, result),
                latency=result.finished - started,
            )
        )
        return result


def _verdict(step: Step, result: StepResult) -> str:
    """The trace's verdict of a tool step: the step it passed on; for `accept`, whether it ended
    the workflow."""
    if step.model not in STOPS:
        return f"step {result.chosen}"
    return f"step {result.chosen}, ended" if result.ends else "went on"


def _origin(run: WorkflowRun, index: int) -> int:
    """The model step whose text step `index` carries (through tool steps passing it on)."""
    result = run.steps[index]
    while result.step.tool and result.chosen is not None:
        result = run.steps[result.chosen]
    return result.step.index


def _note_tool_answer(run: WorkflowRun) -> None:
    last = run.steps[-1]
    assert last.chosen is not None
    run.selected = _origin(run, last.step.index)
    run.notes.append(
        f"the {last.step.model} (step {last.step.index}) gave step {last.chosen}'s answer: "
        f"{last.reason}"
    )


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
