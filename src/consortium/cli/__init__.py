"""`consortium …`: the command-line interface, one module per command group."""

from consortium.cli.main import _reflow, command, main

__all__ = ["_reflow", "command", "main"]
