"""`consortium eval`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from consortium.cli.app import app, console, err_console
from consortium.cli.options import (
    DEFAULT_TRACES,
    ExecutorOption,
    MaxCostOption,
    PoolOption,
    RayAddressOption,
    SubstituteOption,
    TaskCallsOption,
    TaskTokensOption,
    TracesOption,
    in_range,
)
from consortium.coord.spec_forms import POLICY_SPECS
from consortium.tasks.forms import TASK_SPECS

if TYPE_CHECKING:
    from consortium.evaluation.entry import EvalConfig, EvalResult


@app.command("eval")
def evaluate(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option("--tasks", help=f"The tasks: {TASK_SPECS} (docs/graders.md)."),
    ],
    policy: Annotated[
        list[str] | None,
        typer.Option(
            help=f"What answers: {POLICY_SPECS}; repeatable. Default: every single model and "
            "random."
        ),
    ] = None,
    baselines: Annotated[
        bool | None,
        typer.Option(
            help="Add every single model, random and the oracle. Default: on for a trained policy, "
            "or when no --policy is given."
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(help="Tasks in flight at once.", callback=in_range("--concurrency", 1))
    ] = 32,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
    substitute: SubstituteOption = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the report as JSON.")
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the table as Markdown.")] = None,
    png: Annotated[Path | None, typer.Option(help="Write a bar chart of the group means.")] = None,
    protocol: Annotated[
        Literal["sampled", "routerdc"],
        typer.Option(
            help="sampled: accuracy of the graded answers. routerdc (replay tasks): RouterDC's "
            "metric, the recorded score of the model that answered, beside the best single, "
            "per-dataset best and oracle anchors, with paired bootstrap intervals."
        ),
    ] = "sampled",
    max_cost: MaxCostOption = None,
    task_max_calls: TaskCallsOption = None,
    task_max_tokens: TaskTokensOption = None,
    task_deadline: Annotated[
        float | None,
        typer.Option(
            help="Seconds a task may take; past it, its calls are cancelled, graded wrong."
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue an interrupted eval run (its id, from `traces list`): the tasks it "
            "finished are not run again."
        ),
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Score policies on a task set; print accuracy per dataset, calls, tokens and $ per task,
    and the run's totals.

    With a trained policy the table also holds every single model, random routing, the best single
    model and the per-question-best oracle, with in-distribution (ID) and out-of-distribution (OOD)
    means for the replay datasets.
    """
    from consortium.coord.registry import parse_substitutes
    from consortium.evaluation.entry import EvalConfig

    config = EvalConfig(
        pool=pool,
        tasks=tasks,
        policies=tuple(policy or ()),
        baselines=baselines,
        concurrency=concurrency,
        seed=seed,
        protocol=protocol,
        max_cost=max_cost,
        task_max_calls=task_max_calls,
        task_max_tokens=task_max_tokens,
        task_deadline=task_deadline,
        resume=resume,
        executor=executor,
        ray_address=ray_address,
        traces=traces,
        substitutes=parse_substitutes(substitute or []),
    )
    result = _run_with_progress(config)
    _print_and_write(result, json_out, markdown, png)
    run_id = result.run_id
    err_console.print(f"[dim]run {run_id} · its calls: consortium traces show {run_id}[/dim]")


def _run_with_progress(config: EvalConfig) -> EvalResult:
    """`run_evaluation`, with a progress bar on stderr once the work begins."""
    from consortium.core.progress import task_progress
    from consortium.evaluation.entry import run_evaluation

    progress = task_progress(err_console)

    def start(description: str, total: int | None) -> Callable[[object], None]:
        progress.start()  # only once the work begins: a refused config prints one line
        bar = progress.add_task(description, total=total)
        return lambda _result: progress.advance(bar)

    try:
        return run_evaluation(config, start)
    finally:
        if progress.live.is_started:
            progress.stop()


def _print_and_write(
    result: EvalResult, json_out: Path | None, markdown: Path | None, png: Path | None
) -> None:
    """The table (and every failure's reason) on stdout; the JSON, Markdown and PNG asked for."""
    from consortium.evaluation.tables import failure_lines, plot_report, to_json, to_rich

    table = result.markdown()
    if result.protocol == "routerdc":
        console.print(table, markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(to_rich(result.report))
        for line in failure_lines(result.report):  # never cut: the reason is the point
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result.to_json(), indent=2))
    if markdown:
        markdown.write_text(table)
    if png:
        plot_report(to_json(result.report), png)
