"""What a policy did on each question: the sample it answered with, what it asked (calls, $,
tokens), and the vote it took over the answers it saw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from consortium.coord.answers.rules import Seen, weighted_plurality
from consortium.evaluation.recorded.outcomes import OutcomeTable, Sample

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
    run: PolicyRun,
    table: OutcomeTable,
    q: int,
    asked: Asked,
    answer: Sample | None,
    attempted: int | None = None,
) -> None:
    """Record question q: every asked sample is paid for, the answer decides the verdict.
    `attempted`: the calls made, when more than the samples asked (a rule that asked past a
    model's last recorded sample made that call: the replay answers it with an error, $0)."""
    run.correct[q] = bool(answer is not None and answer.correct)
    run.cost[q] = sum(table.samples[q][m][k].cost_usd for m, k in asked)
    run.tokens[q] = sum(table.samples[q][m][k].tokens for m, k in asked)
    run.calls[q] = len(asked) if attempted is None else attempted


def vote(
    table: OutcomeTable, q: int, asked: Asked, weights: Sequence[float] | np.ndarray
) -> Sample | None:
    """The weighted plurality over the asked samples' answer classes (the rules' one vote:
    `consortium.coord.answers.rules.weighted_plurality`); a representative sample of the winning
    class (the first asked), or None when nothing was asked."""
    seen = [Seen(table.models[m], k, table.samples[q][m][k].answer_class) for m, k in asked]
    named = {name: float(weights[m]) for m, name in enumerate(table.models)}
    chosen = weighted_plurality(seen, named)
    if chosen is None:
        return None
    m, k = asked[chosen]
    return table.samples[q][m][k]


def train_accuracy(table: OutcomeTable) -> np.ndarray:
    """Each model's first-sample accuracy on the train split (the weighted vote's weights)."""
    train = table.indices("train")
    accuracy: np.ndarray = table.first_correct()[train].mean(axis=0)
    return accuracy


def train_cost(table: OutcomeTable) -> np.ndarray:
    train = table.indices("train")
    return np.array([table.mean_cost(m, train) for m in range(table.n_models)])
