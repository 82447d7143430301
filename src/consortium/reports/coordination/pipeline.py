"""One data set through the one recipe: its outcome table, every baseline, the learned scorer and
cascades, the TRINITY head at several λ, each selected on the train split and reported on the
test split."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consortium.core.costs import CostMeasure
from consortium.evaluation.recorded import baselines
from consortium.evaluation.recorded.cost_measure import figure_label
from consortium.evaluation.recorded.episodes import Episodes
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.runs import PolicyRun, train_accuracy, train_cost
from consortium.evaluation.recorded.scorer import (
    cascade_matching_the_vote,
    frugal_family,
    scorer_vote,
)
from consortium.evaluation.recorded.selection import (
    TOLERANCE,
    UNTOLD,
    eligible,
    select_best,
    select_cheap,
    untold,
    untold_on_cost,
)
from consortium.evaluation.recorded.transcript_text import TranscriptText
from consortium.reports.coordination.router_runs import router_runs
from consortium.reports.optimizers import optimizer_table
from consortium.train.trinity.recorded_turns import Budget, run_head, train_head

LAMBDAS = (0.0, 0.05, 0.2, 0.5)
"""λ in units of the best single model's mean cost per question (train split)."""
READING = "TRINITY replay + transcript text, sep-CMA-ES, λ=0"
"""The ablation: the λ=0 head that also reads the transcript's text feature (transcript_text)."""
SUBMIT_ROW = "TRINITY replay + submit, sep-CMA-ES"
"""The ablation of the stop rule: the head may also submit the current answer at any turn."""
SUBMIT_LAMBDAS = (0.0, 0.5)
TRINITY_DECLARED = (
    "TRINITY rows: the decision function a live `--kind trinity` policy folder runs "
    "(consortium.coord.answers.trinity_turns), played on the records; stop rule: a Verifier's "
    "ACCEPT or 5 turns. A model may be asked as many times as its most-sampled question "
    "recorded; an ask past the question's last recorded sample fails as the replay server "
    "answers it (not charged, no turn; the head decides again without that model), so the head "
    f"never knows in advance which models recorded the question. The ablation rows '{SUBMIT_ROW}' "
    "differ in one thing: the head may also submit the current answer at any turn, after one "
    "call included."
)


@dataclass
class DatasetResult:
    table: OutcomeTable
    best_single: int
    cost_unit: float
    runs: list[PolicyRun] = field(default_factory=list)
    frontier: list[PolicyRun] = field(default_factory=list)
    """Every family member (train-selected or not), for the plot only."""
    optimizers: list[dict[str, Any]] = field(default_factory=list)
    measure: CostMeasure = "usd"
    """What every cost figure is in: USD, tokens or seconds (`cost_measure`)."""
    singles_untold: bool = False
    """Every single model ties on train accuracy: `best_single` is the one the tie rule keeps
    (`selection.choose`: the cheapest, then the name), a reference only."""
    notes: list[str] = field(default_factory=list)
    """Families left out and selections the train split cannot make, one line each, with why."""


Log = Callable[[str], None]


def run_dataset(
    table: OutcomeTable,
    budget: Budget,
    lambdas: tuple[float, ...] = LAMBDAS,
    seed: int = 0,
    log: Log | None = None,
    optimizer_seeds: tuple[int, ...] = (),
    question_features: np.ndarray | None = None,
    text: TranscriptText | None = None,
    measure: CostMeasure = "usd",
) -> DatasetResult:
    """`table`'s costs are in `measure` (`cost_measure.in_measure`); it labels them."""
    best = baselines.best_single(table)
    cost_unit = float(train_cost(table)[best]) or 1.0
    result = DatasetResult(table, best, cost_unit, measure=measure)
    progress = log or (lambda _: None)

    def say(line: str, note: bool = False) -> None:
        progress(line)
        if note:
            result.notes.append(line)

    vote = _baselines(result, question_features, say)
    _families(result, say)
    _scorer_rows(result, vote, say)
    episodes = _trinity_rows(result, lambdas, budget, seed, text, say)
    result.runs.append(baselines.oracle(table))
    if optimizer_seeds:
        result.optimizers = optimizer_table(episodes, cost_unit, budget, optimizer_seeds)
        say("optimizer table done")
    return result


