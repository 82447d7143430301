"""Loading `--tasks` for a command: the task set, with its warnings said first."""

from __future__ import annotations

from consortium.cli.app import err_console
from consortium.tasks.base import TaskSet


def load_tasks(spec: str) -> TaskSet:
    """`load_task_set`, printing what the task set warns of (e.g. records whose verdicts
    disagree with the source's) before the command goes on."""
    from consortium.tasks.registry import load_task_set

    task_set = load_task_set(spec)
    for line in task_set.warnings:
        err_console.print(line, style="yellow", highlight=False, markup=False)
    return task_set
