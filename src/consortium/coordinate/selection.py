"""Choosing a configuration from a family on the train split only, and the figures a report
gives for a policy on the test split (accuracy, $, calls, tokens; paired bootstrap intervals)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coordinate.runs import PolicyRun

TOLERANCE = 0.3
"""Points of accuracy the cost target allows below the best single model."""


def objective(run: PolicyRun, questions: np.ndarray, lam: float, cost_unit: float) -> float:
    """right − λ·cost, cost in units of the best single model's mean $ per question (train)."""
    return float(run.correct[questions].mean() - lam * run.cost[questions].mean() / cost_unit)


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
    good = [r for r in runs if r.correct[questions].mean() >= floor]
    return min(good, key=lambda r: float(r.cost[questions].mean())) if good else None


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
