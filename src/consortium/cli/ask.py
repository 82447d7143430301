"""`consortium ask` and `consortium conduct`: one question, answered and explained."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.coord.spec_forms import POLICY_SPECS
from consortium.core.errors import ConsortiumError
from consortium.pool.config import load_pool
from consortium.runtime.telemetry import Telemetry

if TYPE_CHECKING:
    from consortium.coord.base import Outcome
    from consortium.coord.conductor.executor import WorkflowRun

from consortium.cli.app import app, console, err_console
from consortium.cli.options import (
    DEFAULT_TRACES,
    MaxCallsOption,
    MaxCostOption,
    PoolOption,
    SubstituteOption,
    TracesOption,
)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    pool: PoolOption,
    model: Annotated[
        str | None, typer.Option(help="Ask this pool model (default: random).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(help=f"What answers: {POLICY_SPECS}. Default: --model, else random."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
    substitute: SubstituteOption = None,
    max_calls: MaxCallsOption = None,
    max_cost: MaxCostOption = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Ask the consortium one question and print the answer with who answered and what it cost."""
    from consortium.coord.registry import build_coordinator, parse_substitutes
    from consortium.pool import Pool
    from consortium.runtime.budget import Budget, Limits
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Task

    if not question.strip():
        raise ConsortiumError("the question is empty")
    config = load_pool(pool)
    coordinator = build_coordinator(
        policy or (f"single:{model}" if model else "random"),
        config,
        seed,
        parse_substitutes(substitute or []),
    )
    limits = Limits(max_calls=max_calls, max_cost=max_cost)
    store = TraceStore(traces)

    async def go(run_id: str) -> tuple[Outcome, Caller]:
        async with Pool(config) as members:
            caller = Caller(
                members, store, run_id, budget=Budget(limits), telemetry=Telemetry.from_env()
            )
            task_caller = caller.for_task("ask", coordinator.name)
            outcome = await coordinator.run(Task("ask", question, "ask", "none"), task_caller)
            return outcome, caller

    with store.running("ask", pool=str(pool)) as run:
        outcome, caller = asyncio.run(go(run.run_id))
    run_id = run.run_id
    console.print(outcome.answer, markup=False, highlight=False)
    budget = caller.budget
    answered = f" · answered by {outcome.model}" if outcome.model else ""
    stop = next((n for n in outcome.notes if n.startswith("stop: ")), "")
    declared = "".join(f" · {n}" for n in outcome.notes if n.startswith("substituted: "))
    err_console.print(
        f"{coordinator.name}{answered}{f' ({stop})' if stop else ''}{declared} · "
        f"{budget.calls} call(s) · "
        f"{budget.tokens} tokens · ${budget.cost:.6f} · run {run_id}",
        style="dim",
        markup=False,
        highlight=False,
    )


def _print_run(run: WorkflowRun, roster: list[str], indent: str = "") -> None:
    from rich.markup import escape

    if run.text is not None and not run.steps and not run.notes:
        console.print(f"{indent}[dim](no steps: the previous answer stands)[/dim]")
    for note in run.notes:
        console.print(f"{indent}[yellow]note:[/yellow] {escape(note)}")
    for result in run.steps:
        step = result.step
        sees = (
            "all earlier"
            if step.access == "all"
            else (", ".join(map(str, step.access)) or "nothing")
        )
        who = "the conductor (recursion)" if step.recursive else step.model
        console.print(
            f"{indent}[bold]step {step.index}[/bold] · {escape(who)} · sees {sees} · "
            f"{result.finished - result.started:.2f}s"
        )
        console.print(f"{indent}  [cyan]{escape(step.subtask)}[/cyan]")
        if result.inner is not None:
            _print_run(result.inner, roster, indent + "    ")
        console.print(f"{indent}  {escape(result.output.strip())}")


