"""What one conductor-format run takes (its training settings) and what its mode trains on."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.pool.config import PoolConfig
from consortium.tasks.base import Task, TaskSet


@dataclass(frozen=True)
class ConductorFormatRequest:
    """`script`: the "Made by" command the report prints; `work`: the training folder (kept, and
    the run resumes from it; None: a temporary one)."""

    script: str
    benchmarks: str | None = None
    records: str | None = None
    out: str = "reports"
    work: str | None = None
    train_questions: int = 200
    held_out: int = 50
    sft_steps: int = 40
    sft_batch: int = 2
    sft_lr: float = 1e-4
    grpo_steps: int = 5
    questions_per_step: int = 2
    group_size: int = 4
    grpo_lr: float = 5e-6
    max_completion: int = 128
    worker_max_tokens: int = 128
    seed: int = 0


@dataclass
class Setup:
    """What one mode trains on: its workers (entered with the training), questions and labels."""

    workers: Callable[[Path], AbstractContextManager[PoolConfig]]
    tasks: TaskSet
    held_out: list[Task]
    report: dict[str, Any]
    name: str


@dataclass(frozen=True)
class ConductorFormatReport:
    """What a run writes: OUT/NAME.md and OUT/NAME.json."""

    name: str
    markdown: str
    json: str
