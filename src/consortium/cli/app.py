"""The command groups, the room each command is listed under in `--help`, and the consoles every
command prints to."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from typer.models import CommandInfo, TyperInfo

from consortium.smallmodels.commands import local_app

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
records_app = typer.Typer(
    help="Recorded outputs of real models in one Parquet format: import, inspect.",
    no_args_is_help=True,
)
debates_app = typer.Typer(
    help="Recorded debates of real models: when does talking pay?", no_args_is_help=True
)
app.add_typer(replay_app, name="replay")
app.add_typer(pool_app, name="pool")
app.add_typer(traces_app, name="traces")
app.add_typer(train_app, name="train")
app.add_typer(records_app, name="records")
app.add_typer(debates_app, name="debates")
app.add_typer(local_app, name="local")

COMMAND_ROOMS: dict[str, str] = {
    "ask": "evaluation",
    "conduct": "evaluation",
    "eval": "evaluation",
    "record": "evaluation",
    "records": "evaluation",
    "coordinate": "reports",
    "train": "reports",
    "evolve": "evolve",
    "serve": "serve",
    "replay": "replay",
    "debates": "replay",
    "demo": "demo",
    "routing-demo": "demo",
    "pool": "pool",
    "local": "smallmodels",
    "traces": "viewer",
    "feedback": "serve",
}
"""Each command (and command group) under the room of the package that does its work, as
docs/architecture.md draws the rooms: the highest room its module imports (tests/test_cli_help.py
checks this against the import graph)."""


def group_by_room(typer_app: typer.Typer) -> None:
    """Set every registered command's and group's help panel to its room (a command missing
    from the table stays under typer's default panel, and the help test names it)."""
    listed: list[CommandInfo | TyperInfo] = [
        *typer_app.registered_commands,
        *typer_app.registered_groups,
    ]
    for info in listed:
        room = COMMAND_ROOMS.get(command_name(info))
        if room is not None:
            info.rich_help_panel = room


def command_name(info: CommandInfo | TyperInfo) -> str:
    """The name a command or a group is called by (typer's, from its function when unnamed)."""
    if info.name:
        return info.name
    assert info.callback is not None
    return info.callback.__name__.replace("_", "-")


# Piped output is not cut to 80 columns, so tables stay whole in files and logs.
# Not a terminal (a pipe, a log file): 100 columns, the width every table is laid out for.
# Text lines are never broken by the console (soft wrap): paths and ids stay whole.
console = Console(width=None if sys.stdout.isatty() else 100, soft_wrap=True)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 100, soft_wrap=True)
