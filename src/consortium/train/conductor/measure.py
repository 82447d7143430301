"""Measuring conductors on a mixed pool: accuracy, $ and calls per question per data set, beside
the best single model and the vote over all of a set's models written as workflows, and whether
the shapes of the workflows differ between data sets (chi-square statistic, permutation p).

Every figure comes from `WorkflowReward.score`, so a conductor's workflows and the baselines run
through the same executor, replay and grader.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from consortium.coord.conductor.templates import template, workflow_family
from consortium.coord.conductor.tools import WITHOUT_SCORER
from consortium.coord.conductor.workflow import WorkflowError, parse_workflow
from consortium.tasks.base import Task
from consortium.train.conductor.mixed_pool import DataSetInfo
from consortium.train.conductor.workflow_reward import Scored, step_counts

FIXED = ("moa", "debate", "reflect")
"""The fixed workflows beside the conductors (`templates`), each led by the set's best model: on
replay each answers with its last step's recorded sample (mixture-of-agents: the best model's
first; debate and self-reflection: a later sample of theirs)."""


def baseline_workflows(workers: Sequence[str], info: DataSetInfo) -> dict[str, str]:
    """The best single model, the vote over every worker and the fixed workflows, for one
    prompt's worker order."""
    roster = list(workers)
    family = workflow_family(roster)
    led = [info.best_model, *(w for w in roster if w != info.best_model)]
    return {
        "best single": family[info.best_model].to_text(roster),
        "vote (all)": family["all, vote"].to_text(roster),
    } | {kind: template(kind, led).to_text(roster) for kind in FIXED}


def parsed_shape(text: str, workers: Sequence[str]) -> tuple[int, int, int] | None:
    """A workflow's steps, distinct workers and tool steps; None when it does not parse (the
    prompt's limits: 5 steps, the tools that need no scorer)."""
    try:
        steps = parse_workflow(text, workers, max_steps=5, tools=WITHOUT_SCORER).steps
    except WorkflowError:
        return None
    return step_counts(steps)


def shape_label(scored: Scored) -> str:
    """`3 steps · 2 workers · 1 tool`; `invalid` for a workflow that did not parse."""
    if scored.shape is None:
        return "invalid"
    steps, workers, tools = scored.shape
    return f"{steps} steps · {workers} workers · {tools} tools"


@dataclass
class SetFigures:
    n: int
    valid: float
    accuracy: float
    cost: float
    calls: float
    stopped: float = 0.0
    """The share of workflows whose run stopped at a failed step (`Scored.failed`; on replay: a
    model asked for a sample its records do not hold). A workflow an `accept` ended early did
    not fail."""

    @classmethod
    def of(cls, scores: Sequence[Scored]) -> SetFigures:
        n = len(scores)
        return cls(
            n,
            sum(s.valid for s in scores) / n,
            sum(s.right for s in scores) / n,
            sum(s.cost for s in scores) / n,
            sum(s.calls for s in scores) / n,
            sum(s.failed for s in scores) / n,
        )


def figures_by_set(tasks: Sequence[Task], scores: Sequence[Scored]) -> dict[str, SetFigures]:
    grouped: dict[str, list[Scored]] = {}
    for task, scored in zip(tasks, scores, strict=True):
        grouped.setdefault(task.meta["dataset"], []).append(scored)
    return {name: SetFigures.of(found) for name, found in sorted(grouped.items())}


def paired_difference(
    mine: Sequence[bool], theirs: Sequence[bool], *, draws: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Accuracy difference (points) and its 95% bootstrap interval over paired questions."""
    n = len(mine)
    diffs = [float(a) - float(b) for a, b in zip(mine, theirs, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(draws))
    return (
        100 * sum(diffs) / n,
        100 * means[int(0.025 * draws)],
        100 * means[int(0.975 * draws) - 1],
    )


@dataclass
class ShapeTest:
    table: dict[str, dict[str, int]]
    """Per data set, how many valid workflows have each shape."""
    statistic: float | None
    p_chi2: float | None
    """scipy's chi-square p (unreliable with sparse cells; the permutation p is not)."""
    p_permutation: float | None
    note: str = ""


def shape_test(
    labels: Mapping[str, Sequence[str]], *, permutations: int = 2000, seed: int = 0
) -> ShapeTest:
    """Do the valid workflows' shapes differ between data sets? The chi-square statistic of the
    sets x shapes table, its scipy p, and the share of label permutations (data set labels
    shuffled over the workflows) with a statistic at least as large."""
    from scipy.stats import chi2_contingency

    pairs = [
        (name, label) for name, found in labels.items() for label in found if label != "invalid"
    ]
    table = {name: dict(Counter(label for n, label in pairs if n == name)) for name in labels}
    sets = sorted({name for name, _ in pairs})
    shapes = sorted({label for _, label in pairs})
    if len(sets) < 2 or len(shapes) < 2:
        return ShapeTest(table, None, None, None, "one shape or one data set: nothing to compare")

    def statistic(assigned: Sequence[tuple[str, str]]) -> float:
        counts = Counter(assigned)
        matrix = [[counts[(s, shape)] for shape in shapes] for s in sets]
        return float(chi2_contingency(matrix, correction=False)[0])

    matrix = [[table[s].get(shape, 0) for shape in shapes] for s in sets]
    observed, p_chi2 = (float(v) for v in chi2_contingency(matrix, correction=False)[:2])
    rng = random.Random(seed)
    names = [name for name, _ in pairs]
    found = [label for _, label in pairs]
    at_least = 0
    for _ in range(permutations):
        rng.shuffle(names)
        at_least += statistic(list(zip(names, found, strict=True))) >= observed - 1e-9
    return ShapeTest(table, observed, p_chi2, (at_least + 1) / (permutations + 1))


def as_json(value: Any) -> Any:
    """Dataclasses of this module as plain JSON values."""
    return json.loads(json.dumps(value, default=lambda v: v.__dict__))
