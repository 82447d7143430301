"""A mixed training pool of recorded answers: the questions of several records folders (GSM8K,
MATH, HumanEval, DATE, ...) in one task set, each question carrying its own data set's workers.

Every task's `meta` holds what the conductor's training needs beyond the question:

- `roster`: the pool names of the models recorded on every question of its data set; a prompt
  may show only these (a GSM8K question never names a HumanEval model);
- `answer_kind`: how its answer is graded (`MixedGrader` dispatches on it);
- `cost_unit`: the mean $ per question of its data set's best single model on the train split
  (first samples), the unit the cost-aware reward measures a workflow's $ in.

Task ids are `DATASET/QUESTION_ID`, unique across the sets; the replay server finds a question by
its text, so the prefix never reaches it.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from consortium.records import load_records
from consortium.records.names import short_name
from consortium.records.prices import cost_of
from consortium.records.schema import AnswerKind
from consortium.records.split import split_of
from consortium.records.tasks import RecordsGrader, records_tasks
from consortium.tasks.base import Grade, Task


@dataclass(frozen=True)
class DataSetInfo:
    name: str
    folder: str
    answer_kind: AnswerKind
    roster: tuple[str, ...]
    """Pool names of the models recorded on every question, in the records' order."""
    best_model: str
    """The model right most often on the train split (first samples); ties: the cheaper."""
    best_accuracy: float
    cost_unit: float
    """The best model's mean $ per train question (first samples)."""
    mean_cost: dict[str, float]
    """Every roster model's mean $ per train question (first samples)."""


def data_set_info(folder: str | Path) -> DataSetInfo:
    """A records folder's roster, its best single model on the train split and that model's
    mean cost, from the first recorded sample of each (question, model)."""
    loaded = load_records(folder)
    manifest = loaded.manifest
    columns = ["question_id", "model", "sample", "correct", "tokens_in", "tokens_out"]
    first = [r for r in loaded.table.select(columns).to_pylist() if r["sample"] == 0]
    questions = {r["question_id"] for r in first}
    asked: dict[str, set[str]] = defaultdict(set)
    right: dict[str, int] = defaultdict(int)
    spent: dict[str, float] = defaultdict(float)
    train = {
        q
        for q in questions
        if split_of(manifest.dataset, q, manifest.split.test_fraction) == "train"
    }
    for row in first:
        model = row["model"]
        asked[model].add(row["question_id"])
        if row["question_id"] in train:
            right[model] += bool(row["correct"])
            price = manifest.prices.get(model)
            if price is not None:
                spent[model] += cost_of(price, row["tokens_in"] or 0, row["tokens_out"] or 0)
    complete = [m for m in dict.fromkeys(r["model"] for r in first) if asked[m] >= questions]
    mean_cost = {m: spent[m] / len(train) for m in complete}
    best = max(complete, key=lambda m: (right[m], -mean_cost[m]))
    return DataSetInfo(
        manifest.dataset,
        str(folder),
        manifest.answer_kind,
        tuple(short_name(m) for m in complete),
        short_name(best),
        right[best] / len(train),
        mean_cost[best],
        {short_name(m): cost for m, cost in mean_cost.items()},
    )


class MixedGrader:
    """Grades each task by its own data set's answer kind (`meta["answer_kind"]`)."""

    def __init__(self) -> None:
        self._graders: dict[str, RecordsGrader] = {}

    def grade(self, task: Task, answer: str) -> Grade:
        kind = task.meta["answer_kind"]
        grader = self._graders.get(kind)
        if grader is None:
            grader = self._graders[kind] = RecordsGrader(kind)
        return grader.grade(task, answer)


@dataclass
class MixedTasks:
    tasks: list[Task]
    grader: MixedGrader
    sets: dict[str, DataSetInfo]

    def of(self, dataset: str) -> list[Task]:
        return [t for t in self.tasks if t.meta["dataset"] == dataset]


def mixed_tasks(
    folders: Sequence[str | Path],
    split: str,
    *,
    per_set: int | None = None,
    seed: int = 0,
    infos: dict[str, DataSetInfo] | None = None,
) -> MixedTasks:
    """The `split` questions of every folder (at most `per_set` of each, a seeded sample), in a
    seeded interleaved order; `infos` reuses data set summaries already computed."""
    rng = random.Random(seed)
    sets: dict[str, DataSetInfo] = dict(infos or {})
    tasks: list[Task] = []
    for folder in folders:
        found, _, dataset, _ = records_tasks(str(folder), split)
        info = sets.get(dataset) or data_set_info(folder)
        sets[dataset] = info
        if per_set is not None and per_set < len(found):
            found = [found[i] for i in sorted(rng.sample(range(len(found)), per_set))]
        for task in found:
            meta = task.meta | {
                "dataset": dataset,
                "answer_kind": info.answer_kind,
                "roster": list(info.roster),
                "cost_unit": info.cost_unit,
            }
            tasks.append(
                Task(f"{dataset}/{task.id}", task.question, dataset, split, task.reference, meta)
            )
    rng.shuffle(tasks)
    return MixedTasks(tasks, MixedGrader(), sets)


def roster_of(task: Task, default: Sequence[str]) -> list[str]:
    """The workers a task's prompt may name: its own roster, or the whole pool."""
    return list(task.meta.get("roster") or default)
