"""The fixed-rule baselines on an outcome table: each single model, self-consistency, majority
over the k best models, the vote weighted by train accuracy, ModelSwitch's rule, the MoT-style
cascade family, the example-filter and filter-and-cluster families for programs, the oracle.
Weights and orders come from the train split only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations, permutations

import numpy as np

from consortium.coord.answers.programs import ExampleFilter, FilterAndCluster
from consortium.coord.answers.rules import MAX_SAMPLES as RULE_MAX_SAMPLES
from consortium.coord.answers.rules import ModelSwitch, MotCascade, SingleAnswer, WeightedVote
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import (
    Asked,
    PolicyRun,
    charge,
    new_run,
    train_accuracy,
    train_cost,
)
from consortium.evaluation.recorded.selection import choose, standing

MAX_SAMPLES = RULE_MAX_SAMPLES
"""Self-consistency and ModelSwitch ask a model for at most this many recorded samples."""


def _first_samples(table: OutcomeTable, q: int, models: Sequence[int]) -> Asked:
    return [(m, 0) for m in models if table.samples[q][m]]


def recorded_samples(table: OutcomeTable, models: Sequence[int]) -> dict[str, int]:
    """Per model, the most samples recorded for one question, at most MAX_SAMPLES: what a rule
    fitted on these records asks a live endpoint for (never more than the records could show)."""
    return {
        table.models[m]: max(1, min(MAX_SAMPLES, max(len(row[m]) for row in table.samples)))
        for m in models
    }


def _named(table: OutcomeTable, values: np.ndarray) -> dict[str, float]:
    return {name: float(values[m]) for m, name in enumerate(table.models)}


def single(table: OutcomeTable, m: int) -> PolicyRun:
    return run_rule(table, SingleAnswer(table.models[m]), table.models[m], "single")


def best_single(table: OutcomeTable) -> int:
    """The model the tie rule keeps among the single models on train (`selection.choose`: the
    best train accuracy; ties: the cheaper, then the name)."""
    train = table.indices("train")
    singles = [single(table, m) for m in range(table.n_models)]
    return choose([standing(run, train, 0.0, 1.0) for run in singles]).kept


def self_consistency(table: OutcomeTable, m: int) -> PolicyRun | None:
    """The majority of model m's samples (up to MAX_SAMPLES); None when it has one sample."""
    counts = [len(table.samples[q][m]) for q in range(table.n_questions)]
    if max(counts) < 2:
        return None
    name = table.models[m]
    rule = WeightedVote((name,), {name: 1.0}, MAX_SAMPLES)
    return run_rule(table, rule, f"self-consistency {name} (≤{MAX_SAMPLES})")


def weighted_vote_rule(table: OutcomeTable, models: Sequence[int] | None = None) -> WeightedVote:
    """Every model's first sample, each weighted by its train accuracy (the honest bar)."""
    chosen = range(table.n_models) if models is None else models
    names = tuple(table.models[m] for m in chosen)
    return WeightedVote(names, _named(table, train_accuracy(table)))


def weighted_vote(table: OutcomeTable, models: Sequence[int] | None = None) -> PolicyRun:
    """Every model's first sample, each weighted by its train accuracy (the honest bar)."""
    rule = weighted_vote_rule(table, models)
    return run_rule(table, rule, "weighted vote (train accuracy)", "vote")


def majority_top(table: OutcomeTable, k: int) -> PolicyRun:
    """Plain majority of the k most accurate (train) models' first samples; ties to the best."""
    accuracy = train_accuracy(table)
    top = [table.models[m] for m in np.argsort(-accuracy, kind="stable")[:k]]
    named = _named(table, accuracy)
    weights = {m: 1.0 + named[m] * 1e-6 for m in top}  # one vote each; accuracy breaks ties
    run = run_rule(table, WeightedVote(tuple(top), weights), f"majority of top {k}", "vote")
    run.params = {"models": top}
    return run


