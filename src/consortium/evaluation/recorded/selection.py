"""Choosing a configuration from a family on the train split only, saying when the train split
cannot tell the candidates apart, and the figures a report gives for a policy on the test split
(accuracy, cost, calls, tokens; paired bootstrap intervals)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.evaluation.recorded.runs import PolicyRun

TOLERANCE = 0.3
"""Points of accuracy the cost target allows below the best single model."""
TIE = 1e-9
"""Two train figures tie when they differ by at most TIE times the larger (or 1): the same figure
summed in another order differs by ~1e-16, while two accuracies differing on one train question
differ by 1 / (train questions), far above it."""


def objective(run: PolicyRun, questions: np.ndarray, lam: float, cost_unit: float) -> float:
    """right − λ·cost, cost in units of the best single model's mean cost per question (train)."""
    return float(run.correct[questions].mean() - lam * run.cost[questions].mean() / cost_unit)


def tie(first: float, second: float) -> bool:
    return abs(first - second) <= TIE * max(1.0, abs(first), abs(second))


def ties(runs: Sequence[PolicyRun], questions: np.ndarray, lam: float, cost_unit: float) -> int:
    """How many runs' train objective ties the best one's (the best itself included)."""
    scores = [objective(r, questions, lam, cost_unit) for r in runs]
    return sum(tie(score, max(scores)) for score in scores)


def untold(runs: Sequence[PolicyRun], questions: np.ndarray, lam: float, cost_unit: float) -> bool:
    """The train split cannot tell the runs apart: two or more, every train objective tied."""
    return len(runs) > 1 and ties(runs, questions, lam, cost_unit) == len(runs)


def select_best(
    runs: Sequence[PolicyRun], questions: np.ndarray, lam: float, cost_unit: float
) -> PolicyRun:
    """The family member with the best train objective (ties: the cheaper)."""
    return max(
        runs,
        key=lambda r: (objective(r, questions, lam, cost_unit), -float(r.cost[questions].mean())),
    )


def select_cheap(
    runs: Sequence[PolicyRun], questions: np.ndarray, floor: float
) -> PolicyRun | None:
    """The cheapest member whose train accuracy is at least `floor` (None if none is)."""
    good = eligible(runs, questions, floor)
    return min(good, key=lambda r: float(r.cost[questions].mean())) if good else None


def eligible(runs: Sequence[PolicyRun], questions: np.ndarray, floor: float) -> list[PolicyRun]:
    """The members `select_cheap` chooses among: train accuracy at least `floor`."""
    return [r for r in runs if r.correct[questions].mean() >= floor]


def untold_on_cost(runs: Sequence[PolicyRun], questions: np.ndarray, floor: float) -> bool:
    """The train split cannot tell apart the members `select_cheap` chooses among: two or more,
    every one's train cost tied (e.g. every price 0), so "the cheapest" names none."""
    costs = [float(r.cost[questions].mean()) for r in eligible(runs, questions, floor)]
    return len(costs) > 1 and all(tie(cost, costs[0]) for cost in costs)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.mean:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"


def paired_bootstrap(
    first: np.ndarray, second: np.ndarray, resamples: int = 4000, seed: int = 0
) -> Interval:
    """The mean difference first − second in points with a 95 % percentile interval over the
    same resampled questions for both."""
    return paired_bootstrap_mean([(first, second)], resamples, seed)


def paired_bootstrap_mean(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], resamples: int = 4000, seed: int = 0
) -> Interval:
    """The mean over data sets of each set's mean difference first − second, in points, with a
    95 % percentile interval: each set's questions are resampled on their own (paired within a
    set), so every set keeps its weight of 1 / len(pairs)."""
    rng = np.random.default_rng(seed)
    point = 0.0
    means = np.zeros(resamples)
    for first, second in pairs:
        diff = first.astype(float) - second.astype(float)
        draws = rng.integers(0, len(diff), size=(resamples, len(diff)))
        point += float(diff.mean())
        means += diff[draws].mean(axis=1)
    means *= 100 / len(pairs)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(point * 100 / len(pairs), float(low), float(high))
