"""One question, answered: `consortium ask` (any policy) and `consortium conduct` (a workflow a
conductor writes, or one given), each in a trace run of its own."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from consortium.core.errors import ConsortiumError
from consortium.pool.config import PoolConfig, load_pool
from consortium.runtime.budget import Budget, Limits
from consortium.runtime.store import DEFAULT_TRACES
from consortium.runtime.telemetry import Telemetry

if TYPE_CHECKING:
    from consortium.coord.base import Outcome
    from consortium.coord.conductor.executor import WorkflowExecutor, WorkflowRun
    from consortium.coord.conductor.workflow import Workflow
    from consortium.runtime.caller import TaskCaller


@dataclass(frozen=True)
class AskRequest:
    question: str
    pool: Path
    policy: str
    """Any `--policy` form `coord.registry.build_coordinator` resolves."""
    seed: int = 0
    substitute: tuple[str, ...] = ()
    """`--substitute OLD=NEW` options, as given."""
    limits: Limits = field(default_factory=Limits)
    traces: str = DEFAULT_TRACES


@dataclass(frozen=True)
class Answer:
    outcome: Outcome
    coordinator: str
    """The name of the coordinator that answered."""
    budget: Budget
    """What the question took: calls, tokens, cost."""
    run_id: str


def ask_question(request: AskRequest) -> Answer:
    """The policy's answer to one question; an empty question, a bad pool file or policy is one
    `ConsortiumError` before any call."""
    from consortium.coord.registry import build_coordinator, parse_substitutes
    from consortium.pool import Pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Task

    if not request.question.strip():
        raise ConsortiumError("the question is empty")
    config = load_pool(request.pool)
    coordinator = build_coordinator(
        request.policy, config, request.seed, parse_substitutes(request.substitute)
    )
    store = TraceStore(request.traces)
    budget = Budget(request.limits)

    async def go(run_id: str) -> Outcome:
        async with Pool(config) as members:
            caller = Caller(members, store, run_id, budget=budget, telemetry=Telemetry.from_env())
            task_caller = caller.for_task("ask", coordinator.name)
            task = Task("ask", request.question, "ask", "none")
            return await coordinator.run(task, task_caller)

    with store.running("ask", pool=str(request.pool)) as run:
        outcome = asyncio.run(go(run.run_id))
    return Answer(outcome, coordinator.name, budget, run.run_id)


@dataclass(frozen=True)
class ConductRequest:
    question: str
    pool: Path
    conductor: str | None = None
    """The pool model that writes the workflow; exactly one of it and `workflow` is given."""
    workers: str | None = None
    """Comma-separated worker models (None: the pool minus the conductor)."""
    workflow: str | None = None
    """The three lists as text, or @FILE."""
    recursion: bool = False
    max_depth: int = 1
    max_calls: int = 3
    max_steps: int = 5
    answers: str | None = None
    """How the tool steps read answers (`coord.conductor.spec.answer_kind`)."""
    traces: str = DEFAULT_TRACES


@dataclass(frozen=True)
class Conducted:
    run: WorkflowRun
    roster: list[str]
    """The workers, in the order the workflow's model ids index."""
    budget: Budget
    run_id: str


def conduct_question(request: ConductRequest) -> Conducted:
    """One question through a workflow (written by the conductor, or given), run as a DAG."""
    from consortium.coord.conductor.executor import WorkflowExecutor
    from consortium.coord.conductor.tools import AnswerTools
    from consortium.coord.spec_values import answer_kind
    from consortium.pool import Pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore

    if not request.question.strip():
        raise ConsortiumError("the question is empty")
    if (request.conductor is None) == (request.workflow is None):
        raise ConsortiumError("give either --conductor MODEL or --workflow TEXT|@FILE")
    executor = WorkflowExecutor(tools=AnswerTools(answer_kind(request.answers, "--answers")))
    config = load_pool(request.pool)
    if request.conductor is not None:
        config.get(request.conductor)
    roster = (
        [config.get(name).name for name in request.workers.split(",") if name]
        if request.workers
        else [n for n in config.names if n != request.conductor]
    )
    if not roster:
        raise ConsortiumError("no workers: the pool holds only the conductor")
    fixed = _given_workflow(request.workflow, roster, request.max_steps)
    store = TraceStore(request.traces)
    budget = Budget(label="run")

    async def go(run_id: str) -> WorkflowRun:
        async with Pool(config) as members:
            caller = Caller(members, store, run_id, budget=budget, telemetry=Telemetry.from_env())
            task_caller = caller.for_task("conduct", "conduct")
            if fixed is not None:
                return await executor.run(fixed, request.question, task_caller)
            return await _written_and_run(request, config, roster, executor, task_caller)

    with store.running("conduct", pool=str(request.pool)) as stored:
        run = asyncio.run(go(stored.run_id))
    return Conducted(run, roster, budget, stored.run_id)


def _given_workflow(workflow: str | None, roster: list[str], max_steps: int) -> Workflow | None:
    """`--workflow` parsed (read from the file after @), or None when a conductor writes it."""
    from consortium.coord.conductor.workflow import parse_workflow

    if workflow is None:
        return None
    text = workflow
    if workflow.startswith("@"):
        try:
            text = Path(workflow[1:]).read_text(encoding="utf-8")
        except OSError as error:
            raise ConsortiumError(f"--workflow {workflow}: {error.strerror}") from None
    return parse_workflow(text, roster, max_steps=max_steps)


async def _written_and_run(
    request: ConductRequest,
    config: PoolConfig,
    roster: list[str],
    executor: WorkflowExecutor,
    task_caller: TaskCaller,
) -> WorkflowRun:
    """The conductor's workflow for the question, run."""
    from consortium.coord.conductor.policy import ConductorCoordinator
    from consortium.tasks.base import Task

    assert request.conductor is not None
    policy = ConductorCoordinator(
        request.conductor,
        roster,
        strengths={m.name: m.strengths for m in config.models},
        max_steps=request.max_steps,
        recursion=request.recursion,
        max_depth=request.max_depth,
        max_conductor_calls=request.max_calls,
        executor=executor,
    )
    outcome = await policy.run(Task("conduct", request.question, "ask", "none"), task_caller)
    assert outcome.workflow is not None
    return outcome.workflow
