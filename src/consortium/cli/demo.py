"""`consortium demo` (the served teams on recorded outputs) and `consortium routing-demo` (the
question-only router on the scores-only replay)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import app, console
from consortium.cli.options import DEFAULT_TRACES, TracesOption


@app.command()
def demo(
    records: Annotated[
        list[Path],
        typer.Option(
            "--records",
            help="A records folder (repeat for several; `consortium records import` writes them).",
        ),
    ],
    policies: Annotated[
        Path,
        typer.Option(
            help="Where the policy folders are: <dataset>-single, <dataset>-vote and "
            "<dataset>-team for each records set (`make teams` fits them)."
        ),
    ] = Path("policies"),
    out: Annotated[
        Path,
        typer.Option(help="Markdown report (`make demo` writes the committed reports/demo.md)."),
    ] = Path("out/demo.md"),
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """The served team on real models' recorded outputs: for each records set, its policy
    folders (the best single model, the weighted vote, the team picked on train) evaluated over
    the HTTP replay of the records, as your own endpoints would run them, each figure beside the
    one its folder states.

    Example:

      consortium demo --records records/math --policies policies --out out/demo.md
    """
    from consortium.demo.teams import run_team_demo

    run_team_demo(records, policies, traces=traces, out=out, console=console)


@app.command("routing-demo")
def routing_demo(
    data: Annotated[
        Path,
        typer.Option(
            "--data", envvar="CONSORTIUM_REPLAY_DATA", help="The recorded data folder (routerdc)."
        ),
    ],
    limit: Annotated[int, typer.Option(help="Questions per dataset (0: all).")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of sampling and replay.")] = 0,
    out: Annotated[
        Path,
        typer.Option(help="Markdown report (`make routing-demo` writes reports/routing-demo.md)."),
    ] = Path("out/routing-demo.md"),
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
        typer.Option(
            help="Include the baselines as workflows (judge vote, MoA, debate, reflection)."
        ),
    ] = True,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Routing on the scores-only replay of RouterDC's data: the question-only TRINITY
    coordinator, the baselines as workflows, every single model, a random router and the
    per-question-best oracle on the recorded test splits."""
    from consortium.demo.routing import run_routing_demo

    run_routing_demo(
        data,
        traces=traces,
        out=out,
        limit=limit or None,
        seed=seed,
        console=console,
        policy=policy if trinity else None,
        workflows=workflows,
    )
