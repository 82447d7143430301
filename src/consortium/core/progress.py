"""The progress bar every long command shows; in a log file (no terminal) it writes lines instead.

A terminal gets rich's live bar. Anywhere else (output redirected to a file, CI) the bar cannot
redraw, so each bar writes a line when it crosses another `every` percent of its total, and at
least every `quiet` seconds while it advances (a bar without a total writes on that clock only):
a log never stays silent for a minute while work is done.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class LoggedProgress(Progress):
    """A rich `Progress` that, off a terminal, logs a line per `every` percent (and at least one
    per `quiet` seconds of advancing work) instead of drawing."""

    def __init__(self, *columns: Any, every: float = 10.0, quiet: float = 30.0, **kwargs: Any):
        super().__init__(*columns, **kwargs)
        self.every = every
        self.quiet = quiet
        self._logged: dict[TaskID, tuple[float, float]] = {}
        """Per bar: the last percentage step logged, and when."""

    @property
    def logs_lines(self) -> bool:
        return not self.console.is_terminal

    def add_task(self, description: str, *args: Any, **kwargs: Any) -> TaskID:
        bar = super().add_task(description, *args, **kwargs)
        self._logged[bar] = (0.0, time.monotonic())
        return bar

    def reset(self, task_id: TaskID, **kwargs: Any) -> None:
        super().reset(task_id, **kwargs)
        self._logged[task_id] = (0.0, time.monotonic())

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._log(task_id)

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        if "completed" in kwargs or "advance" in kwargs:
            self._log(task_id)

    def _log(self, task_id: TaskID) -> None:
        if not self.logs_lines:
            return
        task = self._tasks[task_id]
        step, at = self._logged.get(task_id, (0.0, time.monotonic()))
        now = time.monotonic()
        reached = task.percentage // self.every * self.every if task.total else step
        if reached <= step and now - at < self.quiet and task.completed != task.total:
            return
        if task.completed == task.total and reached <= step and step >= 100:
            return  # the end was logged already
        self._logged[task_id] = (max(reached, step) if task.total else 0.0, now)
        elapsed = time.strftime("%H:%M:%S", time.gmtime(task.elapsed or 0.0))
        count = f"{task.completed:,.0f}"
        if task.total:
            count += f"/{task.total:,.0f} ({task.percentage:.0f} %)"
        self.console.print(
            f"{task.description}: {count} · {elapsed}", markup=False, highlight=False
        )


def task_progress(console: Console) -> LoggedProgress:
    return LoggedProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=not console.is_terminal,
    )
