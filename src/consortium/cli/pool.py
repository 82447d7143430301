"""`consortium pool check`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from consortium.cli.app import console, pool_app


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
