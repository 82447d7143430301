"""Guards against reward hacking: a change is adopted only on evidence from held-out tasks.

Both strategies are graded by the external graders on the same held-out tasks (paired). A change
is adopted when it is more accurate by more than `margin`, with a one-sided p-value below `alpha`
(exact sign test on the tasks where the two differ, or a paired bootstrap), or when it is at least
`cheaper_by` cheaper and no worse within `noninferiority`: the lower bound of the share of tasks
it wins less the upper bound of the share it loses (exact Clopper-Pearson bounds, 95 % together)
stays above `-noninferiority`. A bootstrap bound would not do there: on tasks where the two always
agree it is [0, 0] however few they are, and 32 agreeing tasks would prove a cheaper change no
worse. Caps on cost and calls per task are checked first and never traded for accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, computed_field
from scipy.stats import binomtest

from consortium.core.costs import CostMeasure, unit

Test = Literal["sign", "bootstrap"]


@dataclass(frozen=True)
class GuardConfig:
    alpha: float = 0.05
    margin: float = 0.0
    """Accuracy (fraction) a change must gain beyond, on held-out tasks."""
    test: Test = "sign"
    resamples: int = 4000
    cheaper_by: float = 0.2
    """Relative cost saving that lets an equally accurate change in."""
    noninferiority: float = 0.02
    """Accuracy a cheaper change may lose at most (`Evidence.noninferiority_low`)."""
    max_cost_per_task: float | None = None
    """Cap on the mean cost per task, in the `cost` measure's unit."""
    max_calls_per_task: float | None = None
    seed: int = 0
    cost: CostMeasure = "usd"
    """What "cost" means for the caps and for `cheaper_by`: USD, tokens or wall seconds."""


@dataclass(frozen=True)
class Measured:
    """One strategy on a list of tasks, aligned with the other strategy's list."""

    correct: np.ndarray
    cost: np.ndarray
    calls: np.ndarray

    @classmethod
    def of(cls, correct: ArrayLike, cost: ArrayLike, calls: ArrayLike) -> Measured:
        return cls(
            np.asarray(correct, dtype=float),
            np.asarray(cost, dtype=float),
            np.asarray(calls, dtype=float),
        )

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean()) if self.correct.size else 0.0

    @property
    def cost_per_task(self) -> float:
        return float(self.cost.mean()) if self.cost.size else 0.0

    @property
    def calls_per_task(self) -> float:
        return float(self.calls.mean()) if self.calls.size else 0.0


class Evidence(BaseModel):
    """The paired comparison behind a decision, as the state and the library store it."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    incumbent_accuracy: float
    candidate_accuracy: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    test: str
    wins: int
    losses: int
    incumbent_cost: float
    candidate_cost: float
    incumbent_calls: float
    candidate_calls: float
    tuning_difference: float | None = None
    noninferiority_low: float | None = None
    """The lower bound of the share of tasks won less the upper bound of the share lost
    (`losses_bound`); None in evidence stored before it was kept."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def overfit(self) -> bool:
        """Better where it was tuned, worse where it was not."""
        return (
            self.tuning_difference is not None
            and self.tuning_difference > 0
            and self.difference < 0
        )


@dataclass(frozen=True)
class Decision:
    adopted: bool
    reason: str
    evidence: Evidence


def bootstrap_differences(
    incumbent: np.ndarray, candidate: np.ndarray, resamples: int, seed: int
) -> np.ndarray:
    """Mean paired difference over `resamples` resamplings of the tasks."""
    rng = np.random.default_rng(seed)
    differences = candidate - incumbent
    picks = rng.integers(0, differences.size, size=(resamples, differences.size))
    means: np.ndarray = differences[picks].mean(axis=1)
    return means


