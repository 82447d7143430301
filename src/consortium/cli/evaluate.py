"""`consortium eval`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from consortium.cli.app import app, console, err_console
from consortium.cli.options import (
    DEFAULT_TRACES,
    ExecutorOption,
    MaxCostOption,
    PoolOption,
    RayAddressOption,
    TaskCallsOption,
    TaskTokensOption,
    TracesOption,
)
from consortium.config import load_pool
from consortium.errors import ConsortiumError
from consortium.runtime.telemetry import Telemetry


@app.command("eval")
def evaluate(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Task spec, e.g. replay:data=DIR:datasets=gsm8k,mmlu:split=test:limit=100",
        ),
    ],
    policy: Annotated[
        list[str] | None,
        typer.Option(
            help="single:NAME, random, conductor:NAME[:workers=a,b:recursion=1], "
            "workflow:single|vote|moa|debate|reflect[:models=a,b] or a trained policy directory; "
            "repeatable. Default: every single model and random."
        ),
    ] = None,
    baselines: Annotated[
        bool | None,
        typer.Option(
            help="Add every single model, random and the oracle. Default: on for a trained policy, "
            "or when no --policy is given."
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Tasks in flight at once.")] = 32,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
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
    """Score policies on a task set; print accuracy per dataset, calls, tokens and cost.

    With a trained policy the table also holds every single model, random routing, the best single
    model and the per-question-best oracle, with in-distribution (ID) and out-of-distribution (OOD)
    means for the replay datasets.
    """
    from consortium.coord.registry import SpecBuilder, build_coordinator
    from consortium.evaluate import (
        EvalReport,
        RemoteEvaluation,
        TaskResult,
        evaluate_policies,
        evaluate_remote,
        stored_results,
        summaries_of,
    )
    from consortium.pool import Pool
    from consortium.progress import task_progress
    from consortium.replay.protocol import (
        protocol_json,
        protocol_markdown,
        require_recorded,
        routerdc_rows,
    )
    from consortium.report import plot_report, to_json, to_markdown, to_rich
    from consortium.runtime.budget import Budget, Limits
    from consortium.runtime.caller import Caller
    from consortium.runtime.dist import make_executor
    from consortium.runtime.store import TraceStore
    from consortium.tasks.registry import load_task_set
    from consortium.tasks.replay import ID_DATASETS, OOD_DATASETS

    config = load_pool(pool)
    task_set = load_task_set(tasks)
    if protocol == "routerdc":
        require_recorded(task_set.tasks)
    chosen = list(policy or [])
    if baselines is None:
        baselines = not chosen or any(Path(p).is_dir() for p in chosen)
    if baselines:
        chosen += [f"single:{m}" for m in config.names if f"single:{m}" not in chosen]
        chosen += ["random"] if "random" not in chosen else []
    coordinators = [build_coordinator(spec, config, seed) for spec in chosen]
    store = TraceStore(traces)
    settings = {"tasks": tasks, "policies": chosen}
    finished: dict[str, list[TaskResult]] = {}
    if resume is not None:
        earlier = store.run(resume)
        if earlier is None or earlier["kind"] != "eval":
            raise ConsortiumError(f"--resume {resume}: no eval run with that id in {traces}")
        if json.loads(earlier["config"] or "{}") != settings:
            raise ConsortiumError(
                f"--resume {resume}: that run evaluated other tasks or policies "
                f"({earlier['config']})"
            )
        run_id = resume
        finished = stored_results(store, run_id, task_set.tasks)
    else:
        run_id = store.start_run("eval", pool=str(pool), config=settings)

    task_limits = Limits(max_calls=task_max_calls, max_tokens=task_max_tokens)
    runner = make_executor(executor, ray_address)
    if runner is not None and max_cost is not None:
        raise ConsortiumError("--max-cost caps one process's spending; it needs --executor local")
    if runner is not None and resume is not None:
        raise ConsortiumError("--resume runs with --executor local")

    async def measure() -> dict[str, list[TaskResult]]:
        if runner is not None:
            job = RemoteEvaluation(
                config, task_set.grader, traces, run_id, concurrency, task_limits
            )
            builders = [SpecBuilder(spec, seed) for spec in chosen]
            with task_progress(err_console) as progress:
                progress.add_task(f"{len(chosen)} policies on {runner.name}", total=None)
                per_policy = await asyncio.to_thread(
                    evaluate_remote, builders, task_set.tasks, job, runner
                )
            return {results[0].policy: results for results in per_policy}
        collected: dict[str, list[TaskResult]] = {}
        async with Pool(config) as members:
            caller = Caller(
                members,
                store,
                run_id,
                budget=Budget(Limits(max_cost=max_cost)),
                telemetry=Telemetry.from_env(),
            )
            with task_progress(err_console) as progress:
                remaining = len(task_set.tasks) * len(coordinators)
                remaining -= sum(len(done) for done in finished.values())
                bar = progress.add_task(f"{len(coordinators)} policies", total=remaining)
                await evaluate_policies(
                    coordinators,
                    task_set.tasks,
                    task_set.grader,
                    caller,
                    concurrency=concurrency,
                    task_limits=task_limits,
                    on_done=lambda _result: progress.advance(bar),
                    deadline=task_deadline,
                    finished=finished,
                    collect=collected,
                )
        return collected

    try:
        per_policy = asyncio.run(measure())
    except BaseException:
        store.finish_run(run_id, "failed")  # finished calls stay stored; --resume continues
        raise

    def build_report() -> EvalReport:
        # The routerdc table carries its own oracle, from the recorded outcomes.
        summaries = summaries_of(per_policy, with_oracle=protocol == "sampled")
        datasets = list(dict.fromkeys(t.dataset for t in task_set.tasks))
        groups = {
            name: [d for d in datasets if d in members_]
            for name, members_ in (("ID", ID_DATASETS), ("OOD", OOD_DATASETS))
        }
        groups = {name: group for name, group in groups.items() if group}
        groups["all"] = datasets
        return EvalReport(
            pool=f"{pool} ({task_set.description})",
            tasks=tasks,
            datasets=datasets,
            summaries=summaries,
            groups=groups,
            run_id=run_id,
        )

    report = build_report()
    store.finish_run(run_id, "finished")
    if protocol == "routerdc":
        rows = routerdc_rows(per_policy, task_set.tasks, {m.name: m.model for m in config.models})
        table = protocol_markdown(rows, report.datasets, report.pool)
        console.print(table, markup=False, highlight=False, soft_wrap=True)
        written: dict[str, object] = {"protocol": "routerdc", "pool": report.pool}
        written |= {"tasks": tasks, "run_id": run_id, **protocol_json(rows)}
    else:
        console.print(to_rich(report))
        table, written = to_markdown(report), to_json(report)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(written, indent=2))
    if markdown:
        markdown.write_text(table)
    if png:
        plot_report(to_json(report), png)
    err_console.print(f"[dim]run {run_id} · its calls: consortium traces show {run_id}[/dim]")
