"""What the recorded outcomes a replay task carries predict a model, or the per-question best,
scores."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from consortium.evaluation.results import ORACLE
from consortium.tasks.base import Task
from consortium.tasks.recorded import P_CORRECT


def recorded_expectation(tasks: Sequence[Task]) -> dict[str, dict[str, float]]:
    """What the recorded data say each model (and the best of them) scores on `tasks`.

    Returns {recorded model id: {dataset: mean probability of a right answer}}. The oracle is the
    mean of the best probability.
    """
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for task in tasks:
        p_correct: dict[str, float] = task.meta[P_CORRECT]
        counts[task.dataset] += 1
        for model, p in p_correct.items():
            sums[model][task.dataset] += p
        sums[ORACLE][task.dataset] += max(p_correct.values())
    return {
        policy: {d: total / counts[d] for d, total in per_dataset.items()}
        for policy, per_dataset in sums.items()
    }
