"""The Conductor coordinator: a model of the pool writes the workflow, the executor runs it.

Any pool model can conduct, including a local transformers model (a pool entry with
`backend = "local"`). With recursion on, the conductor is offered to itself as one more worker;
an inner call sees the parent workflow and the outputs its step may see, and writes a new
workflow or three empty lists (keep the previous answer). Depth and the number of conductor calls
per task are capped; past a cap the previous answer passes through and the run notes it. The
tool steps the executor runs (`coord.conductor.tools`) are offered in the prompt and accepted by
the parser alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from consortium.coord.base import Outcome
from consortium.coord.conductor.executor import (
    RecursionRequest,
    WorkflowExecutor,
    WorkflowRun,
    role_at,
)
from consortium.coord.conductor.prompt import conductor_messages
from consortium.coord.conductor.tools import refuse_tool_names
from consortium.coord.conductor.workflow import Workflow, WorkflowError, parse_workflow
from consortium.core.errors import CoordinatorError
from consortium.core.types import Message, user
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

_EMPTY = Workflow(())


@dataclass
class _Calls:
    made: int = 0


class ConductorCoordinator:
    def __init__(
        self,
        conductor: str,
        workers: Sequence[str],
        *,
        strengths: Mapping[str, str | None] | None = None,
        max_steps: int = 5,
        recursion: bool = False,
        max_depth: int = 1,
        max_conductor_calls: int = 3,
        fallback: str | None = None,
        executor: WorkflowExecutor | None = None,
        name: str | None = None,
        examples: bool = True,
    ) -> None:
        if not workers:
            raise CoordinatorError("the conductor needs at least one worker")
        if conductor in workers:
            raise CoordinatorError(f"{conductor!r} cannot be both the conductor and a worker")
        refuse_tool_names([conductor, *workers])
        self.conductor = conductor
        self.workers = list(workers)
        self.strengths = dict(strengths or {})
        self.max_steps = max_steps
        self.recursion = recursion
        self.max_depth = max_depth
        self.max_conductor_calls = max_conductor_calls
        self.fallback = fallback
        self.executor = executor or WorkflowExecutor()
        self.name = name or f"conductor:{conductor}"
        self.examples = examples
        """Whether the prompt shows the example workflows (a conductor trained without them
        is asked without them)."""

    def offered_self(self, depth: int) -> str | None:
        """The conductor's name where it may pick itself at `depth` (prompt and parser agree)."""
        return self.conductor if self.recursion and depth < self.max_depth else None

    def messages(self, question: str, context: RecursionRequest | None = None) -> list[Message]:
        depth = context.depth if context else 0
        return conductor_messages(
            question,
            self.workers,
            self.strengths,
            conductor=self.offered_self(depth),
            max_steps=self.max_steps,
            context=context,
            tools=self.executor.tools.available,
            examples=self.examples,
        )

    async def write(
        self, question: str, caller: TaskCaller, context: RecursionRequest | None = None
    ) -> str:
        depth = context.depth if context else 0
        completion = await caller.call(
            self.conductor,
            self.messages(question, context),
            role=role_at("conductor", depth),
            turn=0 if context is None else context.step.index + 1,
        )
        return completion.text

    async def conduct(
        self,
        question: str,
        caller: TaskCaller,
        calls: _Calls,
        context: RecursionRequest | None = None,
        task: Task | None = None,
    ) -> WorkflowRun:
        depth = context.depth if context else 0
        if context is not None and calls.made >= self.max_conductor_calls:
            return self._pass_through(
                context, f"conductor call cap ({self.max_conductor_calls}) reached at depth {depth}"
            )
        calls.made += 1
        text = await self.write(question, caller, context)
        try:
            workflow = parse_workflow(
                text,
                self.workers,
                conductor=self.offered_self(depth),
                max_steps=self.max_steps,
                allow_empty=context is not None,
                tools=self.executor.tools.available,
            )
        except WorkflowError as error:
            if context is not None:
                return self._pass_through(context, f"inner {error}")
            if self.fallback is None:
                raise
            completion = await caller.call(self.fallback, [user(question)], role="fallback", turn=1)
            run = WorkflowRun(workflow=_EMPTY, steps=[], answer=completion.text, text=text)
            run.notes.append(f"{error}; answered by fallback model {self.fallback}")
            return run
        if context is not None and not workflow.steps:
            run = self._pass_through(context, None)
            run.text = text
            return run

        async def recurse(request: RecursionRequest) -> WorkflowRun:
            return await self.conduct(question, caller, calls, request, task)

        run = await self.executor.run(
            workflow, question, caller, task=task, depth=depth, recurse=recurse
        )
        run.text = text
        return run

    def _pass_through(self, context: RecursionRequest, note: str | None) -> WorkflowRun:
        run = WorkflowRun(_EMPTY, [], context.previous_answer, context.depth)
        if note:
            run.notes.append(note)
        return run

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        calls = _Calls()
        run = await self.conduct(task.question, caller, calls, task=task)
        return Outcome(
            run.answer, workflow=run, conductor_calls=calls.made, notes=tuple(all_notes(run))
        )


def all_notes(run: WorkflowRun) -> list[str]:
    """The notes of a run and of every inner run, outermost first."""
    notes = list(run.notes)
    for step in run.steps:
        if step.inner is not None:
            notes += all_notes(step.inner)
    return notes
