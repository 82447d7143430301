"""The conductor on a records folder: which questions are easy or hard for its workers (from their
recorded first answers), and how large the conductor's workflows are on each (for
conductor_report.py --records)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from consortium.replay.data import ReplayData
from consortium.tasks.base import Task


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


def size_table(summary: dict[str, Any]) -> list[str]:
    """Markdown: per stage and group, valid workflows, mean steps, distinct workers and the
    workers most often given the last step (whose output is the answer)."""
    groups: dict[str, list[str]] = summary["held_out_groups"]
    lines = [
        "| after | questions | valid | steps (mean) | distinct workers (mean) | answering worker |",
        "|---|---|---|---|---|---|",
    ]
    for stage, row in summary["validity"].items():
        for name, ids in groups.items():
            shapes = [row["shapes"][i] for i in ids if i in row["shapes"]]
            if not shapes:
                lines.append(f"| {stage} | {name} ({len(ids)}) | 0 | – | – | – |")
                continue
            steps = sum(s["steps"] for s in shapes) / len(shapes)
            workers = sum(s["models"] for s in shapes) / len(shapes)
            last = Counter(s["last"] for s in shapes).most_common(2)
            answering = ", ".join(f"{model} {count / len(shapes):.0%}" for model, count in last)
            lines.append(
                f"| {stage} | {name} ({len(ids)}) | {len(shapes)} | {steps:.2f} | {workers:.2f} "
                f"| {answering} |"
            )
    return lines
