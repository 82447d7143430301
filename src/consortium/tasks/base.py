"""Tasks and the one Grader protocol every benchmark implements."""

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
