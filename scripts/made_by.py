"""The "Made by" command a report prints: the script and its arguments, with every path written
relative to the repository (a path outside it and its parent folder shows as `…/NAME`), so a
committed report never names the folders of the machine that made it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _shown(argument: str) -> str:
    if "=" in argument and argument.startswith("-"):
        option, value = argument.split("=", 1)
        return f"{option}={_shown(value)}"
    if not os.path.isabs(argument):
        return argument
    path = Path(argument).resolve()
    if path.is_relative_to(REPO.parent):
        return os.path.relpath(path, REPO)
    return f"…/{path.name}"


def made_by(script: str, argv: list[str]) -> str:
    """`python scripts/NAME.py ARGS`, paths repo-relative."""
    return shlex.join(["python", f"scripts/{script}", *(_shown(a) for a in argv)])