Say = Callable[..., None]
"""A progress line; `note=True` keeps it among the result's notes."""


def _baselines(result: DatasetResult, question_features: np.ndarray | None, say: Say) -> PolicyRun:
    """The single models, self-consistency, the votes, ModelSwitch and the routers; the
    weighted vote (the learned scorer's cascades are measured against it)."""
    table, best, cost_unit = result.table, result.best_single, result.cost_unit
    train, accuracy = table.indices("train"), train_accuracy(table)
    runs = result.runs
    runs += [baselines.single(table, m) for m in range(table.n_models)]
    result.singles_untold = untold(runs, train, 0.0, cost_unit)
    if result.singles_untold:
        say(
            f"{UNTOLD}: the {table.n_models} single models ({', '.join(table.models)}) all "
            f"score {100 * accuracy[best]:.2f} % on train; {table.models[best]}, the cheapest "
            "(then the first by name), stands as the reference best single, not a winner",
            note=True,
        )
    runs += [r for m in range(table.n_models) if (r := baselines.self_consistency(table, m))]
    runs += [baselines.majority_top(table, k) for k in (3, 5) if k <= table.n_models]
    vote = baselines.weighted_vote(table)
    runs.append(vote)
    runs.append(baselines.model_switch(table))
    if question_features is not None:
        runs += router_runs(table, question_features)
    say("baselines done")
    return vote


def _families(result: DatasetResult, say: Say) -> None:
    """Each cascade and filter family: the train-selected member, and the cheapest within
    TOLERANCE of the best single model when the train split can name one."""
    table, best, cost_unit, measure = (
        result.table, result.best_single, result.cost_unit, result.measure
    )  # fmt: skip
    train, accuracy = table.indices("train"), train_accuracy(table)
    runs = result.runs
    floor = float(accuracy[best]) - TOLERANCE / 100
    families = [
        ("MoT cascade", baselines.mot_family(table)),
        ("FrugalGPT scorer cascade", frugal_family(table)),
    ]
    if table.answer_kind == "code":  # the check is a run on the docstring's own examples
        families.append(("example filter", baselines.example_filter_family(table)))
        families.append(("filter and cluster", baselines.filter_and_cluster_family(table)))
    label = figure_label(measure)
    for family_name, family in families:
        if not family:
            say(f"{family_name}: left out, {_why_empty(family_name, table, measure)}", note=True)
            continue
        result.frontier += family
        chosen = select_best(family, train, 0.0, cost_unit)
        say(f"{family_name}: {len(family)} configurations")
        if untold(family, train, 0.0, cost_unit):
            share = 100 * float(chosen.correct[train].mean())
            chosen.note = (
                f"{family_name}: {UNTOLD} (all tie on train); the simplest of the cheapest, "
                "no winner"
            )
            say(
                f"{family_name}: {UNTOLD}: its {len(family)} configurations all score "
                f"{share:.2f} % on train; the row shown, {chosen.name}, is the one the tie rule "
                "keeps (the cheapest, then the fewest calls and parameters), not a winner",
                note=True,
            )
            runs.append(chosen)
            continue
        chosen.note = f"{family_name}: train-selected for accuracy"
        runs.append(chosen)
        tied = _cost_tie(family, train, floor, label, "configurations", "the best single")
        if tied is not None:
            say(f"{family_name}: {tied}; no cheapest one is named", note=True)
            continue
        cheap = select_cheap(family, train, floor)
        if cheap is not None and cheap is not chosen:
            cheap.note = (
                f"{family_name}: the cheapest within {TOLERANCE} pts of best single (train)"
            )
            runs.append(cheap)


