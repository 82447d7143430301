"""The conductor-format report (`reports.conductor_format`) on a records folder: its replay is the
workers, the training questions its train split, and the held-out ones half from its test split's
easiest questions (every model's first recorded answer right) and half from its hardest (at most
half right). On replay a step's answer is its model's recorded sample, whatever the step is told
or shown (declared)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from consortium.pool.config import PoolConfig
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.reports.conductor_format.request import ConductorFormatRequest, Setup
from consortium.tasks.base import Task
from consortium.tasks.registry import load_task_set


def first_answers_right(data: ReplayData) -> dict[str, dict[str, bool]]:
    """Per question, whether each model's first recorded sample is right (the replay's records)."""
    return {
        str(record.question_id): {model: got[0].correct for model, got in record.samples.items()}
        for record in data.records
        if record.samples is not None
    }


def models_on_every_question(right: dict[str, dict[str, bool]]) -> list[str]:
    """The models recorded on every question: workers the conductor can always call."""
    every = set.intersection(*(set(models) for models in right.values()))
    return sorted(every)


def easiest_and_hardest(
    tasks: Sequence[Task],
    right: dict[str, dict[str, bool]],
    models: Sequence[str],
    n: int,
    seed: int,
) -> dict[str, list[Task]]:
    """Up to n/2 questions every model answers right ("easy") and up to n/2 that at most half of
    them answer right ("hard"), drawn at random."""
    groups: dict[str, list[Task]] = {"easy": [], "hard": []}
    for task in tasks:
        score = sum(right[task.id][model] for model in models)
        if score == len(models):
            groups["easy"].append(task)
        elif 2 * score <= len(models):
            groups["hard"].append(task)
    rng = random.Random(seed)
    return {name: rng.sample(group, min(n // 2, len(group))) for name, group in groups.items()}


@contextmanager
def records_workers(folder: Path, data: ReplayData, models: list[str]) -> Iterator[PoolConfig]:
    with ReplayServerProcess(None, records=[folder]) as server:
        yield replay_pool(data, server.base_url, models=models, max_retries=0)


def records_setup(request: ConductorFormatRequest) -> Setup:
    """The records mode: the workers are the models recorded on every question."""
    folder = Path(request.records or "")
    data = load_records_replay([folder])
    dataset = data.records[0].dataset
    right = first_answers_right(data)
    models = models_on_every_question(right)
    spec = f"records:path={folder}"
    test = load_task_set(f"{spec}:split=test")
    groups = easiest_and_hardest(test.tasks, right, models, request.held_out, request.seed)
    return Setup(
        lambda scratch: records_workers(folder, data, models),
        load_task_set(
            f"{spec}:split=train:limit={request.train_questions}:seed={request.seed + 1}"
        ),
        groups["easy"] + groups["hard"],
        {
            "title": f"SmolLM2-135M-Instruct conducts recorded answers of real models ({dataset})",
            "pool": (
                f"replay of the records folder `{folder.name}` (`consortium replay serve "
                f"--records`), the models recorded on every question: {', '.join(models)}. "
                "Declared simulation: a step's answer is its model's recorded sample (the k-th "
                "step of one model gets its k-th sample), whatever the step is told or shown, so "
                "the workflow's answer is its last step's recorded answer; the reward is the "
                "paper's (0 unparsable, 0.5 wrong, 1 right), with no cost term"
            ),
            "held_out_label": (
                f"{dataset} test questions ({len(groups['easy'])} easy, {len(groups['hard'])} hard)"
            ),
            "rollouts_on": "the replayed workers",
            "held_out_groups": {name: [t.id for t in group] for name, group in groups.items()},
        },
        f"conductor-records-{dataset}",
    )
