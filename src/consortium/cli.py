"""`consortium …`: the command-line interface."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from consortium.config import PoolConfig, dump_pool, load_pool
from consortium.errors import ConsortiumError
from consortium.runtime.telemetry import Telemetry
from consortium.smallmodels.commands import local_app

if TYPE_CHECKING:
    from consortium.coord.base import Coordinator
    from consortium.coord.conductor.executor import WorkflowRun

app = typer.Typer(
    help="Consortium: a team of language models, coordinated at test time, used like one model.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
replay_app = typer.Typer(
    help="The replay pool: recorded outcomes of real models.", no_args_is_help=True
)
pool_app = typer.Typer(help="Inspect a pool file.", no_args_is_help=True)
traces_app = typer.Typer(help="Read the trace store.", no_args_is_help=True)
train_app = typer.Typer(help="Train a coordinator.", no_args_is_help=True)
app.add_typer(replay_app, name="replay")
app.add_typer(pool_app, name="pool")
app.add_typer(traces_app, name="traces")
app.add_typer(train_app, name="train")
app.add_typer(local_app, name="local")

# Piped output is not cut to 80 columns, so tables stay whole in files and logs.
# Not a terminal (a pipe, a log file): 100 columns, the width every table is laid out for.
# Text lines are never broken by the console (soft wrap): paths and ids stay whole.
console = Console(width=None if sys.stdout.isatty() else 100, soft_wrap=True)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 100, soft_wrap=True)

TracesOption = Annotated[
    str,
    typer.Option(
        "--traces",
        envvar="CONSORTIUM_TRACES",
        help="Trace store URL (SQLAlchemy): sqlite:///file.db or postgresql+psycopg://…",
    ),
]
DEFAULT_TRACES = "sqlite:///consortium-traces.db"
PoolOption = Annotated[Path, typer.Option("--pool", help="Pool file (TOML) listing the models.")]
MaxCostOption = Annotated[
    float | None,
    typer.Option(help="Cap on the run's cost in USD; a call that could exceed it is not made."),
]
TaskCallsOption = Annotated[int | None, typer.Option(help="Cap on calls per task.")]
TaskTokensOption = Annotated[
    int | None,
    typer.Option(
        help="Cap on tokens per task (worst case of each call reserved before it is made)."
    ),
]
PopsizeOption = Annotated[int, typer.Option(help="Candidates per generation (paper: 32).")]
MinibatchOption = Annotated[int, typer.Option(help="Training tasks per candidate.")]
SigmaOption = Annotated[float, typer.Option(help="Initial step size of sep-CMA-ES.")]
ExecutorOption = Annotated[
    str,
    typer.Option(
        help="Where independent jobs run: local (this process) or ray (a local Ray instance, or "
        "the cluster at --ray-address)."
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        envvar="RAY_ADDRESS",
        help="Ray cluster to join (auto, or ray://HEAD:10001); default: start a local instance.",
    ),
]
ComponentsOption = Annotated[
    int,
    typer.Option(help="Principal components of the feature the head reads (0: the full feature)."),
]


@replay_app.command("serve")
def replay_serve(
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            envvar="CONSORTIUM_REPLAY_DATA",
            help="The recorded data folder (routerdc: split2_model7/, routerbench_zs/).",
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    seed: Annotated[int, typer.Option(help="Seed of the replayed draws.")] = 0,
    coupling: Annotated[
        str,
        typer.Option(
            help="shared: one draw per question for all models; independent: one per model."
        ),
    ] = "shared",
    latency_base: Annotated[float, typer.Option(help="Declared seconds per call.")] = 0.0,
    latency_per_token: Annotated[
        float, typer.Option(help="Declared seconds per output token.")
    ] = 0.0,
    error_rate: Annotated[
        float, typer.Option(help="Fraction of requests failed on purpose.")
    ] = 0.0,
    error_codes: Annotated[
        str, typer.Option(help="HTTP codes of injected errors.")
    ] = "500,503,429",
    timeout_rate: Annotated[
        float, typer.Option(help="Fraction of requests that stall for --hang-seconds.")
    ] = 0.0,
    hang_seconds: Annotated[float, typer.Option(help="How long a stalled request waits.")] = 30.0,
    fault_seed: Annotated[int, typer.Option(help="Seed of the injected faults.")] = 0,
    garbage_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests answered 200 with a malformed body or no choices."),
    ] = 0.0,
    drop_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests whose connection drops halfway through the body."),
    ] = 0.0,
    slow_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests whose body trickles out in 4 pieces."),
    ] = 0.0,
    slow_seconds: Annotated[
        float, typer.Option(help="Pause between the pieces of a slow body.")
    ] = 0.2,
    write_pool: Annotated[
        Path | None, typer.Option(help="Write a pool file for this server's models, then serve.")
    ] = None,
    exit_with_parent: Annotated[
        bool,
        typer.Option(
            help="Stop when the starting process exits (used by the launcher).", hidden=True
        ),
    ] = False,
    sources: Annotated[
        str,
        typer.Option(
            help="Recorded sources to serve: split2 (7 open models), routerbench (11 models)."
        ),
    ] = "split2,routerbench",
) -> None:
    """Serve the recorded models over a real OpenAI-compatible API.

    Endpoints: /v1/models, /v1/chat/completions (streaming too), /replay/stats.

    Example:

      consortium replay serve --data ../shared/data/routerdc --write-pool pool.toml
    """
    from consortium.replay.data import SOURCES, load_replay
    from consortium.replay.pool import replay_pool
    from consortium.replay.server import FaultConfig, LatencyModel, ReplayApp, serve
    from consortium.replay.server import exit_with_parent as watch_parent

    if coupling not in ("shared", "independent"):
        raise ConsortiumError("--coupling must be shared or independent")
    try:
        codes = tuple(int(code) for code in error_codes.split(",") if code)
    except ValueError:
        raise ConsortiumError(
            f"--error-codes: expected numbers like 500,503,429, got {error_codes!r}"
        ) from None
    chosen = [name for name in sources.split(",") if name]
    unknown = [name for name in chosen if name not in SOURCES]
    if unknown or not chosen:
        raise ConsortiumError(f"--sources: expected some of {', '.join(SOURCES)}, got {sources!r}")
    recorded = load_replay(data, sources=chosen)  # type: ignore[arg-type]
    if write_pool is not None:
        # atomic, so that `pool check --wait` never reads half a file
        partial = write_pool.with_name(write_pool.name + ".partial")
        partial.write_text(dump_pool(replay_pool(recorded, f"http://{host}:{port}/v1")))
        partial.replace(write_pool)
        err_console.print(f"wrote {write_pool}")
    server = ReplayApp(
        recorded,
        seed=seed,
        coupling=coupling,  # type: ignore[arg-type]
        latency=LatencyModel(latency_base, latency_per_token),
        faults=FaultConfig(
            error_rate=error_rate,
            error_codes=codes,
            timeout_rate=timeout_rate,
            hang_seconds=hang_seconds,
            garbage_rate=garbage_rate,
            seed=fault_seed,
            drop_rate=drop_rate,
            slow_rate=slow_rate,
            slow_seconds=slow_seconds,
        ),
    )
    err_console.print(
        f"replay server: {len(recorded.all_models)} models, {len(recorded.records)} recorded "
        f"questions, on http://{host}:{port}/v1 ({recorded.description()})"
    )
    if exit_with_parent:
        watch_parent()
    serve(server, host, port)


@pool_app.command("check")
def pool_check(
    pool: Annotated[Path, typer.Argument(help="Pool file (TOML).")],
    wait: Annotated[
        float,
        typer.Option(
            help="Seconds to wait for the file and unreachable endpoints to come up "
            "(a server just started in the background)."
        ),
    ] = 0.0,
) -> None:
    """Ping every endpoint of a pool: is it reachable, does it serve the model, how fast.

    Example (a replay server started in the background):

      consortium pool check replay.toml --wait 60
    """
    from consortium.pool.check import wait_and_check

    statuses = asyncio.run(wait_and_check(pool, wait))
    table = Table(title=str(pool))
    for column in ("model", "latency", "status"):
        table.add_column(column)
    for s in statuses:
        latency = "–" if s.latency_ms is None else f"{s.latency_ms:.0f} ms"
        table.add_row(s.model, latency, s.status if s.ok else f"[red]{s.status}[/red]")
    console.print(table)
    if not all(s.ok for s in statuses):
        raise typer.Exit(1)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    pool: PoolOption,
    model: Annotated[
        str | None, typer.Option(help="Ask this pool model (default: random).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            help="A policy spec: single:NAME, random, workflow:vote|moa|debate|reflect, "
            "conductor:NAME…, or a trained policy directory (`consortium train trinity --out`)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Ask the consortium one question and print the answer with who answered and what it cost."""
    from consortium.coord.registry import build_coordinator
    from consortium.pool import Pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Task

    if not question.strip():
        raise ConsortiumError("the question is empty")
    config = load_pool(pool)
    coordinator = build_coordinator(
        policy or (f"single:{model}" if model else "random"), config, seed
    )
    store = TraceStore(traces)
    run_id = store.start_run("ask", pool=str(pool))

    async def go() -> tuple[str, Caller]:
        async with Pool(config) as members:
            caller = Caller(members, store, run_id, telemetry=Telemetry.from_env())
            task_caller = caller.for_task("ask", coordinator.name)
            outcome = await coordinator.run(Task("ask", question, "ask", "none"), task_caller)
            return outcome.answer, caller

    try:
        answer, caller = asyncio.run(go())
    except ConsortiumError:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "finished")
    console.print(answer)
    budget = caller.budget
    err_console.print(
        f"[dim]{coordinator.name} · {budget.calls} call(s) · {budget.tokens} tokens · "
        f"${budget.cost:.6f} · run {run_id}[/dim]"
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
    from consortium.coord.conductor.workflow import parse_workflow
    from consortium.pool import Pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Task

    if not question.strip():
        raise ConsortiumError("the question is empty")
    if (conductor is None) == (workflow is None):
        raise ConsortiumError("give either --conductor MODEL or --workflow TEXT|@FILE")
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
    run_id = store.start_run("conduct", pool=str(pool))

    async def go() -> tuple[WorkflowRun, Caller]:
        async with Pool(config) as members:
            caller = Caller(members, store, run_id, telemetry=Telemetry.from_env())
            task_caller = caller.for_task("conduct", "conduct")
            if fixed is not None:
                return await WorkflowExecutor().run(fixed, question, task_caller), caller
            assert conductor is not None
            policy = ConductorCoordinator(
                conductor,
                roster,
                strengths={m.name: m.strengths for m in config.models},
                max_steps=max_steps,
                recursion=recursion,
                max_depth=max_depth,
                max_conductor_calls=max_calls,
            )
            outcome = await policy.run(Task("conduct", question, "ask", "none"), task_caller)
            run: WorkflowRun = outcome.meta["workflow"]
            return run, caller

    try:
        run, caller = asyncio.run(go())
    except ConsortiumError:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "finished")
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


