"""The options of `serve --learn` (one line each in `serve`'s signature), `consortium feedback
import` and `export`, and the command that lists feedback (`consortium traces feedback`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from consortium.cli.app import app, console, err_console, traces_app
from consortium.cli.options import DEFAULT_TRACES, TracesOption, in_range
from consortium.core.errors import ConsortiumError

LearnOption = Annotated[
    Path | None,
    typer.Option(
        "--learn",
        help="Learn while serving, into this folder: every request is recorded, "
        "POST /v1/feedback labels it, a guarded refit adopts DIR/policies/vN and swaps it in "
        "(GET /v1/policy names the version serving; a restart serves the last one adopted).",
    ),
]
RefitEveryOption = Annotated[
    int,
    typer.Option(help="With --learn: labelled requests between two refits.",
                 callback=in_range("--refit-every", 1)),
]  # fmt: skip
ExploreOption = Annotated[
    float,
    typer.Option(help="With --learn: share of requests (seeded by --seed) whose answer is "
                 "followed by shadow calls to the pool models the policy did not ask.",
                 callback=in_range("--explore", 0, 1)),
]  # fmt: skip
ExploreOnOption = Annotated[
    Literal["answer", "label"],  # serve.learn.settings.ExploreOn, not imported for --help's speed
    typer.Option(help="With --explore: explore a request once its answer is sent (answer; its "
                 "headers say so), or once its label arrives (label: only labelled requests "
                 "teach a refit, so the same refits cost the label share of the shadow $)."),
]  # fmt: skip
ExploreBudgetOption = Annotated[
    tuple[float, float] | None,
    typer.Option(help="With --explore: caps on the shadow calls' USD, per hour then in total.",
                 show_default=False),
]  # fmt: skip
LearnLamOption = Annotated[
    float,
    typer.Option(help="With --learn: the refit's cost weight λ (as train coordinator --lam).",
                 callback=in_range("--learn-lam", 0)),
]  # fmt: skip

LearnDirOption = Annotated[
    Path, typer.Option("--learn", help="The folder of `serve --learn`.", exists=True)
]
feedback_app = typer.Typer(help="Labels for a learning server's answers.", no_args_is_help=True)
app.add_typer(feedback_app, name="feedback")


@feedback_app.command("import")
def feedback_import(
    file: Annotated[Path, typer.Argument(help='JSONL: {"id": …, "reference": …} a line.')],
    learn: LearnDirOption,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Labels that arrive in bulk, each checked as POST /v1/feedback checks one (a line that
    cannot be taken is one line here and changes nothing)."""
    from consortium.serve.learn.bulk import import_labels

    result = import_labels(learn, traces, file)
    for line in result.refused:
        err_console.print(line, highlight=False, markup=False)
    console.print(f"{result.taken} labels taken, {len(result.refused)} refused")
    if result.refused:
        raise typer.Exit(1)


@feedback_app.command("export")
def feedback_export(
    learn: LearnDirOption,
    out: Annotated[Path, typer.Option(help="The records folder to write (new or empty).")],
    policy: Annotated[
        Path | None,
        typer.Option(
            help="The policy folder whose answer kind and prices the records state. Default: "
            "DIR's newest adopted version (DIR/policies/vN), else the policy serve started from "
            "(DIR/policies/start).",
            exists=True,
            show_default=False,
        ),
    ] = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """DIR's labelled traffic as a records folder, as a refit exports it: the labelled requests
    with a sample of every model DIR's traffic asked (DIR does not record the pool file: a model
    never asked is no pool model here). `train coordinator --records OUT` and `evolve --tasks
    records:path=OUT` take it."""
    from consortium.serve.learn.export_folder import export_traffic

    exported = export_traffic(learn, traces, out, policy)
    console.print(exported.summary(), highlight=False, markup=False)


@traces_app.command("feedback")
def traces_feedback(learn: LearnDirOption, traces: TracesOption = DEFAULT_TRACES) -> None:
    """The feedback a learning server took, newest first: the response, its label, the version
    that answered it and who answered."""
    from rich.table import Table

    from consortium.serve.learn.store import TrafficStore, store_url

    store = TrafficStore(store_url(learn, traces))
    rows = store.feedback_rows()
    store.close()
    if not rows:
        raise ConsortiumError(f"{learn}: no feedback yet")
    table = Table()
    for column in ("response", "label", "version", "answered by", "explored"):
        table.add_column(column, overflow="fold")
    for row in rows:
        label = "right" if row["correct"] else "wrong" if row["correct"] is not None else ""
        label = label or f"reference {row['reference']}"
        cells = [row["response_id"], label, row["version"], row["answered_by"] or ""]
        table.add_row(*cells, "yes" if row["explored"] else "")
    console.print(table)
