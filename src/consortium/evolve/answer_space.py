"""The declared space of answer-aware policies evolve searches, played on the live tuning samples
(`answer_samples`), and the pick of each kind at each cost weight λ.

Models are ranked by their first sample's accuracy on the cluster's tuning tasks (ties: the
cheaper first); votes are weighted by that accuracy.
- vote: the top k models (k in VOTE_SIZES), each asked for s samples (1 … as many as all of them
  answered on tuning).
- model-switch: the top k models (k in SWITCH_SIZES, and all of them) in accuracy order, each for
  up to s samples.
- mot-cascade: `evaluation.recorded.baselines.mot_family` (strong: one of the 3 most accurate;
  cheap: one or two of the 3 cheapest models cheaper than it; τ 0.6 or 1.0).
- scorer-cascade: `evaluation.recorded.scorer.frugal_family` and `full_cascade_family` (orders
  cheapest first, τ on their grids), the scorers fitted on the tuning tasks.
- τ move: when the cluster's policy is already a scorer- or MoT cascade folder, the same rule with
  its τ moved one step down or up on TAU_GRID.
Each kind's pick at λ maximises tuning accuracy − λ · cost / (the most accurate model's cost),
among the members within the run's caps on the tuning tasks (ties: `selection.choose`, the
cheaper in the run's cost measure, then the fewest calls and parameters)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.answers.folder import AnswerPolicy, is_answer_policy, read_policy
from consortium.coord.answers.kinds import renamed, rule_from
from consortium.coord.answers.rules import MAX_SAMPLES, ModelSwitch, Rule, WeightedVote
from consortium.evaluation.recorded import baselines, scorer
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun, train_accuracy, train_cost
from consortium.evaluation.recorded.selection import objective, select_best

LAMBDAS = (0.0, 0.1)
"""Cost weights: 0 for the most accurate; 0.1 for one that gives up 10 points of tuning accuracy
per (the most accurate model's cost per task) it saves."""
VOTE_SIZES = (3, 5)
SWITCH_SIZES = (2, 3)
TAU_GRID = scorer.FULL_THRESHOLDS
TAU_KINDS = ("scorer-cascade", "mot-cascade")


@dataclass(frozen=True)
class Member:
    """One configuration of a kind, played on the tuning samples."""

    kind: str
    run: PolicyRun
    rule: Callable[[], Rule]
    """Builds the rule (the learned families fit their scorers only for the member picked)."""


@dataclass(frozen=True)
class Pick:
    kind: str
    lam: float
    rule: Rule
    run: PolicyRun
    gain: float
    """Its tuning objective minus the incumbent's, at `lam`."""


@dataclass(frozen=True)
class Caps:
    calls: float | None = None
    cost: float | None = None
    """Mean cost per task, in the run's cost measure."""

    def allow(self, run: PolicyRun) -> bool:
        if self.calls is not None and run.calls.max(initial=0) > self.calls:
            return False
        return self.cost is None or float(run.cost.mean()) <= self.cost


def ranked(table: OutcomeTable) -> list[int]:
    """Model indices by tuning accuracy, then cheaper first."""
    accuracy, cost = train_accuracy(table), train_cost(table)
    return sorted(range(table.n_models), key=lambda m: (-accuracy[m], cost[m], m))


def _sizes(wanted: Sequence[int], n: int) -> list[int]:
    return sorted({min(k, n) for k in wanted if min(k, n) >= 2})


def _member(kind: str, table: OutcomeTable, rule: Rule, title: str) -> Member:
    run = run_rule(table, rule, title, kind)
    run.params = rule.params()  # the tie rule counts them (`selection.choose`)
    return Member(kind, run, lambda: rule)


def votes(table: OutcomeTable) -> list[Member]:
    order, weights = ranked(table), _weights(table)
    gathered = baselines.recorded_samples(table, range(table.n_models))
    members = []
    for k in _sizes(VOTE_SIZES, table.n_models):
        names = tuple(table.models[m] for m in order[:k])
        for samples in range(1, min(gathered[name] for name in names) + 1):
            rule = WeightedVote(names, {n: weights[n] for n in names}, samples)
            members.append(_member("vote", table, rule, f"vote {'+'.join(names)} ×{samples}"))
    return members


def switches(table: OutcomeTable) -> list[Member]:
    order, weights = ranked(table), _weights(table)
    gathered = baselines.recorded_samples(table, range(table.n_models))
    members = []
    for k in _sizes((*SWITCH_SIZES, table.n_models), table.n_models):
        names = tuple(table.models[m] for m in order[:k])
        for samples in range(1, max(gathered[name] for name in names) + 1):
            limits = {name: min(samples, gathered[name]) for name in names}
            rule = ModelSwitch(names, {n: weights[n] for n in names}, limits)
            title = f"model-switch {'→'.join(names)} ≤{samples}"
            members.append(_member("model-switch", table, rule, title))
    return members


def mot_cascades(table: OutcomeTable) -> list[Member]:
    return [
        Member("mot-cascade", run, partial(baselines.mot_cascade_rule_of, table, run))
        for run in baselines.mot_family(table)
    ]


def scorer_cascades(table: OutcomeTable) -> list[Member]:
    family = scorer.frugal_family(table) + scorer.full_cascade_family(table)
    return [
        Member("scorer-cascade", run, partial(scorer.scorer_cascade_rule_of, table, run))
        for run in family
    ]


def tau_moves(table: OutcomeTable, folder: str, names: dict[str, str]) -> list[Member]:
    """The folder's cascade with τ one step down and one step up TAU_GRID (its models renamed
    to the pool's by `names`); none when it is no cascade or asks a model the pool lacks."""
    policy = answer_policy_in(folder)
    if policy is None or policy.kind not in TAU_KINDS:
        return []
    params = renamed(policy.params, names)
    if not set(rule_from(policy.kind, params).asks()) <= set(table.models):
        return []
    now = float(params["threshold"])
    below = [t for t in TAU_GRID if t < now - 1e-9]
    above = [t for t in TAU_GRID if t > now + 1e-9]
    moves = ([below[-1]] if below else []) + ([above[0]] if above else [])
    return [
        _member(
            "τ move",
            table,
            rule_from(policy.kind, {**params, "threshold": tau}),
            f"{policy.kind} τ {now:g} → {tau:g}",
        )
        for tau in moves
    ]


def answer_policy_in(spec: str) -> AnswerPolicy | None:
    """The answer-aware policy a policy spec names (a folder), or None."""
    return read_policy(Path(spec)) if is_answer_policy(Path(spec)) else None


def most_samples(params: Mapping[str, Any]) -> int:
    """The most samples of one model a rule with these params asks (at most MAX_SAMPLES)."""
    given = params.get("samples", 1)
    counts = [int(c) for c in given.values()] if isinstance(given, dict) else [int(given)]
    return max(1, min(MAX_SAMPLES, max(counts, default=1)))


def _weights(table: OutcomeTable) -> dict[str, float]:
    accuracy = train_accuracy(table)
    return {name: float(accuracy[m]) for m, name in enumerate(table.models)}


def cost_unit(table: OutcomeTable) -> float:
    """The most accurate model's mean cost per tuning task (1 when it is free)."""
    return float(train_cost(table)[ranked(table)[0]]) or 1.0


def picks(
    families: dict[str, list[Member]],
    table: OutcomeTable,
    incumbent: tuple[float, float],
    caps: Caps,
) -> list[Pick]:
    """Per kind and λ, the member with the best tuning objective within the caps, where it beats
    the incumbent's (accuracy, cost per task) on the same tuning tasks at that λ."""
    questions = np.arange(table.n_questions)
    unit = cost_unit(table)
    found = []
    for kind, family in families.items():
        allowed = [m for m in family if caps.allow(m.run)]
        if not allowed:
            continue
        for lam in LAMBDAS:
            best_run = select_best([m.run for m in allowed], questions, lam, unit)
            best = next(m for m in allowed if m.run is best_run)
            gain = objective(best_run, questions, lam, unit) - (
                incumbent[0] - lam * incumbent[1] / unit
            )
            if gain > 1e-9:
                found.append(Pick(kind, lam, best.rule(), best_run, gain))
    return found
