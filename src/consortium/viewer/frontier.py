"""The accuracy–cost frontier of a run: one point per policy, its 95% interval, the frontier.

Accuracy is the mean of the per-dataset accuracies (as `consortium eval` reports it). Its interval
is a normal approximation: the variance of each dataset's accuracy is taken at the Agresti–Coull
adjusted rate (right + 2) / (tasks + 4), so a dataset of all-right or all-wrong answers still has
a width. The frontier holds the policies that no other policy beats on accuracy at the same or a
lower cost.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from consortium.viewer.queries import SINGLE, DatasetStats

Z95 = 1.959964


@dataclass(frozen=True)
class Point:
    policy: str
    accuracy: float
    """Mean of the per-dataset accuracies, 0..1."""
    low: float
    high: float
    cost: float
    """USD per task."""
    tokens: float
    """Tokens per task."""
    calls: float
    """Calls per task."""
    tasks: int

    @property
    def single(self) -> bool:
        return self.policy.startswith(SINGLE)

    def x(self, axis: str) -> float:
        return self.cost if axis == "cost" else self.tokens


def points(stats: Sequence[DatasetStats]) -> list[Point]:
    by_policy: dict[str, list[DatasetStats]] = defaultdict(list)
    for row in stats:
        by_policy[row.policy].append(row)
    found = []
    for policy, rows in by_policy.items():
        datasets = [r for r in rows if r.tasks]
        if not datasets:
            continue
        mean = sum(r.accuracy for r in datasets) / len(datasets)
        variance = 0.0
        for r in datasets:
            adjusted = (r.correct + 2) / (r.tasks + 4)
            variance += adjusted * (1 - adjusted) / (r.tasks + 4)
        half = Z95 * math.sqrt(variance) / len(datasets)
        tasks = sum(r.tasks for r in datasets)
        found.append(
            Point(
                policy,
                mean,
                max(0.0, mean - half),
                min(1.0, mean + half),
                sum(r.cost for r in datasets) / tasks,
                sum(r.tokens for r in datasets) / tasks,
                sum(r.calls for r in datasets) / tasks,
                tasks,
            )
        )
    return found


def axis_of(found: Sequence[Point]) -> str:
    """`cost` ($ per task), or `tokens` per task when every policy of the run cost nothing (a
    pool priced at zero, e.g. local llama.cpp or a replay pool without prices)."""
    return "cost" if any(p.cost > 0 for p in found) else "tokens"


def frontier(found: Sequence[Point], axis: str) -> list[Point]:
    """The policies no other beats: by rising x, each more accurate than all cheaper ones."""
    best: list[Point] = []
    for point in sorted(found, key=lambda p: (p.x(axis), -p.accuracy)):
        if not best or point.accuracy > best[-1].accuracy:
            best.append(point)
    return best
