"""The one interface every coordination policy implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task


@dataclass
class Outcome:
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)


class Coordinator(Protocol):
    name: str

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        """Answer `task`, making every model call through `caller`."""
        ...
