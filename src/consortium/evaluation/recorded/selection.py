"""Choosing a configuration from a family on the train split only, by one tie rule (`choose`),
saying when the train split cannot tell the candidates apart, and the figures a report gives for
a policy on the test split (accuracy, cost, calls, tokens; paired bootstrap intervals)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.answers.kind_names import simplicity
from consortium.evaluation.recorded.runs import PolicyRun

TOLERANCE = 0.3
"""Points of accuracy the cost target allows below the best single model."""
TIE = 1e-9
"""Two train figures tie when they differ by at most TIE times the larger (or 1): the same figure
summed in another order differs by ~1e-16, while two accuracies differing on one train question
differ by 1 / (train questions), far above it."""


UNTOLD = "train split cannot tell these policies apart"
"""How a selection whose candidates all tie on train says so (`untold`)."""
NAMES_SHOWN = 3
"""How many tied candidates a selection line names before "and N more"."""


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


@dataclass(frozen=True)
class Standing:
    """A candidate as the tie rule reads it on the train split."""

    name: str
    objective: float
    """Higher is better: right − λ·cost, or train accuracy."""
    accuracy: float
    cost: float
    """Mean per question, in the run's cost measure (dollars, tokens or seconds)."""
    calls: float
    """Mean per question."""
    parameters: int
    kind: str = ""
    """The answer-aware kind (`coord.answers.kinds.SIMPLEST_FIRST`); a family shares one."""


def parameter_count(params: object) -> int:
    """How many values a rule's params hold: each model named, weight, sample limit, τ."""
    if isinstance(params, Mapping):
        return sum(parameter_count(value) for value in params.values())
    if isinstance(params, list | tuple):
        return sum(parameter_count(value) for value in params)
    return 1


def standing(run: PolicyRun, questions: np.ndarray, lam: float, cost_unit: float) -> Standing:
    return Standing(
        run.name,
        objective(run, questions, lam, cost_unit),
        float(run.correct[questions].mean()),
        float(run.cost[questions].mean()),
        float(run.calls[questions].mean()),
        parameter_count(run.params),
        run.family,
    )


@dataclass(frozen=True)
class Choice:
    kept: int
    tied: tuple[int, ...]
    """Every candidate whose objective ties the best: the kept one, then the others in the
    rule's order (cheaper, fewer calls, …)."""
    by: tuple[str, ...]
    """What narrowed the tied ones down to the kept one, in order (none when nothing tied)."""
    candidates: int

    @property
    def untold(self) -> bool:
        """Two or more candidates, every one tied on the objective (`untold`)."""
        return self.candidates > 1 and len(self.tied) == self.candidates


SIMPLER: tuple[tuple[str, Callable[[Standing], float]], ...] = (
    ("the cheapest", lambda s: s.cost),
    ("the fewest calls a question", lambda s: s.calls),
    ("the fewest parameters", lambda s: s.parameters),
    ("the simplest kind", lambda s: simplicity(s.kind)),
)
"""The tie rule's steps after the objective, each keeping the candidates that tie its least."""


def choose(standings: Sequence[Standing]) -> Choice:
    """The tie rule of every selection on train: the best objective; among the candidates that
    tie it, the cheapest in the run's cost measure, then the fewest calls a question, the fewest
    parameters, the simplest kind (single < vote < cascades < TRINITY), the name."""
    best = max(s.objective for s in standings)
    tied = [i for i, s in enumerate(standings) if tie(s.objective, best)]
    left, by = tied, []
    for said, figure in SIMPLER:
        least = min(figure(standings[i]) for i in left)
        narrowed = [i for i in left if tie(figure(standings[i]), least)]
        if len(narrowed) < len(left):
            by.append(said)
        left = narrowed
    kept = min(left, key=lambda i: standings[i].name)
    if len(left) > 1:
        by.append("the first by name")
    # the others in the rule's order, so that the names shown first came closest to the kept one
    others = sorted(
        (i for i in tied if i != kept),
        key=lambda i: (*(figure(standings[i]) for _, figure in SIMPLER), standings[i].name),
    )
    return Choice(kept, (kept, *others), tuple(by), len(standings))


def names_text(names: Sequence[str], shown: int = NAMES_SHOWN) -> str:
    """`a, b, c and 4 more`: a few names, then how many are left."""
    listed = ", ".join(names[:shown])
    return f"{listed} and {len(names) - shown} more" if len(names) > shown else listed


def tie_text(standings: Sequence[Standing], choice: Choice, what: str, questions: int) -> str:
    """The selection's tie in one clause: which of the `what` (e.g. "configurations") tie on
    train, and why the kept one was kept; UNTOLD when every one ties. Empty when none ties."""
    if len(choice.tied) < 2:
        return ""
    tied = [standings[i] for i in choice.tied]
    accuracies = {round(100 * s.accuracy, 9) for s in tied}
    score = f" at {100 * tied[0].accuracy:.2f} %" if len(accuracies) == 1 else ""
    head = (
        f"{UNTOLD}: all {len(tied)} {what} tie on train{score} ({questions} questions)"
        if choice.untold
        else f"{len(tied)} of {choice.candidates} {what} tie on train{score}"
    )
    return (
        f"{head}: {names_text([s.name for s in tied])}; kept {tied[0].name}: "
        f"{', then '.join(choice.by)}"
    )


def select_best(
    runs: Sequence[PolicyRun], questions: np.ndarray, lam: float, cost_unit: float
) -> PolicyRun:
    """The family member with the best train objective (ties: `choose`)."""
    return runs[choose([standing(r, questions, lam, cost_unit) for r in runs]).kept]


def select_cheap(
    runs: Sequence[PolicyRun], questions: np.ndarray, floor: float
) -> PolicyRun | None:
    """The cheapest member whose train accuracy is at least `floor` (None if none is); among
    equally cheap ones, `choose` at λ = 0 (the most accurate, then the simplest)."""
    good = eligible(runs, questions, floor)
    if not good:
        return None
    least = min(float(r.cost[questions].mean()) for r in good)
    cheapest = [r for r in good if tie(float(r.cost[questions].mean()), least)]
    return select_best(cheapest, questions, 0.0, 1.0)


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