def losses_bound(wins: int, losses: int, tasks: int) -> float:
    """A lower bound of the accuracy difference that sees losses a small sample did not show: the
    exact (Clopper-Pearson) lower bound of the share of tasks won less the exact upper bound of
    the share lost, each one-sided 97.5 %, so both hold together at least 95 % of the time. With
    no win and no loss in n tasks it is -(1 - 0.025^(1/n)): -10.9 points at 32, -1.8 at 200."""
    won = float(binomtest(wins, tasks).proportion_ci(0.95, method="exact").low)
    lost = float(binomtest(losses, tasks).proportion_ci(0.95, method="exact").high)
    return won - lost


def compare(
    incumbent: Measured,
    candidate: Measured,
    config: GuardConfig,
    tuning_difference: float | None = None,
) -> Evidence:
    if incumbent.correct.shape != candidate.correct.shape or incumbent.correct.size == 0:
        raise ValueError("paired comparison needs the same non-empty list of tasks for both")
    difference = candidate.accuracy - incumbent.accuracy
    wins = int(((candidate.correct == 1) & (incumbent.correct == 0)).sum())
    losses = int(((candidate.correct == 0) & (incumbent.correct == 1)).sum())
    boot = bootstrap_differences(
        incumbent.correct, candidate.correct, config.resamples, config.seed
    )
    if config.test == "sign":
        p_value = (
            float(binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue)
            if wins + losses
            else 1.0
        )
    else:
        p_value = float((boot <= config.margin).mean())
    return Evidence(
        tasks=int(incumbent.correct.size),
        incumbent_accuracy=incumbent.accuracy,
        candidate_accuracy=candidate.accuracy,
        difference=difference,
        ci_low=float(np.quantile(boot, 0.025)),
        ci_high=float(np.quantile(boot, 0.975)),
        p_value=p_value,
        test=config.test,
        wins=wins,
        losses=losses,
        incumbent_cost=incumbent.cost_per_task,
        candidate_cost=candidate.cost_per_task,
        incumbent_calls=incumbent.calls_per_task,
        candidate_calls=candidate.calls_per_task,
        tuning_difference=tuning_difference,
        noninferiority_low=losses_bound(wins, losses, int(incumbent.correct.size)),
    )


def judge(
    incumbent: Measured,
    candidate: Measured,
    config: GuardConfig,
    tuning_difference: float | None = None,
) -> Decision:
    """Adopt or reject `candidate` against `incumbent`, both measured on the same held-out tasks."""
    evidence = compare(incumbent, candidate, config, tuning_difference)
    cost, calls = evidence.candidate_cost, evidence.candidate_calls
    if config.max_cost_per_task is not None and cost > config.max_cost_per_task:
        return Decision(
            False,
            f"cost cap: {cost:.6g} > {config.max_cost_per_task:.6g} {unit(config.cost)}/task",
            evidence,
        )
    if config.max_calls_per_task is not None and calls > config.max_calls_per_task:
        return Decision(
            False, f"call cap: {calls:.2f} > {config.max_calls_per_task:g} calls/task", evidence
        )
    if evidence.difference > config.margin and evidence.p_value < config.alpha:
        return Decision(
            True,
            f"more accurate on held-out: {evidence.difference * 100:+.1f} points, "
            f"p = {evidence.p_value:.3g} ({config.test})",
            evidence,
        )
    cheaper = (
        evidence.incumbent_cost > 0 and cost <= (1 - config.cheaper_by) * evidence.incumbent_cost
    )
    low = evidence.noninferiority_low
    if cheaper and low is not None and low >= -config.noninferiority:
        saving = 1 - cost / evidence.incumbent_cost
        return Decision(
            True,
            f"{saving:.0%} cheaper ({unit(config.cost)}), no worse on held-out ({evidence.wins} "
            f"wins / {evidence.losses} losses in {evidence.tasks}: exact 95% bound "
            f"{low * 100:+.1f} points)",
            evidence,
        )
    if evidence.overfit:
        return Decision(
            False,
            f"helps only where tuned: {evidence.tuning_difference or 0.0:+.3f} on tuning, "
            f"{evidence.difference:+.3f} on held-out",
            evidence,
        )
    return Decision(
        False,
        f"not shown better on held-out: {evidence.difference * 100:+.1f} points, "
        f"p = {evidence.p_value:.3g}",
        evidence,
    )
