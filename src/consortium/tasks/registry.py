"""Resolve a `--tasks` spec to tasks and their grader."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from consortium.errors import TaskSpecError
from consortium.replay.data import SOURCES, load_replay
from consortium.tasks.arithmetic import arithmetic_tasks
from consortium.tasks.base import Grader, Task
from consortium.tasks.choice import ChoiceGrader
from consortium.tasks.code import CodeGrader
from consortium.tasks.loaders import FORMATS, build_tasks, read_hf, read_rows
from consortium.tasks.math import MathGrader
from consortium.tasks.replay import ID_DATASETS, OOD_DATASETS, ReplayGrader, load_replay_tasks
from consortium.tasks.spec import TaskSpec, parse_spec

REPLAY_DATA_ENV = "CONSORTIUM_REPLAY_DATA"


@dataclass(frozen=True)
class TaskSet:
    tasks: list[Task]
    grader: Grader
    description: str
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Named groups of datasets a report averages over (the replay set: ID and OOD)."""


def _grader(kind: str) -> Grader:
    if kind in ("gsm8k", "math"):
        return MathGrader()
    if kind in ("humaneval", "mbpp"):
        return CodeGrader()
    return ChoiceGrader()


def _benchmark(spec: TaskSpec) -> TaskSet:
    spec.check_keys({"path", "hf", "config", "split", "limit", "seed"})
    split = spec.get("split", "test") or "test"
    path, hf = spec.get("path"), spec.get("hf")
    if bool(path) == bool(hf):
        raise TaskSpecError(f"--tasks {spec.name}: give exactly one of path=FILE or hf=DATASET")
    rows = read_rows(path) if path else read_hf(str(hf), split, spec.get("config"))
    tasks = build_tasks(
        spec.name, rows, split=split, limit=spec.get_int("limit"), seed=spec.get_int("seed", 0) or 0
    )
    if not tasks:
        raise TaskSpecError(f"--tasks {spec.name}: no tasks in {path or hf} (split {split})")
    return TaskSet(tasks, _grader(spec.name), f"{spec.name} from {path or 'hf:' + str(hf)}")


def load_task_set(text: str) -> TaskSet:
    """`replay:…` for recorded outcomes, `arithmetic:n=100:seed=0` for generated questions, or a
    benchmark file: gsm8k, math, humaneval, mbpp, mc."""
    spec = parse_spec(text)
    if spec.name in FORMATS:
        return _benchmark(spec)
    if spec.name == "arithmetic":
        spec.check_keys({"n", "seed"})
        n, seed = spec.get_int("n", 100) or 100, spec.get_int("seed", 0) or 0
        return TaskSet(
            arithmetic_tasks(n, seed), MathGrader(), f"{n} arithmetic questions (seed {seed})"
        )
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
        groups = {"ID": ID_DATASETS, "OOD": OOD_DATASETS}
        return TaskSet(task_set.tasks, ReplayGrader(), task_set.description, groups)
    known = ", ".join(["replay", "arithmetic", *FORMATS])
    raise TaskSpecError(f"--tasks: unknown task set {spec.name!r}; known: {known}")