@app.command()
def evolve(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Tuning tasks (proposals are tuned here), e.g. "
            "replay:data=DIR:source=routerbench:split=train",
        ),
    ],
    out: Annotated[Path, typer.Option(help="Folder for state.json, report.md and the PNGs.")],
    heldout: Annotated[
        str | None,
        typer.Option(
            help="Held-out tasks the guards judge on (never tuned on). Default: half of --tasks, "
            "split by task id."
        ),
    ] = None,
    final: Annotated[
        str | None,
        typer.Option(
            help="Tasks no decision may see, for the final comparison of the first and the "
            "final strategy (e.g. the test split). Default: the held-out pool."
        ),
    ] = None,
    rounds: Annotated[
        int, typer.Option(help="Rounds to run (a resumed loop runs up to this).")
    ] = 5,
    start: Annotated[
        str | None,
        typer.Option(
            help="The first strategy's policy, e.g. single:NAME. Default: the single model most "
            "accurate on the first tuning batch."
        ),
    ] = None,
    batch: Annotated[int, typer.Option(help="Tuning tasks per round.")] = 200,
    heldout_batch: Annotated[int, typer.Option(help="Held-out tasks per round.")] = 400,
    proposers: Annotated[
        str, typer.Option(help="Proposers to run each round, comma-separated.")
    ] = "cluster-specialists,escalation,templates,prune,retrain-trinity",
    retrain_generations: Annotated[
        int,
        typer.Option(
            help="sep-CMA-ES generations per warm-started TRINITY retraining (retrain-trinity)."
        ),
    ] = 3,
    test: Annotated[
        str, typer.Option(help="Paired test of the guards: sign or bootstrap.")
    ] = "sign",
    alpha: Annotated[float, typer.Option(help="Significance level of the guards.")] = 0.05,
    margin: Annotated[
        float, typer.Option(help="Held-out accuracy gain (fraction) a change must exceed.")
    ] = 0.0,
    cheaper_by: Annotated[
        float,
        typer.Option(help="Saving (fraction of cost) that admits a change no less accurate."),
    ] = 0.2,
    noninferiority: Annotated[
        float,
        typer.Option(
            help="Accuracy (fraction) a cheaper change may lose at most: the lower end of the "
            "95% bootstrap interval of its held-out difference must stay above minus this."
        ),
    ] = 0.02,
    tolerance: Annotated[
        float,
        typer.Option(help="Accuracy (fraction) a cheaper proposal may give up on tuning tasks."),
    ] = 0.01,
    max_cost_per_task: Annotated[
        float | None, typer.Option(help="Cap on a strategy's mean USD per task.")
    ] = None,
    max_calls_per_task: Annotated[
        int, typer.Option(help="Cap on calls per task (hard: no task may exceed it).")
    ] = 8,
    final_limit: Annotated[
        int | None,
        typer.Option(help="Held-out tasks per dataset in the final comparison (default: all)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the batches and the bootstrap.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Tasks in flight at once.")] = 32,
    resume: Annotated[bool, typer.Option(help="Continue the loop in OUT.")] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Improve how the ensemble works, round after round, guarded by held-out evidence.

    Each round runs the current strategy on a tuning batch and a held-out batch, measures the
    collaboration (accuracy, calls, cost, escalations, disagreement, who answered right),
    proposes changes from the tuning batch (per-cluster models, cost-aware escalation with learned
    thresholds, pruning) and adopts one only if it beats the incumbent on the held-out batch
    (paired test) within the caps. Writes OUT/report.md, OUT/rounds.png, OUT/pareto.png; the
    strategies and evidence also go to the trace database.

    Example (replay pool, RouterBench's 11 priced models; the train split halved into tuning and
    held-out tasks, the test split kept for the final comparison):

      consortium evolve --pool replay.toml --out reports/evolve --rounds 5 \\
        --tasks replay:data=DIR:source=routerbench:split=train \\
        --final replay:data=DIR:source=routerbench:split=test
    """
    from consortium.coord.registry import build_coordinator
    from consortium.evolve.guards import GuardConfig
    from consortium.evolve.loop import EvolveConfig, EvolveInputs, EvolveLoop, split_tasks
    from consortium.evolve.proposals import PROPOSERS, ProposerSettings
    from consortium.evolve.report import write_report
    from consortium.evolve.strategies import Plan, Strategy
    from consortium.pool import Pool
    from consortium.runtime.dist import make_executor
    from consortium.runtime.store import TraceStore
    from consortium.tasks.registry import load_task_set
    from consortium.train.es import TrainConfig

    if test not in ("sign", "bootstrap"):
        raise ConsortiumError("--test must be sign or bootstrap")
    chosen = [name for name in proposers.split(",") if name]
    unknown = [name for name in chosen if name not in PROPOSERS]
    if unknown or not chosen:
        raise ConsortiumError(f"--proposers: expected some of {', '.join(PROPOSERS)}")
    config = load_pool(pool)
    tuning_set = load_task_set(tasks)
    if heldout is None:
        tuning_pool, heldout_pool = split_tasks(tuning_set.tasks, seed)
        description = f"{tuning_set.description}; tuning and held-out halves of {tasks}"
    else:
        heldout_set = load_task_set(heldout)
        tuning_pool, heldout_pool = tuning_set.tasks, heldout_set.tasks
        description = f"{tuning_set.description}; tuning {tasks}; held-out {heldout}"
    final_pool = load_task_set(final).tasks if final else None
    if final:
        description += f"; final comparison {final}"
    first = Strategy(default=Plan(first=start)) if start else None
    if first is not None:
        build_coordinator(first.default.first, config, seed)  # a bad --start fails before any call
    settings = EvolveConfig(
        rounds=rounds,
        tuning_batch=batch,
        heldout_batch=heldout_batch,
        seed=seed,
        concurrency=concurrency,
        final_limit=final_limit,
        guard=GuardConfig(
            alpha=alpha,
            margin=margin,
            test=test,  # type: ignore[arg-type]
            cheaper_by=cheaper_by,
            noninferiority=noninferiority,
            max_cost_per_task=max_cost_per_task,
            max_calls_per_task=max_calls_per_task,
            seed=seed,
        ),
    )
    proposer_settings = ProposerSettings(
        tolerance=tolerance,
        retrain=TrainConfig(generations=retrain_generations, popsize=16, minibatch=40, seed=seed),
    )
    store = TraceStore(traces)

    def show(summary: dict[str, object]) -> None:
        heldout_row = summary["heldout"]
        assert isinstance(heldout_row, dict)
        err_console.print(
            f"round {summary['round']}: held-out {100 * heldout_row['accuracy']:.1f}% at "
            f"{heldout_row['cost_per_task']:.2e} USD/task; adopted: {summary['adopted'] or 'none'}"
        )

    async def go() -> dict[str, object]:
        async with Pool(config) as members:
            inputs = EvolveInputs(
                pool=members,
                pool_name=f"{pool} ({tuning_set.description})",
                tuning_pool=tuning_pool,
                heldout_pool=heldout_pool,
                final_pool=final_pool,
                telemetry=Telemetry.from_env(),
                executor=make_executor(executor, ray_address),
                grader=tuning_set.grader,
                resolve=lambda spec: build_coordinator(spec, config, seed),
                models=config.names,
                store=store,
                proposers=[PROPOSERS[name](proposer_settings) for name in chosen],
                tasks_description=description,
            )
            loop = EvolveLoop(inputs, settings, out, start=first, resume=resume, on_round=show)
            return await loop.run()

    state = asyncio.run(go())
    report = write_report(state, out)
    console.print(f"report: {report} (rounds.png, pareto.png beside it)")


@app.command()
def serve(
    pool: PoolOption,
    policy: Annotated[
        str,
        typer.Option(
            help="What answers: single:NAME, workflow:…, conductor:…, a trained TRINITY policy "
            "directory, or an evolve folder (its final strategy)."
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    name: Annotated[str, typer.Option(help="The model id clients ask for.")] = "consortium",
    token_env: Annotated[
        str,
        typer.Option(
            help="Environment variable holding the bearer token clients must send; required "
            "unless the address is loopback."
        ),
    ] = "CONSORTIUM_SERVE_TOKEN",
    request_timeout: Annotated[
        float, typer.Option(help="Seconds a request may take before it is answered 504.")
    ] = 300.0,
    max_calls: Annotated[int | None, typer.Option(help="Cap on model calls per request.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Cap on tokens per request.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Cap on USD per request.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Serve the ensemble as one OpenAI-compatible model.

    Any OpenAI client works unchanged (base_url http://HOST:PORT/v1, model NAME); each answer's
    headers (x-consortium-calls, -models, -roles, -cost, -task, -run) say what it took, and every
    call is in the trace store.

    Example:

      consortium serve --pool replay.toml --policy policies/trinity-replay --port 8000
      curl localhost:8000/v1/chat/completions -d '{"model": "consortium", "messages": […]}'
    """
    import os

    import uvicorn

    from consortium.pool import Pool
    from consortium.runtime.budget import Limits
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.serve import LOOPBACK, EnsembleServer

    token = os.environ.get(token_env) or None
    if token is None and host not in LOOPBACK:
        raise ConsortiumError(
            f"refusing to serve on {host} without a token: set ${token_env} (clients then send "
            "'Authorization: Bearer <token>'), or bind to 127.0.0.1"
        )
    config = load_pool(pool)
    coordinator = _served_coordinator(policy, config, seed)
    store = TraceStore(traces)
    run_id = store.start_run("serve", pool=str(pool), config={"policy": policy, "name": name})
    members = Pool(config)

    async def close() -> None:
        await members.aclose()
        store.finish_run(run_id, "finished")

    server = EnsembleServer(
        coordinator,
        Caller(members, store, run_id, telemetry=Telemetry.from_env()),
        model_id=name,
        token=token,
        request_timeout=request_timeout,
        limits=Limits(max_calls=max_calls, max_tokens=max_tokens, max_cost=max_cost),
        on_close=close,
    )
    err_console.print(
        f"serving {coordinator.name} as {name!r} on http://{host}:{port}/v1 "
        f"(auth: {'bearer token' if token else 'none, loopback only'}; traces: run {run_id})"
    )
    uvicorn.run(server.app, host=host, port=port, log_level="warning", access_log=False)


