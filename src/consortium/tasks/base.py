"""Tasks, the one Grader protocol every benchmark implements, and a task set (tasks + grader)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    question: str
    dataset: str
    split: str
    reference: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Grade:
    correct: bool
    score: float
    detail: str = ""


class Grader(Protocol):
    def grade(self, task: Task, answer: str) -> Grade: ...


@dataclass(frozen=True)
class TaskSet:
    tasks: list[Task]
    grader: Grader
    description: str
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Named groups of datasets a report averages over (e.g. in- and out-of-distribution)."""
    warnings: tuple[str, ...] = ()
    """What a command should say before it uses these tasks (e.g. verdicts that disagree with
    the source's)."""
