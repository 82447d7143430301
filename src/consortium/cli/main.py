"""The `consortium` command: every command module registered, help tidied, errors as one line."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

import typer

# importing a command module registers its commands, in the order `--help` lists them
# isort: off
from consortium.cli import ask, evaluate, evolve, serve, demo  # noqa: F401
from consortium.cli import replay, pool, traces, records, records_files, record  # noqa: F401
from consortium.cli import coordinate, debates, learn_options  # noqa: F401
from consortium.cli import train_coordinator, train_trinity, train_router  # noqa: F401
from consortium.cli import train_conductor, train_compare  # noqa: F401

# isort: on
from consortium.cli.app import app, err_console, group_by_room
from consortium.core.errors import ConsortiumError


def _reflow(text: str) -> str:
    """Docstring prose as one line per paragraph, so that rich wraps it to the terminal; indented
    paragraphs (examples) keep their lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith(" ") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _tidy_help(command: Any) -> None:
    """Help that reads well at any width: prose reflowed, no `<bool>` beside a flag (its name
    says it all). Typer vendors its own click, so this goes by attributes, not click's classes."""
    if command.help:
        command.help = _reflow(command.help)
    help_option = command.get_help_option(command.context_class(command))  # cached by click
    for param in [*command.params, help_option]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


def command() -> Any:
    """The `consortium` command, as click runs it."""
    group_by_room(app)
    built = typer.main.get_command(app)
    _tidy_help(built)
    return built


def main(args: Sequence[str] | None = None) -> None:
    """Run `consortium ARGS` (the process's own arguments when None); always ends in SystemExit."""
    try:
        command()(args=None if args is None else list(args), prog_name="consortium")
    except ConsortiumError as error:
        err_console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted; finished calls are in the trace store")
        sys.exit(130)
