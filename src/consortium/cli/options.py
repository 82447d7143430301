"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from consortium.core.errors import ConfigError
from consortium.runtime.store import DEFAULT_TRACES

Number = TypeVar("Number", int, float)

__all__ = [
    "DEFAULT_TRACES",
    "ComponentsOption",
    "ExecutorOption",
    "MaxCallsOption",
    "MaxCostOption",
    "MinibatchOption",
    "PoolOption",
    "PopsizeOption",
    "RayAddressOption",
    "SigmaOption",
    "SubstituteOption",
    "TaskCallsOption",
    "TaskTokensOption",
    "TracesOption",
    "in_range",
]


def in_range(
    option: str, low: float | None = None, high: float | None = None, *, above: bool = False
) -> Callable[[Number | None], Number | None]:
    """A typer callback refusing a value of `option` outside [low, high] (`above`: low itself
    refused too) with one clear line (a `ConfigError`, which the CLI prints), before the command
    starts any work."""

    def check(value: Number | None) -> Number | None:
        if value is None:
            return value
        too_low = low is not None and (value <= low if above else value < low)
        if too_low or (high is not None and value > high):
            if high is None:
                wanted = f"{'above' if above else 'at least'} {low:g}"
            elif low is None:
                wanted = f"at most {high:g}"
            else:
                wanted = f"between {low:g} and {high:g}"
            raise ConfigError(f"{option} must be {wanted}, got {value:g}")
        return value

    return check


PORT = in_range("--port", 1, 65535)

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
    typer.Option(
        help="Cap on the run's cost in USD; a call that could exceed it is not made.",
        callback=in_range("--max-cost", 0),
    ),
]
MaxCallsOption = Annotated[
    int | None,
    typer.Option(
        help="Cap on the run's model calls; an answer-aware policy stops there with its best "
        "answer so far.",
        callback=in_range("--max-calls", 0),
    ),
]
SubstituteOption = Annotated[
    list[str] | None,
    typer.Option(
        "--substitute",
        help="OLD=NEW: run an answer-aware policy folder with the pool's model NEW in place of "
        "its model OLD (repeatable); the answer's notes say so.",
    ),
]
TaskCallsOption = Annotated[
    int | None,
    typer.Option(help="Cap on calls per task.", callback=in_range("--task-max-calls", 0)),
]
TaskTokensOption = Annotated[
    int | None,
    typer.Option(
        help="Cap on tokens per task (worst case of each call reserved before it is made).",
        callback=in_range("--task-max-tokens", 0),
    ),
]
PopsizeOption = Annotated[
    int,
    typer.Option(help="Candidates per generation (paper: 32).", callback=in_range("--popsize", 2)),
]
MinibatchOption = Annotated[
    int, typer.Option(help="Training tasks per candidate.", callback=in_range("--minibatch", 1))
]
SigmaOption = Annotated[
    float,
    typer.Option(
        help="Initial step size of sep-CMA-ES.", callback=in_range("--sigma0", 0, above=True)
    ),
]
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
    typer.Option(
        help="Principal components of the feature the head reads (0: the full feature).",
        callback=in_range("--components", 0),
    ),
]
