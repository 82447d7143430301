"""`consortium record`: run every model of a pool on a task set and keep the outputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import app, console, err_console
from consortium.cli.options import DEFAULT_TRACES, MaxCostOption, PoolOption, TracesOption

if TYPE_CHECKING:
    from consortium.pool.config import PoolConfig
    from consortium.records.recorder import RecordRequest, RecordResult
    from consortium.tasks.base import TaskSet


@app.command("record")
def record_command(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            help="The questions: gsm8k:path=FILE, records:path=FOLDER, arithmetic:n=20 … "
            "(as in eval)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="The records folder to write.")],
    samples: Annotated[int, typer.Option(help="Samples per question and model.")] = 1,
    models: Annotated[
        str | None, typer.Option(help="Comma-separated models of the pool (default: all).")
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(help="Calls in flight per model (default: the pool's max_concurrency)."),
    ] = None,
    max_cost: MaxCostOption = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run journaled in --out (after a crash or a kill).")
    ] = False,
    temperature: Annotated[
        float | None, typer.Option(help="Sampling temperature sent with each call.")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(help="The data set's name (default: the tasks').")
    ] = None,
    traces: TracesOption = DEFAULT_TRACES,
    protocol: Annotated[
        str | None,
        typer.Option(
            help="Record an exchange instead of samples: debate:models=a,b[:rounds=K…] plays "
            "the debate on each task and keeps every turn (see --policy debate:…)."
        ),
    ] = None,
) -> None:
    """Record every model of a pool on a task set, N samples each, in the records format
    (manifest.json + outputs.parquet), graded by the task set's grader. Every finished call is
    journaled first, so --resume after a crash or kill -9 finishes the same file; each call made
    is also in the trace store, as a run of kind `record` (`consortium traces show latest`).

    Example:

      consortium record --pool pool.toml --tasks gsm8k:path=test.jsonl:limit=50 \\
        --samples 3 --max-cost 5 --out records/mine
    """
    from consortium.pool.config import load_pool
    from consortium.records.recorder import RecordRequest
    from consortium.tasks.registry import load_task_set

    config = load_pool(pool)
    if protocol is not None:
        _record_protocol(config, pool, load_task_set(tasks), protocol, out, max_cost)
        return
    chosen = [name for name in models.split(",") if name] if models else None
    for name in chosen or []:
        config.get(name)  # an unknown name is one clear line
    request = RecordRequest(
        pool=config,
        tasks=load_task_set(tasks),
        out=out,
        samples=samples,
        models=chosen,
        concurrency=concurrency,
        max_cost=max_cost,
        resume=resume,
        temperature=temperature,
        dataset=dataset,
        pool_source=pool.name,
        created_by=f"consortium record --tasks {tasks} --samples {samples}",
        traces=traces,
    )
    _print_recorded(_record_with_progress(request), out, max_cost)


def _record_with_progress(request: RecordRequest) -> RecordResult:
    """`record`, with a bar on stderr from the first call on."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from consortium.records.recorder import record

    columns = (
        TextColumn("recording"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[spent]}"),
    )
    # shown from the first call on: a refusal before it is one line, not a bar's blank line
    bar = Progress(*columns, console=err_console, transient=True)
    task = bar.add_task("record", total=None, spent="")

    def advance(done: int, total: int, spent: float) -> None:
        bar.start()  # once; later calls return at once
        bar.update(task, completed=done, total=total, spent=f"${spent:.4f}")

    try:
        return record(request, advance)
    finally:
        if bar.live.is_started:
            bar.stop()


def _print_recorded(result: RecordResult, out: Path, max_cost: float | None) -> None:
    """What was recorded; exit 3 when --max-cost left calls unmade."""
    table = result.records.table
    console.print(
        f"{out}: {table.num_rows} outputs ({result.calls} new, {result.resumed} from the journal), "
        f"{result.errors} failed calls, ${result.spent:.4f} spent; calls traced as run "
        f"{result.run_id}",
        highlight=False,
    )
    if result.skipped_for_budget:
        console.print(
            f"--max-cost {max_cost} reached: {result.skipped_for_budget} calls not made; "
            "raise it and run again with --resume",
            highlight=False,
        )
        raise typer.Exit(3)


def _record_protocol(
    config: PoolConfig, pool: Path, tasks: TaskSet, protocol: str, out: Path, max_cost: float | None
) -> None:
    from consortium.coord.debate.spec import debate_from_spec
    from consortium.core.errors import ConfigError
    from consortium.evaluation.debates.record import DebateRecording, record_debates

    if not protocol.startswith("debate:"):
        raise ConfigError(f"--protocol {protocol!r}: expected debate:models=a,b[:rounds=K…]")
    recording = DebateRecording(
        config,
        tasks,
        debate_from_spec(protocol, config),
        out,
        pool_source=pool.name,
        created_by=f"consortium record --protocol {protocol}",
        max_cost=max_cost,
    )
    records = record_debates(recording)
    turns = records.table.column("turn").to_pylist()
    console.print(
        f"{out}: {len(tasks.tasks)} debates, {len(turns)} turns "
        f"({sum(t is not None and t > 0 for t in turns)} after the first answers)",
        highlight=False,
    )
