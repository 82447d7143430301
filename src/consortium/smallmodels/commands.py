"""`consortium local …`: start and stop real small models on llama.cpp's server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from consortium.smallmodels.files import MODELS
from consortium.smallmodels.llamacpp import LlamaCppServers, ServerSettings, parse_models

local_app = typer.Typer(
    help=(
        "Real small language models (SmolLM2-135M-Instruct, Gemma 3 270M) from pinned PyPI "
        "packages, served by llama.cpp's OpenAI-compatible server on loopback.\n\n"
        "  consortium local start --pool local-pool.toml\n"
        "  consortium ask --pool local-pool.toml --policy workflow:judge-vote 'What is 7 + 5?'\n"
        "  consortium local stop"
    ),
    no_args_is_help=True,
)
StateOption = Annotated[
    Path,
    typer.Option("--state", help="Where the servers' pids, ports, logs and model files live."),
]
DEFAULT_STATE = Path(".consortium/llamacpp")
console = Console()


@local_app.command("start")
def start(
    pool: Annotated[Path, typer.Option("--pool", help="The pool file to write (TOML).")] = Path(
        "local-pool.toml"
    ),
    models: Annotated[
        str, typer.Option(help=f"Comma-separated, among: {', '.join(MODELS)}.")
    ] = ",".join(MODELS),
    threads: Annotated[int, typer.Option(help="CPU threads per server.")] = 1,
    n_ctx: Annotated[int, typer.Option(help="Context length of each server.")] = 2048,
    max_tokens: Annotated[
        int, typer.Option(help="The pool file's default completion length.")
    ] = 256,
    state: StateOption = DEFAULT_STATE,
) -> None:
    """Start one llama.cpp server per model (checked by sha256), wait until each answers, and
    write a pool file for them. The servers keep running until `consortium local stop`."""
    settings = ServerSettings(threads=threads, n_ctx=n_ctx, max_tokens=max_tokens)
    servers = LlamaCppServers(state, parse_models(models), settings)
    running = servers.start()
    servers.write_pool(pool)
    for server in running:
        console.print(f"{server.name}: {server.base_url} (pid {server.pid}, log {server.log})")
    console.print(f"pool file: {pool}; stop with: consortium local stop --state {state}")


@local_app.command("stop")
def stop(state: StateOption = DEFAULT_STATE) -> None:
    """Stop the servers that `consortium local start` left running."""
    stopped = LlamaCppServers(state).stop()
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "no server was running")


@local_app.command("status")
def status(state: StateOption = DEFAULT_STATE) -> None:
    """The servers that are running, with their addresses."""
    running = LlamaCppServers(state).running()
    if not running:
        console.print("no server is running")
    for server in running:
        console.print(f"{server.name}: {server.base_url} (pid {server.pid})")