def model_switch_rule(table: OutcomeTable) -> ModelSwitch:
    """ModelSwitch's rule: ask models in train-accuracy order, each for its recorded samples (at
    most MAX_SAMPLES); stop once at least two answers are gathered and all agree; the answer is
    the majority of everything gathered (weights: train accuracy, for ties)."""
    accuracy = train_accuracy(table)
    ranked = [int(m) for m in np.argsort(-accuracy, kind="stable")]
    order = tuple(table.models[m] for m in ranked)
    return ModelSwitch(order, _named(table, accuracy), recorded_samples(table, ranked))


def model_switch(table: OutcomeTable) -> PolicyRun:
    return run_rule(table, model_switch_rule(table), "ModelSwitch rule", "cascade")


def mot_cascade(
    table: OutcomeTable, cheap: Sequence[int], strong: int, threshold: float
) -> PolicyRun:
    """MoT-style cascade: ask the cheap models (every recorded sample, at most MAX_SAMPLES each);
    when the most common answer holds at least `threshold` of them (and two or more answered),
    accept it; otherwise ask the strong model, whose answer is final (as in MoT)."""
    names = tuple(table.models[m] for m in cheap)
    rule = mot_cascade_rule(table, cheap, strong, threshold)
    title = f"MoT cascade [{'+'.join(names)} ≥{threshold:.2f} → {table.models[strong]}]"
    run = run_rule(table, rule, title, "cascade")
    run.params = {"cheap": list(names), "strong": table.models[strong], "threshold": threshold}
    return run


def mot_cascade_rule(
    table: OutcomeTable, cheap: Sequence[int], strong: int, threshold: float
) -> MotCascade:
    names = tuple(table.models[m] for m in cheap)
    weights = _named(table, train_accuracy(table))
    return MotCascade(
        names, table.models[strong], threshold, weights, recorded_samples(table, cheap)
    )


def mot_cascade_rule_of(table: OutcomeTable, run: PolicyRun) -> MotCascade:
    """The rule of a `mot_family` member, from its params."""
    cheap = [table.models.index(str(m)) for m in run.params["cheap"]]  # type: ignore[attr-defined]
    strong = table.models.index(str(run.params["strong"]))
    return mot_cascade_rule(table, cheap, strong, float(run.params["threshold"]))  # type: ignore[arg-type]


def mot_family(table: OutcomeTable) -> list[PolicyRun]:
    """Strong model: one of the 3 most accurate (train); cheap set: one or two of the 3 cheapest
    models cheaper than it; threshold 0.6 or 1.0; a train-split rule picks among them
    (consortium.evaluation.recorded.selection)."""
    cost = train_cost(table)
    accuracy = train_accuracy(table)
    runs = []
    for strong in np.argsort(-accuracy, kind="stable")[:3]:
        cheaper = [m for m in np.argsort(cost, kind="stable") if cost[m] < cost[strong]][:3]
        sets = [[m] for m in cheaper] + [
            [a, b] for i, a in enumerate(cheaper) for b in cheaper[i + 1 :]
        ]
        for cheap in sets:
            for threshold in (0.6, 1.0):
                runs.append(mot_cascade(table, cheap, int(strong), threshold))
    return runs


EXAMPLE_FILTER_SAMPLES = (1, 3, 5, 10)
"""How many recorded samples of each model the example filter may ask for."""


def example_filter_rule(table: OutcomeTable, order: Sequence[int], samples: int) -> ExampleFilter:
    return ExampleFilter(tuple(table.models[m] for m in order), samples)


def example_filter(table: OutcomeTable, order: Sequence[int], samples: int) -> PolicyRun:
    """Ask the models in `order`, each for up to `samples` recorded samples, and submit the first
    answer that passes its check (for programs: every docstring example, in the sandbox); when
    none passes, submit the first answer asked for (no further call)."""
    rule = example_filter_rule(table, order, samples)
    title = f"example filter [{'→'.join(rule.order)}, ≤{samples} each]"
    run = run_rule(table, rule, title, "cascade")
    run.params = {"order": list(rule.order), "samples": samples}
    return run


def example_filter_family(table: OutcomeTable) -> list[PolicyRun]:
    """Every order of one or two models (of the 4 most accurate on train) × each sample limit
    (limits above the most samples any model has collapse into one)."""
    top = [int(m) for m in np.argsort(-train_accuracy(table), kind="stable")[:4]]
    orders = [order for size in (1, 2) for order in permutations(top, size)]
    limits = _sample_limits(table, EXAMPLE_FILTER_SAMPLES)
    return [example_filter(table, order, k) for order in orders for k in limits]


