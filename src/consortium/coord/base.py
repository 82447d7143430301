"""The one interface every coordination policy implements, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

if TYPE_CHECKING:
    from consortium.coord.conductor.executor import WorkflowRun
    from consortium.coord.trinity.turns import TurnRecord


@dataclass(frozen=True)
class Outcome:
    """A policy's answer and what it reports beside it. Each policy family fills the fields it
    knows; the others keep their neutral defaults."""

    answer: str
    model: str | None = None
    """Single-model and random policies: the pool model that answered."""
    confidence: float | None = None
    """How sure the policy is of its answer, in [0, 1]; None when it cannot say (TRINITY: the
    smallest turn confidence; a strategy: its first policy's confidence)."""
    turns: tuple[TurnRecord, ...] = ()
    """TRINITY: every turn, in order (REINFORCE reads each turn's feature and choices)."""
    accepted: bool | None = None
    """TRINITY: whether a verifier accepted the answer; None for other policies."""
    workflow: WorkflowRun | None = None
    """Conductor and fixed workflows: the executed workflow, steps and inner runs included."""
    conductor_calls: int = 0
    """Conductor: calls made to the conductor model, recursion included."""
    notes: tuple[str, ...] = ()
    """Conductor: notes of the run and of every inner run (fallbacks, repairs), outermost first."""
    cluster: str | None = None
    """Strategy: the cluster whose plan ran."""
    answered_by: str | None = None
    """Strategy: the policy spec whose answer was returned (the first, or the escalation)."""
    escalated: bool = False
    """Strategy: whether the escalation policy answered."""
    disagreed: bool | None = None
    """Strategy: whether the check policy disagreed with the first; None when none was asked."""


class Coordinator(Protocol):
    name: str

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        """Answer `task`, making every model call through `caller`."""
        ...
