"""`consortium ask` and `consortium conduct`: one question, answered and explained."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from consortium.coord.spec_forms import POLICY_SPECS

if TYPE_CHECKING:
    from consortium.coord.conductor.executor import WorkflowRun
    from consortium.evaluation.one_question import Answer, Conducted

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
    from consortium.evaluation.one_question import AskRequest, ask_question
    from consortium.runtime.budget import Limits

    request = AskRequest(
        question=question,
        pool=pool,
        policy=policy or (f"single:{model}" if model else "random"),
        seed=seed,
        substitute=tuple(substitute or ()),
        limits=Limits(max_calls=max_calls, max_cost=max_cost),
        traces=traces,
    )
    _print_answer(ask_question(request))


def _print_answer(answered: Answer) -> None:
    """The answer on stdout; who answered, why it stopped, what it cost on stderr."""
    outcome, budget = answered.outcome, answered.budget
    console.print(outcome.answer, markup=False, highlight=False)
    answered_by = f" · answered by {outcome.model}" if outcome.model else ""
    stop = next((n for n in outcome.notes if n.startswith("stop: ")), "")
    declared = "".join(f" · {n}" for n in outcome.notes if n.startswith("substituted: "))
    err_console.print(
        f"{answered.coordinator}{answered_by}{f' ({stop})' if stop else ''}{declared} · "
        f"{budget.calls} call(s) · "
        f"{budget.tokens} tokens · ${budget.cost:.6f} · run {answered.run_id}",
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
    from consortium.evaluation.one_question import ConductRequest, conduct_question

    request = ConductRequest(
        question=question,
        pool=pool,
        conductor=conductor,
        workers=workers,
        workflow=workflow,
        recursion=recursion,
        max_depth=max_depth,
        max_calls=max_calls,
        max_steps=max_steps,
        answers=answers,
        traces=traces,
    )
    _print_conducted(conduct_question(request))


def _print_conducted(conducted: Conducted) -> None:
    """The workflow, each step with what it saw, and the answer; what it took on stderr."""
    run, budget = conducted.run, conducted.budget
    console.rule("workflow")
    console.print(run.workflow.to_text(conducted.roster), markup=False, highlight=False)
    console.rule("steps")
    _print_run(run, conducted.roster)
    console.rule("answer")
    console.print(run.answer, markup=False, highlight=False)
    err_console.print(
        f"[dim]{len(run.steps)} step(s) · {budget.calls} call(s) · {budget.tokens} tokens · "
        f"${budget.cost:.6f} · {run.wall_time:.2f}s · run {conducted.run_id}[/dim]"
    )
