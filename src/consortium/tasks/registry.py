"""Resolve a `--tasks` spec to tasks and their grader."""

from __future__ import annotations

import os
from dataclasses import dataclass

from consortium.errors import TaskSpecError
from consortium.replay.data import SOURCES, load_replay
from consortium.tasks.base import Grader, Task
from consortium.tasks.replay import ReplayGrader, load_replay_tasks
from consortium.tasks.spec import parse_spec

REPLAY_DATA_ENV = "CONSORTIUM_REPLAY_DATA"


@dataclass(frozen=True)
class TaskSet:
    tasks: list[Task]
    grader: Grader
    description: str


def load_task_set(text: str) -> TaskSet:
    spec = parse_spec(text)
    if spec.name == "replay":
        spec.check_keys({"data", "source", "datasets", "split", "limit", "seed"})
        data_dir = spec.get("data") or os.environ.get(REPLAY_DATA_ENV)
        if not data_dir:
            raise TaskSpecError(
                f"--tasks replay needs data=DIR (the routerdc folder) or ${REPLAY_DATA_ENV}"
            )
        source = spec.get("source", "split2")
        if source not in SOURCES:
            raise TaskSpecError(f"--tasks replay: source must be one of {', '.join(SOURCES)}")
        data = load_replay(data_dir, sources=[source])
        task_set = load_replay_tasks(
            data,
            source=source,
            datasets=spec.get_list("datasets"),
            split=spec.get("split", "test") or "test",
            limit=spec.get_int("limit"),
            seed=spec.get_int("seed", 0) or 0,
        )
        return TaskSet(task_set.tasks, ReplayGrader(), task_set.description)
    raise TaskSpecError(f"--tasks: unknown task set {spec.name!r}; known: replay")
