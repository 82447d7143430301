"""A FrugalGPT-style learned scorer: for each candidate answer of a question, given what was asked
so far, features of the answers (which models gave it, how many agree, whether it passed the
check) → the probability it is right (logistic regression, fitted on the train split). The
scorer picks the answer (argmax) and, in a cascade, decides whether to stop asking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.answers import scoring
from consortium.coord.answers.scored import ScorerCascade, ScorerPick
from consortium.evaluation.recorded.outcomes import OutcomeTable, Sample
from consortium.evaluation.recorded.rule_runs import run_rule, seen_of
from consortium.evaluation.recorded.runs import Asked, PolicyRun, train_cost
from consortium.evaluation.recorded.selection import TOLERANCE, select_cheap

MATCHES_THE_VOTE = f"the cheapest within {TOLERANCE} pts of the weighted vote (train)"
SCORER_VOTE = "learned answer scorer (all models, FrugalGPT features)"


def candidate_features(
    table: OutcomeTable, q: int, asked: Asked
) -> tuple[list[Sample], np.ndarray]:
    """The scorer's features of the candidate answers among the asked samples
    (`consortium.coord.answers.scoring.candidate_features`, the live rules' own), with each
    candidate's representative sample."""
    firsts, x = scoring.candidate_features(seen_of(table, q, asked), table.models)
    return [table.samples[q][asked[i][0]][asked[i][1]] for i in firsts], x


@dataclass
class Logistic:
    """L2-regularised logistic regression fitted by Newton's method (a few dozen features)."""

    weights: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 30) -> Logistic:
        w = np.zeros(x.shape[1])
        for _ in range(steps):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            gradient = x.T @ (p - y) + l2 * w
            hessian = (x.T * (p * (1 - p))) @ x + l2 * np.eye(x.shape[1])
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        return cls(w)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return scoring.probabilities(x, self.weights)


def fit_scorer(table: OutcomeTable, models: Sequence[int], questions: np.ndarray) -> Logistic:
    """Fit on the first samples of `models` over `questions` (the train split)."""
    xs, ys = [], []
    for q in questions:
        asked = [(m, 0) for m in models if table.samples[q][m]]
        found, x = candidate_features(table, q, asked)
        if found:
            xs.append(x)
            ys += [s.correct for s in found]
    if not xs:
        return Logistic(np.zeros(3 * table.n_models + 5))
    return Logistic.fit(np.vstack(xs), np.array(ys, dtype=float))


def scorer_vote(table: OutcomeTable, models: Sequence[int] | None = None) -> PolicyRun:
    """Ask every model once; the scorer picks the answer."""
    return run_rule(table, scorer_vote_rule(table, models), SCORER_VOTE, "learned")


def scorer_vote_rule(table: OutcomeTable, models: Sequence[int] | None = None) -> ScorerPick:
    chosen = list(range(table.n_models)) if models is None else list(models)
    scorer = fit_scorer(table, chosen, table.indices("train"))
    asked = tuple(table.models[m] for m in chosen)
    return ScorerPick(table.models, asked, tuple(float(w) for w in scorer.weights))


def scorer_cascade(
    table: OutcomeTable,
    order: Sequence[int],
    threshold: float,
    fitted: dict[tuple[int, ...], Logistic] | None = None,
    name: str | None = None,
) -> PolicyRun:
    """FrugalGPT cascade: ask the models in `order` one at a time; after each, the scorer fitted for
    that prefix (on the train split) scores the candidates; stop when the best scores ≥
    `threshold`. `fitted` memoises the scorers by prefix."""
    rule = scorer_cascade_rule(table, order, threshold, fitted)
    names = "→".join(table.models[m] for m in order)
    label = name or f"FrugalGPT scorer cascade [{names}, τ={threshold:.2f}]"
    run = run_rule(table, rule, label, "cascade")
    run.params = {"order": [table.models[m] for m in order], "threshold": threshold}
    return run


def scorer_cascade_rule(
    table: OutcomeTable,
    order: Sequence[int],
    threshold: float,
    fitted: dict[tuple[int, ...], Logistic] | None = None,
) -> ScorerCascade:
    train = table.indices("train")
    fitted = {} if fitted is None else fitted
    scorers = []
    for j in range(len(order)):
        prefix = tuple(order[: j + 1])
        if prefix not in fitted:
            fitted[prefix] = fit_scorer(table, prefix, train)
        scorers.append(tuple(float(w) for w in fitted[prefix].weights))
    names = tuple(table.models[m] for m in order)
    return ScorerCascade(table.models, names, threshold, tuple(scorers))


def scorer_cascade_rule_of(table: OutcomeTable, run: PolicyRun) -> ScorerCascade:
    """The rule of a `frugal_family` or `full_cascade_family` member, from its params (its
    scorers fitted again on the train split)."""
    order = [table.models.index(str(m)) for m in run.params["order"]]  # type: ignore[attr-defined]
    return scorer_cascade_rule(table, order, float(run.params["threshold"]))  # type: ignore[arg-type]


def frugal_family(table: OutcomeTable, max_models: int = 3) -> list[PolicyRun]:
    """Orders = subsets of up to `max_models` models, cheapest first; thresholds 0.5–0.99."""
    cost = train_cost(table)
    by_cost = list(np.argsort(cost, kind="stable"))
    subsets: list[list[int]] = [[]]
    for m in by_cost:
        subsets += [[*s, m] for s in subsets if len(s) < max_models]
    runs = []
    fitted: dict[tuple[int, ...], Logistic] = {}
    for order in subsets:
        if len(order) < 2:
            continue
        for threshold in (0.5, 0.8, 0.9, 0.95, 0.98, 0.99):
            runs.append(scorer_cascade(table, order, threshold, fitted))
    return runs


FULL_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 1.0)


def full_cascade_family(table: OutcomeTable) -> list[PolicyRun]:
    """Every model, cheapest first (train $), one at a time; after each, the scorer for that prefix
    stops the cascade once its best candidate scores ≥ τ. At τ = 1 it never stops: the learned
    scorer over every model. A train-split rule picks τ (the cheapest that keeps the weighted
    vote's train accuracy within the tolerance)."""
    order = [int(m) for m in np.argsort(train_cost(table), kind="stable")]
    fitted: dict[tuple[int, ...], Logistic] = {}
    return [
        scorer_cascade(
            table,
            order,
            threshold,
            fitted,
            f"learned scorer cascade [all {len(order)} models, cheapest first, τ={threshold:.2f}]",
        )
        for threshold in FULL_THRESHOLDS
    ]


def cascade_matching_the_vote(
    table: OutcomeTable, vote: PolicyRun
) -> tuple[list[PolicyRun], PolicyRun | None]:
    """The full cascade family, and its cheapest member whose train accuracy is within TOLERANCE
    of the weighted vote's (the honest bar, matched for less); None when none is."""
    train = table.indices("train")
    family = full_cascade_family(table)
    chosen = select_cheap(family, train, float(vote.correct[train].mean()) - TOLERANCE / 100)
    if chosen is not None:
        chosen.family = "learned"
        chosen.note = MATCHES_THE_VOTE
    return family, chosen