@app.command()
def conduct(
    question: Annotated[str, typer.Argument(help="The question.")],
    pool: PoolOption,
    conductor: Annotated[
        str | None,
        typer.Option(help="Pool model that writes the workflow (a local one: backend = 'local')."),
    ] = None,
    workers: Annotated[
        str | None,
        typer.Option(help="Comma-separated worker models (default: the pool minus the conductor)."),
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option(
            help="Run this workflow instead of asking a conductor: the three lists as text, or "
            "@FILE."
        ),
    ] = None,
    recursion: Annotated[
        bool, typer.Option(help="Offer the conductor to itself as one more worker.")
    ] = False,
    max_depth: Annotated[int, typer.Option(help="Deepest recursive call.")] = 1,
    max_calls: Annotated[int, typer.Option(help="Conductor calls per question, all depths.")] = 3,
    max_steps: Annotated[int, typer.Option(help="Steps per workflow (paper: 5).")] = 5,
    answers: Annotated[
        str | None,
        typer.Option(
            help="How the tool steps (vote, check, accept) read and compare answers: number, "
            "latex, choice, date, code or text. Default: text, each answer's stated final answer."
        ),
    ] = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Answer one question with a workflow: a conductor model writes it (or --workflow gives it),
    the steps run as a DAG, and each step is printed with what it saw.

    Examples:

      consortium conduct --pool pool.toml --conductor gpt-4o "How many primes are below 100?"

      consortium conduct --pool pool.toml --workers a,b,c --workflow \\
        'model_id = [0, 1, 2]
         subtasks = ["Solve it.", "Solve it.", "Compare both; give the final answer."]
         access_list = [[], [], "all"]' "What is 17 * 23?"
    """
    from consortium.coord.conductor.executor import WorkflowExecutor
    from consortium.coord.conductor.policy import ConductorCoordinator
    from consortium.coord.conductor.spec import answer_kind
    from consortium.coord.conductor.tools import AnswerTools
    from consortium.coord.conductor.workflow import parse_workflow
    from consortium.pool import Pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Task

    if not question.strip():
        raise ConsortiumError("the question is empty")
    if (conductor is None) == (workflow is None):
        raise ConsortiumError("give either --conductor MODEL or --workflow TEXT|@FILE")
    executor = WorkflowExecutor(tools=AnswerTools(answer_kind(answers, "--answers")))
    config = load_pool(pool)
    if conductor is not None:
        config.get(conductor)
    roster = (
        [config.get(name).name for name in workers.split(",") if name]
        if workers
        else [n for n in config.names if n != conductor]
    )
    if not roster:
        raise ConsortiumError("no workers: the pool holds only the conductor")
    fixed = None
    if workflow is not None:
        text = workflow
        if workflow.startswith("@"):
            try:
                text = Path(workflow[1:]).read_text(encoding="utf-8")
            except OSError as error:
                raise ConsortiumError(f"--workflow {workflow}: {error.strerror}") from None
        fixed = parse_workflow(text, roster, max_steps=max_steps)
    store = TraceStore(traces)

    async def go(run_id: str) -> tuple[WorkflowRun, Caller]:
        async with Pool(config) as members:
            caller = Caller(members, store, run_id, telemetry=Telemetry.from_env())
            task_caller = caller.for_task("conduct", "conduct")
            if fixed is not None:
                return await executor.run(fixed, question, task_caller), caller
            assert conductor is not None
            policy = ConductorCoordinator(
                conductor,
                roster,
                strengths={m.name: m.strengths for m in config.models},
                max_steps=max_steps,
                recursion=recursion,
                max_depth=max_depth,
                max_conductor_calls=max_calls,
                executor=executor,
            )
            outcome = await policy.run(Task("conduct", question, "ask", "none"), task_caller)
            assert outcome.workflow is not None
            return outcome.workflow, caller

    with store.running("conduct", pool=str(pool)) as stored:
        run, caller = asyncio.run(go(stored.run_id))
    run_id = stored.run_id
    console.rule("workflow")
    console.print(run.workflow.to_text(roster), markup=False, highlight=False)
    console.rule("steps")
    _print_run(run, roster)
    console.rule("answer")
    console.print(run.answer, markup=False, highlight=False)
    budget = caller.budget
    err_console.print(
        f"[dim]{len(run.steps)} step(s) · {budget.calls} call(s) · {budget.tokens} tokens · "
        f"${budget.cost:.6f} · {run.wall_time:.2f}s · run {run_id}[/dim]"
    )
