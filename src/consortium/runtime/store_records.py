"""The rows the trace store writes, as the callers fill them in: one model call, one stage of an
answer-aware policy, one task's graded result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from consortium.core.types import Message


@dataclass
class CallRecord:
    run_id: str
    model: str
    messages: Sequence[Message]
    response: str | None
    policy: str | None = None
    task_id: str | None = None
    turn: int | None = None
    role: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency: float = 0.0
    verdict: str | None = None
    error: str | None = None
    cached: bool = False
    fallback_from: str | None = None
    """The model that failed and that this call stands in for."""


@dataclass
class StageRecord:
    """One sample an answer-aware policy asked for (`stages`); the task caller fills in the run,
    policy and task."""

    stage: int
    model: str
    sample: int
    status: str
    """answered, unread (a reply with no answer the kind's reader finds), failed, refused (by
    the budget: never sent)."""
    answer: str | None = None
    """The representative key of the answer's agreement class (the answer that class holds)."""
    answer_class: int | None = None
    checked: bool | None = None
    score: float | None = None
    """The scorer's probability of the answer's class after its stage (scorer rules only)."""
    chosen: bool = False
    decision: str | None = None
    """What the rule decided after this stage: the samples it asked next, or why it stopped."""
    run_id: str = ""
    policy: str | None = None
    task_id: str | None = None


@dataclass
class ResultRecord:
    run_id: str
    policy: str
    task_id: str
    dataset: str
    answer: str | None
    correct: bool
    score: float
    detail: str
    calls: int
    tokens: int
    cost: float
    error: str | None = None
    """Why the task failed (`core.errors.reason`: type and message), when it did."""
    reference: str | None = None
    """The task's reference answer, as the grader compared it (None for code tasks' tests)."""
