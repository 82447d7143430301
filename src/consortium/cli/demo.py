"""`consortium demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import app, console
from consortium.cli.options import (
    DEFAULT_TRACES,
    TracesOption,
)


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
    out: Annotated[
        Path,
        typer.Option(help="Markdown report (`make demo` writes the committed reports/demo.md)."),
    ] = Path("out/demo.md"),
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
    records: Annotated[
        list[Path] | None,
        typer.Option(
            "--records",
            help="A records folder (repeat for several; `make records` writes them): adds the "
            "answer-aware team on real models' recorded answers beside the best single model.",
        ),
    ] = None,
    records_cache: Annotated[
        Path, typer.Option(help="Cache of the code checks' sandbox runs (code data sets).")
    ] = Path(".cache/coordination"),
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """The main job on the replay pool: the TRINITY coordinator, the baselines as workflows,
    every single model, a random router and the per-question-best oracle on the recorded test
    splits; with --records, the answer-aware team (weighted vote, learned answer scorer, the
    cascade that matches the vote for less) on real models' recorded answers."""
    from consortium.replay.demo import run_demo

    run_demo(
        data,
        traces=traces,
        out=out,
        limit=limit or None,
        seed=seed,
        console=console,
        policy=policy if trinity else None,
        workflows=workflows,
        records=records or [],
        records_cache=records_cache,
    )
