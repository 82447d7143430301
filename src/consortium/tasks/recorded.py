"""Recorded outcomes a task may carry: each recorded model's probability of a right answer on it.
Task sets built from recorded data (the replay plug-in's) fill them; routing trained on recorded
outcomes reads them."""

from __future__ import annotations

from consortium.tasks.base import Task

P_CORRECT = "p_correct"
"""The `Task.meta` key of the recorded outcomes: {recorded model id: probability of a right answer}
(the fraction of correct samples, or 1/0 for multiple choice)."""


def recorded_outcomes(task: Task) -> dict[str, float] | None:
    """The task's recorded outcomes; None for a task that carries none (not from a recorded set)."""
    recorded = task.meta.get(P_CORRECT)
    return recorded if isinstance(recorded, dict) else None
