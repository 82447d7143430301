"""One data set through the one recipe: its outcome table, every baseline, the learned scorer and
cascades, the TRINITY head at several λ, each selected on the train split and reported on the
test split."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consortium.coordinate import baselines
from consortium.coordinate.episodes import Episodes
from consortium.coordinate.optimizer_table import optimizer_table
from consortium.coordinate.outcomes import OutcomeTable
from consortium.coordinate.routers import router_runs
from consortium.coordinate.runs import PolicyRun, train_accuracy, train_cost
from consortium.coordinate.scorer import cascade_matching_the_vote, frugal_family, scorer_vote
from consortium.coordinate.selection import TOLERANCE, select_best, select_cheap
from consortium.coordinate.training import Budget, run_head, train_head
from consortium.coordinate.transcript_text import TranscriptText

LAMBDAS = (0.0, 0.05, 0.2, 0.5)
"""λ in units of the best single model's mean $ per question (train split)."""
READING = "TRINITY replay + transcript text, sep-CMA-ES, λ=0"
"""The ablation: the λ=0 head that also reads the transcript's text feature (transcript_text)."""


@dataclass
class DatasetResult:
    table: OutcomeTable
    best_single: int
    cost_unit: float
    runs: list[PolicyRun] = field(default_factory=list)
    frontier: list[PolicyRun] = field(default_factory=list)
    """Every family member (train-selected or not), for the plot only."""
    optimizers: list[dict[str, Any]] = field(default_factory=list)


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
) -> DatasetResult:
    say = log or (lambda _: None)
    train = table.indices("train")
    accuracy = train_accuracy(table)
    best = int(np.argmax(accuracy))
    cost_unit = float(train_cost(table)[best]) or 1.0
    result = DatasetResult(table, best, cost_unit)
    runs = result.runs
    runs += [baselines.single(table, m) for m in range(table.n_models)]
    runs += [r for m in range(table.n_models) if (r := baselines.self_consistency(table, m))]
    runs += [baselines.majority_top(table, k) for k in (3, 5) if k <= table.n_models]
    vote = baselines.weighted_vote(table)
    runs.append(vote)
    runs.append(baselines.model_switch(table))
    if question_features is not None:
        runs += router_runs(table, question_features)
    say("baselines done")
    floor = float(accuracy[best]) - TOLERANCE / 100
    families = [
        ("MoT cascade", baselines.mot_family(table)),
        ("FrugalGPT scorer cascade", frugal_family(table)),
    ]
    if table.answer_kind == "code":  # the check is a run on the docstring's own examples
        families.append(("example filter", baselines.example_filter_family(table)))
        families.append(("filter and cluster", baselines.filter_and_cluster_family(table)))
    for family_name, family in families:
        if not family:  # e.g. a cascade with no cheaper model: every price 0
            say(f"{family_name}: no configuration fits this pool (no cheaper model); skipped")
            continue
        result.frontier += family
        chosen = select_best(family, train, 0.0, cost_unit)
        chosen.note = f"{family_name}: train-selected for accuracy"
        runs.append(chosen)
        cheap = select_cheap(family, train, floor)
        if cheap is not None and cheap is not chosen:
            cheap.note = (
                f"{family_name}: the cheapest within {TOLERANCE} pts of best single (train)"
            )
            runs.append(cheap)
        say(f"{family_name}: {len(family)} configurations")
    runs.append(scorer_vote(table))
    family, matching = cascade_matching_the_vote(table, vote)
    result.frontier += family
    runs += [matching] if matching else []
    say("learned scorer cascades over every model done")
    episodes = Episodes(table)
    for lam in lambdas:
        name = f"TRINITY replay, sep-CMA-ES, λ={lam:g}"
        runs.append(_trinity(episodes, train, lam, cost_unit, budget, seed, name))
        say(f"TRINITY λ={lam:g} trained")
    if text is not None:
        reading = _trinity(Episodes(table, text=text), train, 0.0, cost_unit, budget, seed, READING)
        reading.params["text_dims"] = text.dims
        runs.append(reading)
        say("TRINITY λ=0 reading the transcript's text trained")
    runs.append(baselines.oracle(table))
    if optimizer_seeds:
        result.optimizers = optimizer_table(episodes, cost_unit, budget, optimizer_seeds)
        say("optimizer table done")
    return result


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
    run.params = {"lambda": lam, "optimizer": "es", "episodes": budget.episodes}
    return run