def _sample_limits(table: OutcomeTable, wanted: Sequence[int]) -> list[int]:
    """The wanted sample limits, each clipped to the most samples any model has of a question:
    limits past it ask for the same samples, so they would repeat a configuration."""
    most = max(len(answers) for row in table.samples for answers in row)
    return sorted({min(k, most) for k in wanted})


CLUSTER_SAMPLES = (3, 5, 10)
"""How many recorded samples of each model filter-and-cluster asks for."""


def filter_and_cluster_rule(
    table: OutcomeTable, models: Sequence[int], samples: int
) -> FilterAndCluster:
    names = tuple(table.models[m] for m in models)
    accuracy = _named(table, train_accuracy(table))
    return FilterAndCluster(names, {name: accuracy[name] for name in names}, samples)


def filter_and_cluster(table: OutcomeTable, models: Sequence[int], samples: int) -> PolicyRun:
    """AlphaCode's selection: ask each model for up to `samples` recorded samples, keep the
    programs that pass their docstring examples, and submit from the largest behaviour cluster
    (agreement on the examples and the probe calls; each model's votes weighted by its train
    accuracy, as in the weighted vote). When none passes, the same vote over every program."""
    rule = filter_and_cluster_rule(table, models, samples)
    title = f"filter and cluster [{'+'.join(rule.models)}, ≤{samples} each]"
    run = run_rule(table, rule, title, "vote")
    run.params = {"models": list(rule.models), "samples": samples}
    return run


def filter_and_cluster_family(table: OutcomeTable) -> list[PolicyRun]:
    """Every set of one to three of the 3 most accurate models (train) × each sample limit (limits
    above the most samples any model has collapse into one)."""
    top = [int(m) for m in np.argsort(-train_accuracy(table), kind="stable")[:3]]
    sets = [list(chosen) for size in (1, 2, 3) for chosen in combinations(top, size)]
    limits = _sample_limits(table, CLUSTER_SAMPLES)
    return [filter_and_cluster(table, models, k) for models in sets for k in limits]


def oracle(table: OutcomeTable) -> PolicyRun:
    """Right when any model's first sample is right (cost: every first sample)."""
    run = new_run("oracle (any model's first sample right)", table, "oracle")
    correct = table.first_correct()
    for q in range(table.n_questions):
        asked = _first_samples(table, q, range(table.n_models))
        charge(run, table, q, asked, None)
        run.correct[q] = bool(correct[q].any())
    return run


def _cheapest_right(table: OutcomeTable, questions: np.ndarray) -> np.ndarray:
    """Per question, the least $ that buys a right recorded answer: one model's samples up to its
    first right one (sample k is served after samples 1..k-1); inf where none is right."""
    cheapest = np.full(len(questions), math.inf)
    for i, q in enumerate(questions):
        for samples in table.samples[q]:
            paid = 0.0
            for sample in samples:
                paid += sample.cost_usd
                if sample.correct:
                    cheapest[i] = min(cheapest[i], paid)
                    break
    return cheapest


def cost_floor(table: OutcomeTable, questions: np.ndarray, right: int) -> float | None:
    """The least mean $ per question with which any policy over these recorded answers gets
    `right` of `questions` right: an oracle that, on the questions cheapest to get right, pays
    only for the cheapest right answer and pays nothing elsewhere. A lower bound on every
    policy's cost at that accuracy; None when fewer than `right` questions have a right answer
    at all."""
    ordered = np.sort(_cheapest_right(table, questions))
    if right > len(ordered) or (right > 0 and not np.isfinite(ordered[right - 1])):
        return None
    return float(ordered[:right].sum()) / max(1, len(questions))


def ceiling(table: OutcomeTable, questions: np.ndarray) -> float:
    """The share of `questions` some recorded sample of some model answers right: no policy over
    these recorded answers scores more."""
    cheapest = _cheapest_right(table, questions)
    return float(np.isfinite(cheapest).mean()) if len(cheapest) else 0.0
