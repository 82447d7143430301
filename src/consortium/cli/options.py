"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.runtime.store import DEFAULT_TRACES

__all__ = [
    "DEFAULT_TRACES",
    "ComponentsOption",
    "ExecutorOption",
    "MaxCostOption",
    "MinibatchOption",
    "PoolOption",
    "PopsizeOption",
    "RayAddressOption",
    "SigmaOption",
    "TaskCallsOption",
    "TaskTokensOption",
    "TracesOption",
]

TracesOption = Annotated[
    str,
    typer.Option(
        "--traces",
        envvar="CONSORTIUM_TRACES",
        help="Trace store URL (SQLAlchemy): sqlite:///file.db or postgresql+psycopg://…",
    ),
]
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