def _served_coordinator(policy: str, config: PoolConfig, seed: int) -> Coordinator:
    """A policy spec, or an evolve folder's final strategy."""
    from consortium.coord.registry import build_coordinator
    from consortium.evolve.strategies import Strategy, StrategyCoordinator

    state_path = Path(policy) / "state.json"
    if state_path.exists():
        state = json.loads(state_path.read_text())
        strategy = Strategy.model_validate(state["incumbent"])
        return StrategyCoordinator(strategy, lambda spec: build_coordinator(spec, config, seed))
    return build_coordinator(policy, config, seed)


@train_app.command("trinity")
def train_trinity(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks", help="Training tasks, e.g. replay:data=DIR:datasets=mmlu,gsm8k:split=train"
        ),
    ],
    out: Annotated[Path, typer.Option(help="Policy directory to write (and resume from).")],
    generations: Annotated[int, typer.Option(help="Generations (iterations).")] = 40,
    popsize: PopsizeOption = 32,
    minibatch: MinibatchOption = 80,
    sigma0: SigmaOption = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of everything random.")] = 0,
    optimizer: Annotated[str, typer.Option(help="es (sep-CMA-ES), reinforce or random.")] = "es",
    components: ComponentsOption = 16,
    max_turns: Annotated[int, typer.Option(help="Turns per task (paper: 5).")] = 1,
    roles: Annotated[str, typer.Option(help="Roles the head may pick.")] = "worker",
    sample: Annotated[
        bool,
        typer.Option(
            help="Sample (model, role) in training rollouts, as the paper; default argmax."
        ),
    ] = False,
    encoder: Annotated[
        str,
        typer.Option(
            help="all-MiniLM-L6-v2, or a causal LM path / hub id (the paper: Qwen/Qwen3-0.6B)."
        ),
    ] = "all-MiniLM-L6-v2",
    resume: Annotated[bool, typer.Option(help="Continue from OUT/checkpoint.pkl.")] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
) -> None:
    """Train the TRINITY head on a pool: sep-CMA-ES on binary rewards, checkpoint per generation.

    Example (replay pool, the in-distribution train splits):

      consortium train trinity --pool replay.toml --out policies/trinity \\
        --tasks replay:data=../shared/data/routerdc:split=train:\\
      datasets=mmlu,gsm8k,cmmlu,arc_challenge,humaneval
    """
    from consortium.coord.trinity.policy import default_encoder
    from consortium.progress import task_progress
    from consortium.runtime.dist import make_executor
    from consortium.tasks.registry import load_task_set
    from consortium.train.es import TrainConfig, TrainState
    from consortium.train.session import OPTIMIZERS, fit_setup
    from consortium.train.session import train_trinity as run_training

    if optimizer not in OPTIMIZERS:
        raise ConsortiumError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
    config = load_pool(pool)
    task_set = load_task_set(tasks)
    role_names = tuple(r for r in roles.split(",") if r)
    train_config = TrainConfig(
        generations=generations,
        popsize=popsize,
        sigma0=sigma0,
        minibatch=minibatch,
        seed=seed,
        sample=sample,
    )
    features = default_encoder(encoder, out / "features.db")
    with task_progress(err_console) as progress:
        encoding = progress.add_task(f"encoding with {encoder}", total=len(task_set.tasks))
        setup = fit_setup(
            features,
            task_set,
            config.names,
            components=components or None,
            max_turns=max_turns,
            roles=role_names,
            on_encoded=lambda n: progress.advance(encoding, n),
        )
    err_console.print(
        f"head: {len(config.names)} models + 3 roles × {setup.encoder.dim}-d feature = "
        f"{setup.n_params:,} parameters · budget {train_config.budget:,} rollouts"
    )
    with task_progress(err_console) as progress:
        bar = progress.add_task(f"{optimizer} generations", total=generations)

        def show(state: TrainState) -> None:
            row = state.history[-1]
            progress.update(
                bar,
                completed=state.generation,
                description=(
                    f"{optimizer} · reward {row['population_mean']:.3f} "
                    f"(best {row['population_best']:.3f})"
                ),
            )

        state = asyncio.run(
            run_training(
                config,
                task_set,
                setup,
                out,
                train_config,
                optimizer=optimizer,
                resume=resume,
                on_generation=show,
                executor=make_executor(executor, ray_address),
            )
        )
    console.print(
        f"policy written to {out} after {state.generation} generations "
        f"({setup.n_params:,} parameters); curve: {out / 'curve.png'}"
    )


