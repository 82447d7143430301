"""Baseline policies: one fixed model, or a model drawn at random per task."""

from __future__ import annotations

import random

from consortium.coord.base import Outcome
from consortium.core.errors import CoordinatorError
from consortium.core.types import user
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task


class SingleModel:
    def __init__(self, model: str) -> None:
        self.model = model
        self.name = f"single:{model}"

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        completion = await caller.call(self.model, [user(task.question)], final=True)
        return Outcome(completion.text, model=self.model)


class RandomRouter:
    """Routes each task to a uniformly drawn model; the draw depends only on (seed, task id)."""

    def __init__(self, models: list[str], seed: int = 0) -> None:
        if not models:
            raise CoordinatorError("RandomRouter needs at least one model")
        self.models = list(models)
        self.seed = seed
        self.name = "random"

    def pick(self, task: Task) -> str:
        return random.Random(f"{self.seed}:{task.id}").choice(self.models)

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        model = self.pick(task)
        completion = await caller.call(model, [user(task.question)], final=True)
        return Outcome(completion.text, model=model)
