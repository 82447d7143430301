"""A records data set as arrays a policy can be simulated on: per question and model, the recorded
samples in order, each with its answer class (samples whose answers agree share a class), its
verdict, its cost, its tokens and a check flag (the answer is present; for code, the program passes
its own docstring examples)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER, AnswerClasses, AnswerKey, Equivalence
from consortium.records.errors import RecordsError
from consortium.records.rows import scorable
from consortium.records.split import split_of
from consortium.records.store import Records

Verdicts = Literal["ours", "source"]
"""Whose verdict says a sample is right: ours (the records set's grader, named in its manifest)
or the source's own (`source_correct`, as recorded where the outputs came from)."""


@dataclass(frozen=True, slots=True)
class Sample:
    answer_class: int
    """Index of the answer's agreement class within its question; NO_ANSWER when none."""
    correct: bool
    cost_usd: float
    tokens: int
    checked: bool
    """The answer passed the cheap structured check (present; for code, its docstring examples)."""


@dataclass(frozen=True)
class OutcomeTable:
    dataset: str
    answer_kind: str
    models: tuple[str, ...]
    question_ids: tuple[str, ...]
    samples: tuple[tuple[tuple[Sample, ...], ...], ...]
    """samples[q][m]: model m's recorded samples of question q, in sample order (may be empty)."""
    is_test: np.ndarray
    ungraded: int = 0
    """Questions left out: some sample has no verdict, unless none has one and the source marks
    every recorded answer wrong (then the question is kept, every answer wrong)."""
    verdicts: Verdicts = "ours"

    @property
    def n_questions(self) -> int:
        return len(self.question_ids)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def indices(self, split: str) -> np.ndarray:
        return np.flatnonzero(self.is_test if split == "test" else ~self.is_test)

    def mean_cost(self, model: int, questions: np.ndarray) -> float:
        """Mean cost of the model's first sample over the questions (0 where it has none)."""
        costs = [self.samples[q][model][0].cost_usd for q in questions if self.samples[q][model]]
        return float(np.mean(costs)) if costs else 0.0

    def first_correct(self) -> np.ndarray:
        """[q, m]: the verdict of model m's first sample of q (False where none)."""
        return np.array(
            [[bool(s[0].correct) if s else False for s in row] for row in self.samples], dtype=bool
        )


def classes_of(answers: list[str | None], key: AnswerKey, same: Equivalence | None) -> list[int]:
    """Agreement classes for one question's answers, in order (`AnswerClasses`)."""
    classes = AnswerClasses(key, same)
    return [classes.add(answer) for answer in answers]


def build_table(
    records: Records,
    key: AnswerKey,
    same: Equivalence | None = None,
    checks: Mapping[tuple[str, str, int], bool] | None = None,
    verdicts: Verdicts = "ours",
) -> OutcomeTable:
    """The outcome table of a records data set, each sample right or wrong by `verdicts`. A
    question is graded when every sample of it has a verdict. One no sample has a verdict for is
    kept (every answer wrong) when the source marks every recorded answer wrong, since then no
    policy can be right; it is left out otherwise, and so is a question only some of whose
    samples have a verdict (counting those wrong would be a verdict nobody gave).
    `checks[(question_id, model, sample)]` overrides the default check (an answer is present),
    e.g. with docstring-example runs. Raises RecordsError when no question can be graded."""
    manifest = records.manifest
    columns = ["question_id", "model", "sample", "answer", "correct", "cost_usd"]
    rows = records.table.select([*columns, "source_correct", "tokens_in", "tokens_out"]).to_pylist()
    if verdicts == "source":  # `correct` holds the verdict every step below reads
        for row in rows:
            row["correct"] = row["source_correct"]
    order: dict[str, int] = {}
    for row in rows:
        order.setdefault(row["question_id"], len(order))
    models = tuple(manifest.models)
    model_index = {model: i for i, model in enumerate(models)}
    grouped: list[list[list[dict[str, Any]]]] = [[[] for _ in models] for _ in order]
    for row in rows:
        grouped[order[row["question_id"]]][model_index[row["model"]]].append(row)
    graded = [_graded([row for per_model in per_q for row in per_model]) for per_q in grouped]
    if not any(graded):
        raise RecordsError(_nothing_graded(manifest.dataset, verdicts, rows))
    grouped = [per_q for per_q, has in zip(grouped, graded, strict=True) if has]
    samples = []
    for question_rows in grouped:
        flat = [row for per_model in question_rows for row in sorted(per_model, key=_by_sample)]
        classes = iter(classes_of([row["answer"] for row in flat], key, same))
        per_question = []
        for per_model in question_rows:
            built = []
            for row in sorted(per_model, key=_by_sample):
                answer_class = next(classes)
                address = (row["question_id"], row["model"], row["sample"])
                checked = (
                    checks[address]
                    if checks is not None and address in checks
                    else answer_class != NO_ANSWER
                )
                built.append(
                    Sample(
                        answer_class,
                        bool(row["correct"]),
                        float(row["cost_usd"]),
                        int(row["tokens_in"]) + int(row["tokens_out"]),
                        bool(checked),
                    )
                )
            per_question.append(tuple(built))
        samples.append(tuple(per_question))
    question_ids = tuple(q for q, has in zip(order, graded, strict=True) if has)
    is_test = np.array([split_of(manifest.dataset, q) == "test" for q in question_ids])
    return OutcomeTable(
        manifest.dataset,
        manifest.answer_kind,
        models,
        question_ids,
        tuple(samples),
        is_test,
        ungraded=graded.count(False),
        verdicts=verdicts,
    )


def _graded(rows: list[dict[str, Any]]) -> bool:
    """Whether a question's samples (`rows`, each with its `correct` verdict) can be scored."""
    return scorable([row["correct"] for row in rows], [row["source_correct"] for row in rows])


def _nothing_graded(dataset: str, verdicts: Verdicts, rows: list[dict[str, Any]]) -> str:
    whose = "the source's verdicts" if verdicts == "source" else "our verdicts"
    models: dict[str, bool] = {}
    for row in rows:
        models[row["model"]] = models.get(row["model"], False) or row["correct"] is not None
    without = [model for model, has in models.items() if not has]
    reason = f"; no sample of {', '.join(without)} has one" if without else ""
    other = "ours" if verdicts == "source" else "source"
    return (
        f"{dataset}: no question has {whose} on every sample{reason} "
        f"(try --verdicts {other}, or leave the data set out)"
    )


def _by_sample(row: dict[str, Any]) -> int:
    return int(row["sample"])