@train_app.command("router")
def train_router(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Replay training tasks, e.g. replay:data=DIR:split=train:datasets=mmlu,gsm8k",
        ),
    ],
    out: Annotated[Path, typer.Option(help="Policy directory to write.")],
    optimizer: Annotated[
        str, typer.Option(help="es (sep-CMA-ES), reinforce, random or imitation (no rollouts).")
    ] = "es",
    warm_start: Annotated[
        str, typer.Option(help="imitation (the paper's SFT baseline first) or none.")
    ] = "imitation",
    rollouts: Annotated[
        int, typer.Option(help="Budget: questions answered by candidates, summed.")
    ] = 2_000_000,
    popsize: PopsizeOption = 32,
    minibatch: MinibatchOption = 250,
    sigma0: Annotated[
        float,
        typer.Option(help="sep-CMA-ES's initial step (small after a warm start; ~0.5 from zeros)."),
    ] = 0.002,
    learning_rate: Annotated[float, typer.Option(help="REINFORCE's Adam step size.")] = 0.01,
    l2: Annotated[float, typer.Option(help="Imitation's weight decay.")] = 1e-3,
    question_weight: Annotated[
        float,
        typer.Option(
            help="Imitation target: this share of the per-question-best label, the rest the "
            "dataset's best model."
        ),
    ] = 0.2,
    validation: Annotated[
        float,
        typer.Option(
            help="Share of training questions that decides whether the optimizer beats the warm "
            "start (0: keep the optimizer's head)."
        ),
    ] = 0.2,
    reward: Annotated[
        str,
        typer.Option(
            help="recorded (the chosen model's recorded score: the expected binary reward) or "
            "draw (the paper's binary reward, a Bernoulli draw)."
        ),
    ] = "recorded",
    components: ComponentsOption = 0,
    constant: Annotated[
        bool,
        typer.Option(
            "--constant/--no-constant", help="Append a constant feature (a bias for the head)."
        ),
    ] = True,
    encoder: Annotated[
        str, typer.Option(help="all-MiniLM-L6-v2 or SmolLM2-135M-Instruct (or a causal LM path).")
    ] = "all-MiniLM-L6-v2",
    features: Annotated[
        Path | None,
        typer.Option(help="Feature cache (SQLite, keyed by text hash); default OUT/features.db."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of everything random.")] = 0,
) -> None:
    """Train the TRINITY head for single-turn routing on recorded outcomes, in process.

    Rollouts are lookups in the recorded data (no server): fast enough for the paper's head size.
    The policy is a TRINITY policy like any other (`eval --policy OUT`, `ask`, `serve`).

    Example (replay pool, the in-distribution train splits, SmolLM2 features):

      consortium train router --pool replay.toml --out policies/router \\
        --encoder SmolLM2-135M-Instruct --tasks replay:data=../shared/data/routerdc:\\
      split=train:datasets=mmlu,gsm8k,cmmlu,arc_challenge,humaneval
    """
    from consortium.coord.trinity.policy import default_encoder
    from consortium.progress import task_progress
    from consortium.tasks.registry import load_task_set
    from consortium.train.recorded import OPTIMIZERS, RecordedConfig, RecordedRun
    from consortium.train.routing import RouterTraining, recorded_scores
    from consortium.train.routing import train_router as run_training

    if optimizer not in OPTIMIZERS:
        raise ConsortiumError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
    if reward not in ("recorded", "draw"):
        raise ConsortiumError("--reward must be recorded or draw")
    if warm_start not in ("imitation", "none"):
        raise ConsortiumError("--warm-start must be imitation or none")
    config = load_pool(pool)
    task_set = load_task_set(tasks)
    recorded_models = [config.get(name).model for name in config.names]
    recorded_scores(task_set.tasks, recorded_models)  # no recorded outcomes: fail before encoding
    training = RouterTraining(
        RecordedConfig(
            optimizer=optimizer,
            rollouts=rollouts,
            popsize=popsize,
            minibatch=minibatch,
            sigma0=sigma0,
            learning_rate=learning_rate,
            l2=l2,
            question_weight=question_weight,
            reward=reward,  # type: ignore[arg-type]
            seed=seed,
        ),
        warm_start=warm_start,
        components=components or None,
        constant=constant,
        validation=validation,
    )
    cache = default_encoder(encoder, features or out / "features.db")
    with task_progress(err_console) as progress:
        encoding = progress.add_task(f"encoding with {encoder}", total=len(task_set.tasks))
        steps = progress.add_task(f"{optimizer} on recorded outcomes", total=rollouts)

        def show(run: RecordedRun) -> None:
            progress.update(steps, completed=run.rollouts)

        setup, run, decision = run_training(
            task_set.tasks,
            cache,
            config.names,
            recorded_models,
            out,
            training,
            description=tasks,
            on_encoded=lambda n: progress.advance(encoding, n),
            on_step=show,
        )
    if decision:
        console.print(
            f"validation ({decision['validation_questions']} held-out questions): warm start "
            f"{decision['warm_start_reward']:.4f}, {optimizer} {decision['optimizer_reward']:.4f}"
            f" → kept the {decision['kept']}"
        )
    console.print(
        f"policy {out}: {setup.n_params:,} weights, {run.rollouts:,} rollouts in the final fit"
        f" ({optimizer}, warm start: {warm_start})"
    )


@train_app.command("conductor")
def train_conductor(
    pool: Annotated[Path, typer.Option("--pool", help="Pool file of the workers.")],
    tasks: Annotated[str, typer.Option("--tasks", help="Training tasks (a --tasks spec).")],
    out: Annotated[Path, typer.Option(help="Folder for the trained conductor and its log.")],
    base_model: Annotated[
        str,
        typer.Option(
            help="Causal LM to train (path or hub id; the paper: Qwen/Qwen2.5-7B-Instruct), a "
            "GGUF file, 'smollm2-135m' (the pinned SmolLM2-135M-Instruct), or 'tiny': a 2-layer "
            "model with random weights built here, for a CPU smoke run."
        ),
    ] = "tiny",
    steps: Annotated[int, typer.Option(help="GRPO iterations (paper: 200).")] = 200,
    questions_per_step: Annotated[int, typer.Option(help="Questions per step (paper: 4).")] = 4,
    group_size: Annotated[int, typer.Option(help="Workflows per question (paper: 64).")] = 64,
    lr: Annotated[float, typer.Option(help="Learning rate (paper: 1e-6).")] = 1e-6,
    max_completion: Annotated[
        int, typer.Option(help="Completion tokens per workflow (paper: 1024).")
    ] = 1024,
    min_workers: Annotated[
        int, typer.Option(help="Smallest random worker subset per prompt (adaptive pool).")
    ] = 2,
    save_steps: Annotated[int, typer.Option(help="Checkpoint every this many steps.")] = 50,
    warm_start_steps: Annotated[
        int,
        typer.Option(
            help="Supervised steps on example workflows before GRPO (TRL's SFTTrainer), for a "
            "model that writes no valid workflow yet; 0 skips the stage."
        ),
    ] = 0,
    warm_start_lr: Annotated[float, typer.Option(help="Learning rate of the warm start.")] = 5e-5,
    held_out: Annotated[
        str | None,
        typer.Option(
            help="Tasks (a --tasks spec) whose questions measure the share of valid workflows "
            "(greedy) before and after each stage; written to OUT/stages.json."
        ),
    ] = None,
    held_out_n: Annotated[int, typer.Option(help="Held-out questions measured.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of subsets and sampling.")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue from OUT/checkpoints.")] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
) -> None:
    """Train a conductor with GRPO (TRL): reward 0 when its lists do not parse, 0.5 when the
    workflow runs but answers wrong, 1 when right; each prompt gets a random subset of the
    workers. Optionally a supervised warm start first, and the valid-workflow rate on held-out
    questions before and after each stage.

    Example (replay workers, a CPU smoke run):

      consortium train conductor --pool replay.toml --out runs/conductor --steps 2 \\
        --questions-per-step 1 --group-size 2 --max-completion 32 \\
        --tasks replay:data=../shared/data/routerdc:split=train:datasets=mmlu:limit=8

    A real instruct model against the local llama.cpp pool (`consortium local start`):

      consortium train conductor --pool local-pool.toml --base-model smollm2-135m \\
        --out runs/smollm2-conductor --tasks arithmetic:n=200:seed=1 \\
        --warm-start-steps 40 --warm-start-lr 1e-4 --steps 5 --questions-per-step 2 \\
        --group-size 4 --max-completion 128 --lr 5e-6 \\
        --held-out gsm8k:path=../shared/data/benchmarks/gsm8k/test.jsonl:limit=50

    Then add the conductor to a pool (backend = "local", model = "OUT/model") and run
    `consortium eval --policy conductor:NAME`.
    """
    from rich.progress import TaskID

    from consortium.progress import task_progress
    from consortium.runtime.dist import make_executor
    from consortium.tasks.registry import load_task_set
    from consortium.train.conductor_stages import (
        StageCallbacks,
        StagedSettings,
        train_conductor_in_stages,
    )
    from consortium.train.grpo import GRPOSettings
    from consortium.train.workflow_sft import WarmStartSettings

    config = load_pool(pool)
    task_set = load_task_set(tasks)
    held_out_tasks = load_task_set(held_out).tasks if held_out else []
    settings = StagedSettings(
        grpo=GRPOSettings(
            steps=steps,
            questions_per_step=questions_per_step,
            group_size=group_size,
            learning_rate=lr,
            max_completion_length=max_completion,
            min_workers=min_workers,
            save_steps=save_steps,
            seed=seed,
        ),
        warm_start=WarmStartSettings(
            steps=warm_start_steps, learning_rate=warm_start_lr, seed=seed
        ),
        held_out=held_out_n if held_out else 0,
    )
    err_console.print(
        f"GRPO: {steps} steps x {questions_per_step} questions x {group_size} workflows over "
        f"{len(config.names)} workers; reward log in {out / 'rewards.jsonl'}"
    )
    with task_progress(err_console) as progress:
        bars: list[TaskID] = []

        def stage(name: str, total: int) -> None:
            if bars:
                progress.update(bars[-1], completed=progress.tasks[-1].total)
            bars.append(progress.add_task(name, total=total))

        def grpo_log(row: dict[str, float]) -> None:
            progress.update(
                bars[-1],
                completed=int(row["step"]),
                description=(
                    f"GRPO · reward {row['reward']:.3f} · parsed {row.get('parsed', 0):.0%} · "
                    f"right {row.get('right', 0):.0%}"
                ),
            )

        def sft_log(row: dict[str, float]) -> None:
            progress.update(bars[-1], description=f"warm start (SFT) · loss {row['loss']:.3f}")

        summary = train_conductor_in_stages(
            base_model,
            config,
            task_set.tasks,
            task_set.grader,
            out,
            settings,
            held_out=held_out_tasks,
            resume=resume,
            callbacks=StageCallbacks(
                on_stage=stage,
                on_advance=lambda n: progress.advance(bars[-1], n),
                on_grpo_log=grpo_log,
                on_sft_log=sft_log,
            ),
            jobs=make_executor(executor, ray_address),
        )
    for name, row in summary["validity"].items():
        console.print(
            f"valid workflows ({name}): {row['valid']}/{row['n']} ({row['rate']:.0%})"
            + (f"; invalid: {row['errors']}" if row["errors"] else "")
        )
    grpo_summary = summary.get("grpo")
    if grpo_summary:
        console.print(
            f"conductor written to {out / 'model'} after {grpo_summary['steps_logged']} logged "
            f"steps (reward {grpo_summary['reward_first']} -> {grpo_summary['reward_last']})"
        )
    elif "warm_start_model" in summary:
        console.print(f"warm-started conductor written to {summary['warm_start_model']}")


@train_app.command("compare")
def train_compare(
    pool: PoolOption,
    tasks: Annotated[str, typer.Option("--tasks", help="Training tasks (a --tasks spec).")],
    test_tasks: Annotated[str, typer.Option("--test-tasks", help="Held-out test tasks.")],
    out: Annotated[Path, typer.Option(help="Folder for the runs and the comparison report.")],
    seeds: Annotated[int, typer.Option(help="Seeds per optimizer.")] = 3,
    generations: Annotated[int, typer.Option(help="Generations (iterations) per run.")] = 30,
    popsize: PopsizeOption = 32,
    minibatch: MinibatchOption = 80,
    sigma0: SigmaOption = 0.5,
    components: ComponentsOption = 16,
) -> None:
    """sep-CMA-ES vs REINFORCE vs random search at the same budget, mean ± std over seeds."""
    from consortium.coord.trinity.policy import default_encoder
    from consortium.tasks.registry import load_task_set
    from consortium.train.compare import compare_optimizers, comparison_plot, comparison_table
    from consortium.train.es import TrainConfig
    from consortium.train.session import fit_setup

    config = load_pool(pool)
    train, test = load_task_set(tasks), load_task_set(test_tasks)
    out.mkdir(parents=True, exist_ok=True)
    features = default_encoder(cache=out / "features.db")
    features.encode([t.question for t in test.tasks])
    setup = fit_setup(
        features, train, config.names, components=components or None, max_turns=1, roles=("worker",)
    )
    train_config = TrainConfig(
        generations=generations, popsize=popsize, minibatch=minibatch, sigma0=sigma0
    )
    scores = asyncio.run(
        compare_optimizers(
            config,
            train,
            test,
            setup,
            out,
            train_config,
            list(range(seeds)),
            on_run=lambda s: err_console.print(
                f"{s.optimizer} seed {s.seed}: test mean {100 * s.test_mean:.1f}%"
            ),
        )
    )
    markdown, table = comparison_table(scores, train_config)
    table.update({"pool": f"{pool} ({train.description})", "train": tasks, "test": test_tasks})
    (out / "optimizers.json").write_text(json.dumps(table, indent=2))
    (out / "optimizers.md").write_text(
        f"# Optimizers for the TRINITY head\n\nPool: {table['pool']}\n\n"
        f"Train: `{tasks}`; test: `{test_tasks}`.\n\n{markdown}"
    )
    comparison_plot(table, out / "optimizers.png")
    console.print(markdown)


@app.command()
def demo(
    data: Annotated[
        Path,
        typer.Option(
            "--data", envvar="CONSORTIUM_REPLAY_DATA", help="The recorded data folder (routerdc)."
        ),
    ],
    limit: Annotated[int, typer.Option(help="Questions per dataset (0: all).")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of sampling and replay.")] = 0,
    out: Annotated[Path, typer.Option(help="Markdown report.")] = Path("reports/demo.md"),
    policy: Annotated[
        Path | None,
        typer.Option(
            help="A trained TRINITY policy to add to the table; trained small first if the folder "
            "holds none. Default: policies/trinity-replay."
        ),
    ] = Path("policies/trinity-replay"),
    trinity: Annotated[bool, typer.Option(help="Include the TRINITY coordinator.")] = True,
    workflows: Annotated[
        bool,
        typer.Option(help="Include the baselines as workflows (vote, MoA, debate, reflection)."),
    ] = True,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """The main job on the replay pool: the TRINITY coordinator, the baselines as workflows,
    every single model, a random router and the per-question-best oracle on the recorded test
    splits."""
    from consortium.demo import run_demo

    run_demo(
        data,
        traces=traces,
        out=out,
        limit=limit or None,
        seed=seed,
        console=console,
        policy=policy if trinity else None,
        workflows=workflows,
    )


@traces_app.command("view")
def traces_view(
    traces: TracesOption = DEFAULT_TRACES,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8300,
) -> None:
    """Browse the trace store: runs, their accuracy, cost and routing plots, and each task's calls
    as a timeline (model, role, prompt, answer, verdict, tokens, cost, latency).

    Example: consortium traces view --traces sqlite:///consortium-traces.db, then open
    http://127.0.0.1:8300/
    """
    import uvicorn

    from consortium.runtime.store import TraceStore
    from consortium.viewer import TraceViewer

    viewer = TraceViewer(TraceStore(traces))
    err_console.print(f"trace viewer on http://{host}:{port}/ ({traces})")
    uvicorn.run(viewer.app, host=host, port=port, log_level="warning", access_log=False)


@traces_app.command("list")
def traces_list(traces: TracesOption = DEFAULT_TRACES) -> None:
    """The runs in the trace store, newest first."""
    from consortium.runtime.store import TraceStore

    table = Table()
    for column in ("run", "kind", "status", "started", "calls", "cost $"):
        table.add_column(column, no_wrap=True)
    table.add_column("pool", overflow="fold")  # the one column that wraps
    for run in TraceStore(traces).list_runs():
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started_at"]))
        table.add_row(
            run["run_id"],
            run["kind"],
            run["status"],
            started,
            str(run["calls"]),
            dollars(run["cost"]),
            run["pool"] or "",
        )
    console.print(table)


@traces_app.command("show")
def traces_show(
    run: Annotated[str, typer.Argument(help="Run id (see `consortium traces list`), or `latest`.")],
    limit: Annotated[int, typer.Option(help="Calls to show.")] = 50,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """One run: its calls (task, turn, model, role, tokens, cost, latency, verdict, error)."""
    from consortium.runtime.store import TraceStore

    store = TraceStore(traces)
    header = store.run(run)
    if header is None:
        raise ConsortiumError(f"no run {run!r} in {traces}")
    run = header["run_id"]
    console.print(f"run {run} · {header['kind']} · {header['status']} · pool {header['pool']}")
    table = Table()
    # Numbers never wrap; names fold onto more lines rather than lose characters; the answer
    # column takes the room that is left.
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("task · policy", overflow="fold", ratio=2)
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("model · role", overflow="fold", ratio=2)
    for column in ("tokens", "cost $", "s"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("answer / error", overflow="fold", ratio=3, min_width=24)
    total = 0
    for total, call in enumerate(store.iter_calls(run), 1):
        if total > limit:
            continue  # counted, not shown
        text = call["error"] or (call["response"] or "")
        role = (call["role"] or "") + (f" ({call['verdict']})" if call["verdict"] else "")
        table.add_row(
            str(call["id"]),
            f"{call['task_id'] or ''} · {call['policy'] or ''}",
            str(call["turn"]),
            f"{call['model']} · {role}",
            str((call["prompt_tokens"] or 0) + (call["completion_tokens"] or 0)),
            dollars(call["cost"] or 0),
            f"{call['latency'] or 0:.2f}",
            text[:80].replace("\n", " "),
        )
    console.print(table)
    if total > limit:
        err_console.print(
            f"showing {limit:,} of {total:,} calls (--limit N shows more; "
            f"`consortium traces export {run}` writes them all)"
        )


def dollars(cost: float) -> str:
    """A cost readable at any size: 12.3400, 0.0012, 3.2e-06; 0 for nothing spent."""
    if cost == 0:
        return "0"
    return f"{cost:.4f}" if cost >= 0.001 else f"{cost:.2g}"


@traces_app.command("export")
def traces_export(
    run: Annotated[str, typer.Argument(help="Run id, or `latest`.")],
    out: Annotated[Path | None, typer.Option(help="File to write (default: stdout).")] = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Every call of a run as JSON lines (messages included)."""
    from consortium.runtime.store import TraceStore

    store = TraceStore(traces)
    header = store.run(run)
    if header is None:
        raise ConsortiumError(f"no run {run!r} in {traces}")
    run = header["run_id"]
    handle = out.open("w", encoding="utf-8") if out else sys.stdout
    written = 0
    try:
        for call in store.iter_calls(run):
            call["messages"] = json.loads(call["messages"])
            handle.write(json.dumps(call, ensure_ascii=False) + "\n")
            written += 1
    finally:
        if out:
            handle.close()
    if out:
        err_console.print(f"wrote {written:,} call(s) of run {run} to {out}")


def _reflow(text: str) -> str:
    """Docstring prose as one line per paragraph, so that rich wraps it to the terminal; indented
    paragraphs (examples) keep their lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith(" ") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _tidy_help(command: Any) -> None:
    """Help that reads well at any width: prose reflowed, no `<bool>` beside a flag (its name
    says it all). Typer vendors its own click, so this goes by attributes, not click's classes."""
    if command.help:
        command.help = _reflow(command.help)
    help_option = command.get_help_option(command.context_class(command))  # cached by click
    for param in [*command.params, help_option]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


def command() -> Any:
    """The `consortium` command, as click runs it."""
    built = typer.main.get_command(app)
    _tidy_help(built)
    return built


def main() -> None:
    try:
        command()(prog_name="consortium")
    except ConsortiumError as error:
        err_console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted; finished calls are in the trace store")
        sys.exit(130)
