"""Task sets from recorded outcomes, with the train/test splits as recorded, and their grader:
the `replay:` kind of `--tasks` (`replay_task_set`)."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass

from consortium.core.answers import stated
from consortium.core.errors import TaskSpecError
from consortium.replay.behaviour import ANSWER_TOKEN
from consortium.replay.data import (
    SOURCES,
    ReplayData,
    ReplayRecord,
    Source,
    load_replay,
    reference_token,
)
from consortium.tasks.base import Grade, Task, TaskSet
from consortium.tasks.forms import REPLAY
from consortium.tasks.recorded import P_CORRECT
from consortium.tasks.spec import TaskSpec

REPLAY_DATA_ENV = "CONSORTIUM_REPLAY_DATA"

ID_DATASETS = ("mmlu", "gsm8k", "cmmlu", "arc_challenge", "humaneval")
"""In-distribution datasets of the RouterDC setup (train and test splits recorded)."""
OOD_DATASETS = ("math_prealgebra", "mbpp", "ceval")
"""Out-of-distribution datasets (test only)."""

_ANSWER = stated(ANSWER_TOKEN)


@dataclass(frozen=True)
class ReplayTaskSet:
    tasks: list[Task]
    description: str
    source: Source


def task_from_record(record: ReplayRecord) -> Task:
    if record.responses is not None:
        right = sorted({record.responses[m] for m, p in record.p_correct.items() if p >= 1.0})
        reference: object = right
    else:
        reference = reference_token(record.question)
    return Task(
        id=record.id,
        question=record.question,
        dataset=record.dataset,
        split=record.split,
        reference=reference,
        meta={"source": record.source, P_CORRECT: dict(record.p_correct)},
    )


def load_replay_tasks(
    data: ReplayData,
    *,
    source: Source = "split2",
    datasets: Sequence[str] | None = None,
    split: str = "test",
    limit: int | None = None,
    seed: int = 0,
) -> ReplayTaskSet:
    """Recorded questions of `datasets` in `split`; `limit` keeps a seeded sample per dataset."""
    known = sorted({r.dataset for r in data.select(source=source)})
    chosen = list(datasets) if datasets else known
    unknown = [d for d in chosen if d not in known]
    if unknown:
        raise TaskSpecError(
            f"no recorded {source} dataset {', '.join(unknown)}; recorded: {', '.join(known)}"
        )
    tasks: list[Task] = []
    for dataset in chosen:
        records = data.select(source=source, datasets=[dataset], split=split)
        if not records:
            raise TaskSpecError(f"dataset {dataset} has no recorded {split!r} split")
        if limit is not None and limit < len(records):
            records = random.Random(f"{seed}:{dataset}").sample(records, limit)
            records.sort(key=lambda r: r.index)
        tasks += [task_from_record(r) for r in records]
    return ReplayTaskSet(tasks, data.description(source), source)


class ReplayGrader:
    """Grades replayed answers: the reference token (split2), the recorded verdict (RouterBench)."""

    def grade(self, task: Task, answer: str) -> Grade:
        if isinstance(task.reference, list):
            correct = answer.strip() in {text.strip() for text in task.reference}
            detail = "matches a right recorded response" if correct else "not a right response"
            return Grade(correct, float(correct), detail)
        found = _ANSWER.findall(answer)
        if not found:
            return Grade(False, 0.0, "no final answer found")
        correct = found[-1] == task.reference
        return Grade(correct, float(correct), f"final answer {found[-1]}")


def replay_task_set(spec: TaskSpec) -> TaskSet:
    """`replay:data=DIR:source=split2:datasets=a,b:split=test:limit=N:seed=0`."""
    spec.check_keys(REPLAY.keys)
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