def _scorer_rows(result: DatasetResult, vote: PolicyRun, say: Say) -> None:
    """The learned scorer's vote and the cascade that matches the weighted vote for less."""
    table, train, label = result.table, result.table.indices("train"), figure_label(result.measure)
    runs = result.runs
    runs.append(scorer_vote(table))
    family, matching = cascade_matching_the_vote(table, vote)
    result.frontier += family
    vote_floor = float(vote.correct[train].mean()) - TOLERANCE / 100
    if matching is not None:
        tied = _cost_tie(family, train, vote_floor, label, "cascades", "the weighted vote")
        if tied is not None:
            say(
                f"learned scorer cascade: {tied}; none is named as matching the vote for less",
                note=True,
            )
            matching = None
    runs += [matching] if matching else []
    say("learned scorer cascades over every model done")


def _trinity_rows(
    result: DatasetResult,
    lambdas: tuple[float, ...],
    budget: Budget,
    seed: int,
    text: TranscriptText | None,
    say: Say,
) -> Episodes:
    """TRINITY on the replay at each λ, with the submit action, and reading the transcript's
    text; the episodes (the optimizer table plays them again)."""
    table, cost_unit, train = result.table, result.cost_unit, result.table.indices("train")
    runs = result.runs
    episodes = Episodes(table)
    for lam in lambdas:
        name = f"TRINITY replay, sep-CMA-ES, λ={lam:g}"
        runs.append(_trinity(episodes, train, lam, cost_unit, budget, seed, name))
        say(f"TRINITY λ={lam:g} trained")
    submitting = Episodes(table, stop="submit")
    for lam in (lam for lam in SUBMIT_LAMBDAS if lam in lambdas):
        name = f"{SUBMIT_ROW}, λ={lam:g}"
        runs.append(_trinity(submitting, train, lam, cost_unit, budget, seed, name))
        say(f"TRINITY with the submit action λ={lam:g} trained")
    if text is not None:
        reading = _trinity(Episodes(table, text=text), train, 0.0, cost_unit, budget, seed, READING)
        reading.params["text_dims"] = text.dims
        runs.append(reading)
        say("TRINITY λ=0 reading the transcript's text trained")
    return episodes


def _cost_tie(
    family: list[PolicyRun],
    train: np.ndarray,
    floor: float,
    label: str,
    members: str,
    reference: str,
) -> str | None:
    """Why the train split names no cheapest member within TOLERANCE of `reference` (their train
    costs all tie), or None when it can."""
    if not untold_on_cost(family, train, floor):
        return None
    close = len(eligible(family, train, floor))
    return (
        f"{UNTOLD} on cost: the {close} {members} within {TOLERANCE} pts of {reference} on "
        f"train all cost the same ({label})"
    )


def _why_empty(family_name: str, table: OutcomeTable, measure: CostMeasure) -> str:
    """Why a family has no configuration on this pool, in one clause."""
    if not family_name.startswith("MoT"):
        return f"no configuration fits this pool of {table.n_models} model(s)"
    costs = train_cost(table)
    label = figure_label(measure)
    listed = ", ".join(f"{m} {c:.6g}" for m, c in zip(table.models, costs, strict=True))
    why = (
        "no configuration fits this pool: it needs a model cheaper than one of the 3 most "
        f"accurate on train, and none is (mean {label} per question on train: {listed})"
    )
    if measure == "usd" and not costs.any():
        why += "; with prices of 0, --cost tokens or seconds tells the models apart"
    return why


def _trinity(
    episodes: Episodes,
    train: np.ndarray,
    lam: float,
    cost_unit: float,
    budget: Budget,
    seed: int,
    name: str,
) -> PolicyRun:
    weights = train_head(episodes, train, "es", lam, cost_unit, budget, seed)
    run = run_head(episodes, weights, name)
    run.params = {
        "lambda": lam,
        "optimizer": "es",
        "episodes": budget.episodes,
        "stop": episodes.head.stop,
    }
    return run
