"""What a policy did on each question: the sample it answered with, what it asked (calls, $,
tokens), and the vote it took over the answers it saw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from consortium.coordinate.outcomes import NO_ANSWER, OutcomeTable, Sample

Asked = list[tuple[int, int]]
"""(model, sample index) pairs a policy asked for, in order."""


@dataclass
class PolicyRun:
    """One policy over every question of a table (report the test split; select on train)."""

    name: str
    correct: np.ndarray
    cost: np.ndarray
    calls: np.ndarray
    tokens: np.ndarray
    family: str = "baseline"
    note: str = ""
    params: dict[str, object] = field(default_factory=dict)


def new_run(name: str, table: OutcomeTable, family: str = "baseline", note: str = "") -> PolicyRun:
    n = table.n_questions
    return PolicyRun(name, np.zeros(n, bool), np.zeros(n), np.zeros(n), np.zeros(n), family, note)


def charge(
    run: PolicyRun, table: OutcomeTable, q: int, asked: Asked, answer: Sample | None
) -> None:
    """Record question q: every asked sample is paid for, the answer decides the verdict."""
    run.correct[q] = bool(answer is not None and answer.correct)
    run.cost[q] = sum(table.samples[q][m][k].cost_usd for m, k in asked)
    run.tokens[q] = sum(table.samples[q][m][k].tokens for m, k in asked)
    run.calls[q] = len(asked)


def vote(
    table: OutcomeTable, q: int, asked: Asked, weights: Sequence[float] | np.ndarray
) -> Sample | None:
    """The weighted plurality over the asked samples' answer classes (a model's samples share its
    weight); ties go to the class of the highest-weighted model that voted for one of them, then
    to the earliest. Returns a representative sample of the winning class (the first asked)."""
    per_model: dict[int, int] = {}
    for m, _ in asked:
        per_model[m] = per_model.get(m, 0) + 1
    score: dict[int, float] = {}
    first: dict[int, Sample] = {}
    best_weight: dict[int, float] = {}
    for m, k in asked:
        sample = table.samples[q][m][k]
        if sample.answer_class == NO_ANSWER:
            continue
        c = sample.answer_class
        score[c] = score.get(c, 0.0) + float(weights[m]) / per_model[m]
        first.setdefault(c, sample)
        best_weight[c] = max(best_weight.get(c, -np.inf), float(weights[m]))
    if not score:
        return table.samples[q][asked[0][0]][asked[0][1]] if asked else None
    top = max(score.values())
    tied = [c for c in score if score[c] >= top - 1e-12]
    winner = max(tied, key=lambda c: best_weight[c])
    return first[winner]


def unanimous(table: OutcomeTable, q: int, asked: Asked) -> bool:
    classes = {table.samples[q][m][k].answer_class for m, k in asked}
    return len(classes) == 1 and NO_ANSWER not in classes


def plurality_share(table: OutcomeTable, q: int, asked: Asked) -> float:
    """The fraction of the asked samples in the most common answer class (no answer counts as
    its own disagreeing vote)."""
    classes = [table.samples[q][m][k].answer_class for m, k in asked]
    answered = [c for c in classes if c != NO_ANSWER]
    if not answered:
        return 0.0
    return max(answered.count(c) for c in set(answered)) / len(classes)


def train_accuracy(table: OutcomeTable) -> np.ndarray:
    """Each model's first-sample accuracy on the train split (the weighted vote's weights)."""
    train = table.indices("train")
    accuracy: np.ndarray = table.first_correct()[train].mean(axis=0)
    return accuracy


def train_cost(table: OutcomeTable) -> np.ndarray:
    train = table.indices("train")
    return np.array([table.mean_cost(m, train) for m in range(table.n_models)])
