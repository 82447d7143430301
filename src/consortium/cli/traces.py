"""`consortium traces …`: read the trace store."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from consortium.cli.app import console, err_console, traces_app
from consortium.cli.options import (
    DEFAULT_TRACES,
    TracesOption,
)
from consortium.core.errors import ConsortiumError

if TYPE_CHECKING:
    from consortium.runtime.store import TraceStore


@traces_app.command("view")
def traces_view(
    traces: TracesOption = DEFAULT_TRACES,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8300,
    learn: Annotated[
        Path | None,
        typer.Option(
            help="A folder of `serve --learn`: adds its page (versions, refits, accuracy and $ "
            "per window of traffic), linked from the runs list.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Browse the trace store: runs, their accuracy, cost and routing plots, and each task's calls
    as a timeline (model, role, prompt, answer, verdict, tokens, cost, latency).

    Example: consortium traces view --traces sqlite:///consortium-traces.db, then open
    http://127.0.0.1:8300/ (with --learn DIR, also http://127.0.0.1:8300/learning)
    """
    import uvicorn

    from consortium.runtime.store import TraceStore
    from consortium.viewer.app import TraceViewer

    if learn is not None:
        from consortium.serve.learn.learner import answer_kind_of

        answer_kind_of(learn)  # not a learning server's folder: one line now, not on the page
    viewer = TraceViewer(TraceStore(traces), learn=learn)
    err_console.print(f"trace viewer on http://{host}:{port}/ ({traces})")
    uvicorn.run(viewer.app, host=host, port=port, log_level="warning", access_log=False)


WIDE = 100
"""Columns from which `traces list` also shows each run's pool: narrower, the pool gives way and
the run id stays whole (`traces show` needs it)."""


@traces_app.command("list")
def traces_list(traces: TracesOption = DEFAULT_TRACES) -> None:
    """The runs in the trace store, newest first."""
    from consortium.runtime.store import TraceStore

    runs = TraceStore(traces).list_runs()
    with_pool = console.width >= WIDE
    table = Table(caption=None if with_pool else "pools: consortium traces show RUN")
    widest = max((len(run["run_id"]) for run in runs), default=3)
    table.add_column("run", no_wrap=True, min_width=widest)
    for column in ("kind", "status"):
        table.add_column(column, overflow="fold")
    table.add_column("started", no_wrap=True)
    for column in ("calls", "cost $"):
        table.add_column(column, justify="right", no_wrap=True)
    if with_pool:
        table.add_column("pool", overflow="fold")
    for run in runs:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started_at"]))
        cells = [run["run_id"], run["kind"], run["status"], started, str(run["calls"])]
        cells += [dollars(run["cost"]), *([run["pool"] or ""] if with_pool else [])]
        table.add_row(*cells)
    console.print(table)


RunArgument = Annotated[
    str, typer.Argument(help="Run id (see `consortium traces list`), or `latest`.")
]


def _stored_run(traces: str, run: str) -> tuple[TraceStore, dict[str, Any]]:
    """The store and the header of `run` (`latest`: the run started last), or a clear error."""
    from consortium.runtime.store import TraceStore

    store = TraceStore(traces)
    header = store.run(run)
    if header is None:
        raise ConsortiumError(f"no run {run!r} in {traces}")
    return store, header


@traces_app.command("show")
def traces_show(
    run: RunArgument,
    limit: Annotated[int, typer.Option(help="Calls to show.")] = 50,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """One run: its calls (task, turn, model, role, tokens, cost, latency, verdict, error), the
    stages of its answer-aware policies, then each failed task with its reason."""
    store, header = _stored_run(traces, run)
    run = header["run_id"]
    console.print(f"run {run} · {header['kind']} · {header['status']} · pool {header['pool']}")
    _show_calls(store, run, limit)
    _show_stages(store, run, limit)
    failed = [r for r in store.iter_results(run) if r["error"]]
    if failed:
        console.print(f"{len(failed):,} task(s) failed:")
    for result in failed[:limit]:
        console.print(f"  {result['task_id']} · {result['policy']}: {result['error']}")


def _show_calls(store: TraceStore, run: str, limit: int) -> None:
    """The run's first `limit` calls as a table, and how many there are when that is more."""
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


def _show_stages(store: TraceStore, run: str, limit: int) -> None:
    """The stages of the run's answer-aware policies, a table per task: each sample asked for,
    the answer's agreement key, its check and scorer probability, what the rule decided next."""
    table: Table | None = None
    shown: tuple[str, str, int] | None = None
    total = 0
    for total, stage in enumerate(store.iter_stages(run), 1):
        if total > limit:
            continue  # counted, not shown
        task = (stage["task_id"] or "", stage["policy"] or "")
        if table is None or shown is None or shown[:2] != task:
            if table is not None:
                console.print(table)
            table = Table(title=f"stages of {task[0]} · {task[1]}", title_justify="left")
            for column in ("stage", "model #", "call", "answer key", "check", "scorer p"):
                table.add_column(column, no_wrap=column != "answer key", overflow="fold")
            table.add_column("then", overflow="fold")
        checked = stage["checked"]
        table.add_row(
            str(stage["stage"]),
            f"{stage['model']} #{stage['sample']}",
            stage["status"] + (" (submitted)" if stage["chosen"] else ""),
            (stage["answer"] or "")[:60],
            "" if checked is None else ("passed" if checked else "failed"),
            "" if stage["score"] is None else f"{stage['score']:.3f}",
            stage["decision"] if shown != (*task, stage["stage"]) else "",
        )
        shown = (*task, stage["stage"])
    if table is not None:
        console.print(table)
    if total > limit:
        err_console.print(f"showing {limit:,} of {total:,} stages (--limit N shows more)")


def dollars(cost: float) -> str:
    """A cost readable at any size: 12.3400, 0.0012, 3.2e-06; 0 for nothing spent."""
    if cost == 0:
        return "0"
    return f"{cost:.4f}" if cost >= 0.001 else f"{cost:.2g}"


@traces_app.command("export")
def traces_export(
    run: RunArgument,
    out: Annotated[Path | None, typer.Option(help="File to write (default: stdout).")] = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Every call of a run as JSON lines (messages included); `task_error` is why the call's task
    failed, when it did (a workflow that did not parse fails its task, not the call)."""
    store, header = _stored_run(traces, run)
    run = header["run_id"]
    task_errors = {
        (r["policy"], r["task_id"]): r["error"] for r in store.iter_results(run) if r["error"]
    }
    handle = out.open("w", encoding="utf-8") if out else sys.stdout
    written = 0
    try:
        for call in store.iter_calls(run):
            call["messages"] = json.loads(call["messages"])
            call["task_error"] = task_errors.get((call["policy"], call["task_id"]))
            handle.write(json.dumps(call, ensure_ascii=False) + "\n")
            written += 1
    finally:
        if out:
            handle.close()
    if out:
        err_console.print(f"wrote {written:,} call(s) of run {run} to {out}")
