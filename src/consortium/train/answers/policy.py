"""Fitting an answer-aware policy on a records folder's train split, into a policy folder.

The rule's parameters (weights, order, the cascade's members and threshold) come from the train
split only; its figures on both splits come from playing the same rule on the recorded samples
(`consortium.evaluation.recorded.rule_runs`), so the folder states what the live policy would
score on that pool."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.coord.answers.folder import FOLDER_SCHEMA, AnswerPolicy, Figures, FittedOn
from consortium.coord.answers.kind_names import CHECKED_KINDS, RULE_KINDS, TURN_KINDS, check_kind
from consortium.coord.answers.live import LIVE_KINDS
from consortium.coord.answers.rules import Rule, SingleAnswer
from consortium.coord.answers.trinity_turns import STOPS, TrinityTurns
from consortium.core.costs import CostMeasure
from consortium.core.errors import ConfigError
from consortium.evaluation.recorded import baselines, scorer
from consortium.evaluation.recorded.cost_measure import in_measure
from consortium.evaluation.recorded.episodes import Episodes, run_trinity
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun, train_cost
from consortium.evaluation.recorded.selection import (
    Standing,
    choose,
    parameter_count,
    standing,
    tie_text,
)
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records.schema import OUTPUTS, Manifest
from consortium.records.store import load_records
from consortium.train.trinity.recorded_turns import Budget, train_head


def fitted_part(table: OutcomeTable, fit_on: Collection[str] | None) -> OutcomeTable:
    """`table` with the questions of ids `fit_on` as its train split and the rest as its test
    split; `fit_on` None: the folder's own split."""
    if fit_on is None:
        return table
    return replace(table, is_test=~np.isin(np.array(table.question_ids), list(fit_on)))


def figures_of(run: PolicyRun, questions: np.ndarray) -> Figures:
    """A run's figures on `questions`, as a policy folder states them."""
    if len(questions) == 0:  # fitted on every question: no held-out part to state
        return Figures(questions=0, accuracy=0.0, usd_per_question=0.0, calls_per_question=0.0)
    return Figures(
        questions=len(questions),
        accuracy=round(100 * float(run.correct[questions].mean()), 4),
        usd_per_question=float(run.cost[questions].mean()),
        calls_per_question=float(run.calls[questions].mean()),
    )


def _cost_unit(table: OutcomeTable) -> float:
    """The best single model's mean cost per train question (1 when it is free): λ's unit."""
    return float(train_cost(table)[baselines.best_single(table)]) or 1.0


def _kept(
    family: list[PolicyRun], what: str, train: np.ndarray, lam: float, unit: float
) -> tuple[PolicyRun, str]:
    """The member with the best train objective (ties: `selection.choose`), and the clause that
    says its ties ("" when none; `what`: a member of the family, e.g. "MoT configuration")."""
    standings = [standing(run, train, lam, unit) for run in family]
    choice = choose(standings)
    return family[choice.kept], tie_text(standings, choice, f"{what}s", len(train))


def _best_of(
    family: list[PolicyRun],
    what: str,
    train: np.ndarray,
    lam: float,
    unit: float,
    *,
    named: bool = False,
) -> tuple[PolicyRun, str]:
    """The member with the best train objective, and how it was chosen (`named`: the clause
    ends with the member's name, which a tie's clause already gives)."""
    chosen, tied = _kept(family, what, train, lam, unit)
    said = f"the {what} with the best train objective right − λ·cost (λ={lam:g})"
    if tied:
        return chosen, f"{said}; {tied}"
    return chosen, f"{said}: {chosen.name}" if named else said


def _fit(kind: str, table: OutcomeTable, lam: float) -> tuple[Rule, str]:
    train = table.indices("train")
    unit = _cost_unit(table)
    if kind == "vote":
        return baselines.weighted_vote_rule(table), "every model, weighted by train accuracy"
    if kind == "model-switch":
        return baselines.model_switch_rule(table), "models in train-accuracy order"
    if kind == "single":
        singles = [baselines.single(table, m) for m in range(table.n_models)]
        best, tied = _kept(singles, "single model", train, lam, unit)
        said = f"the best single model on train (λ={lam:g})"
        return SingleAnswer(best.name), f"{said}; {tied}" if tied else said
    if kind == "scorer":
        return scorer.scorer_vote_rule(table), "every model, the learned scorer (train) picks"
    if kind == "scorer-cascade":
        return _scorer_cascade(table, lam, unit)
    if kind in CHECKED_KINDS:
        return _program_filter(kind, table, lam, unit)
    family = baselines.mot_family(table)
    if not family:
        raise ConfigError(
            f"{table.dataset}: no MoT cascade fits this pool (no model is cheaper than the most "
            "accurate ones; with every price 0, try --cost tokens or seconds, or declare prices)"
        )
    chosen, said = _best_of(family, "MoT configuration", train, lam, unit)
    return baselines.mot_cascade_rule_of(table, chosen), said


def _scorer_cascade(table: OutcomeTable, lam: float, unit: float) -> tuple[Rule, str]:
    """The FrugalGPT cascades (subsets of up to 3 models, cheapest first) and the cascade over
    every model, each at every τ; the best train objective wins (ties: `selection.choose`)."""
    train = table.indices("train")
    family = scorer.frugal_family(table) + scorer.full_cascade_family(table)
    chosen, said = _best_of(family, "scorer cascade", train, lam, unit, named=True)
    return scorer.scorer_cascade_rule_of(table, chosen), said


def _program_filter(kind: str, table: OutcomeTable, lam: float, unit: float) -> tuple[Rule, str]:
    """The report's family of the kind (example filter: orders of one or two of the 4 most
    accurate models × sample limits; filter and cluster: sets of the 3 most accurate × limits);
    the best train objective wins (ties: `selection.choose`)."""
    train = table.indices("train")
    if kind == "example-filter":
        family = baselines.example_filter_family(table)
    else:
        family = baselines.filter_and_cluster_family(table)
    chosen, said = _best_of(family, f"{kind} configuration", train, lam, unit, named=True)
    named = chosen.params["order" if kind == "example-filter" else "models"]
    models = [table.models.index(str(m)) for m in named]  # type: ignore[attr-defined]
    samples = int(str(chosen.params["samples"]))
    if kind == "example-filter":
        return baselines.example_filter_rule(table, models, samples), said
    return baselines.filter_and_cluster_rule(table, models, samples), said


TRINITY_BUDGET = Budget(generations=25)
"""The report's (`make coordination`: 25 generations of 16 candidates on 64 questions), so a
folder trained at a λ and stop is the head of the report's row at that λ and stop."""


def _fit_trinity(
    table: OutcomeTable, lam: float, stop: str, budget: Budget
) -> tuple[TrinityTurns, str]:
    """The head trained with sep-CMA-ES on the train split, reward right − λ·cost, as the
    report's TRINITY rows (seed 0)."""
    episodes = Episodes(table, stop=stop)
    weights = train_head(
        episodes, table.indices("train"), "es", lam, _cost_unit(table), budget, seed=0
    )
    said = (
        f"sep-CMA-ES on the train split ({budget.episodes} episodes), reward right − λ·cost "
        f"(λ={lam:g}), stop={stop}"
    )
    return episodes.rule(weights), said


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class FittedPolicy:
    policy: AnswerPolicy
    train: Standing
    """Its train accuracy, calls and parameters, and its train cost in the selection's measure
    (the policy's figures are in dollars): what `--kind auto`'s tie rule reads."""


def _check_options(kind: str, stop: str, lam: float) -> None:
    check_kind(kind, (*RULE_KINDS, *TURN_KINDS))
    if stop not in STOPS:
        raise ConfigError(f"--stop: expected one of {', '.join(STOPS)}, got {stop!r}")
    if stop != "accept" and kind not in TURN_KINDS:
        raise ConfigError(f"--stop applies to --kind trinity only, not {kind}")
    if lam < 0:
        raise ConfigError(f"--lam must be >= 0, got {lam}")


def _check_records(kind: str, records_folder: Path, manifest: Manifest) -> None:
    if manifest.answer_kind not in LIVE_KINDS:
        raise ConfigError(
            f"{records_folder}: answer kind {manifest.answer_kind!r} is not served live by an "
            f"answer-aware policy (served: {', '.join(LIVE_KINDS)}); `consortium coordinate` "
            "reports it"
        )
    if kind in CHECKED_KINDS and manifest.answer_kind != "code":
        raise ConfigError(
            f"--kind {kind}: selects by each program's run on its docstring examples; "
            f"{records_folder} holds answers of kind {manifest.answer_kind!r}, not code"
        )


def fit_answer_policy(
    kind: str,
    records_folder: Path,
    *,
    lam: float = 0.0,
    created_by: str = "consortium",
    cache_dir: Path | None = None,
    cost: CostMeasure = "usd",
    stop: str = "accept",
    budget: Budget = TRINITY_BUDGET,
    fit_on: Collection[str] | None = None,
) -> FittedPolicy:
    """The policy of `kind` fitted on the folder's train split, with its train and test figures,
    and its standing on the train split in `cost` (what `--kind auto` compares). Raises
    ConfigError (one line) for an unknown kind, an answer kind not served live, or a kind that
    checks programs on records that hold none. For code, `cache_dir` keeps the sandbox checks
    (the report's cache: `consortium coordinate --cache`). `cost` is what the selection's cost is
    measured in (the figures stay in dollars). `stop` and `budget`: the trinity kind's stop rule
    and training budget. `fit_on`: the ids of the questions fitted on, instead of the train split
    (cross-fitting); the folder's `train` and `test` figures are then on those and on the rest."""
    _check_options(kind, stop, lam)
    records = load_records(records_folder)
    manifest = records.manifest
    _check_records(kind, records_folder, manifest)
    table = fitted_part(outcome_table(records, cache_dir), fit_on)
    measured = in_measure(table, records, cost)
    params: dict[str, object]
    if kind in TURN_KINDS:
        head, selection = _fit_trinity(measured, lam, stop, budget)
        runs = [run_trinity(Episodes(t, stop=stop), head, kind) for t in _tables(table, measured)]
        params = {**head.params(), "verifier": "re-solve"}
        asks = head.asks()
    else:
        rule, selection = _fit(kind, measured, lam)
        runs = [run_rule(t, rule, kind) for t in _tables(table, measured)]
        params, asks = rule.params(), rule.asks()
    if cost != "usd":
        selection += f" (cost in {cost})"
    models = [m for m in table.models if m in asks]
    train = table.indices("train")
    policy = AnswerPolicy(
        schema_version=FOLDER_SCHEMA,
        kind=kind,
        name=f"{kind}:{manifest.dataset}",
        answer_kind=manifest.answer_kind,
        models=models,
        params=params,
        prices={m: manifest.prices[m] for m in models if m in manifest.prices},
        train=figures_of(runs[0], train),
        test=figures_of(runs[0], table.indices("test")),
        records=[
            FittedOn(
                path=str(records_folder),
                dataset=manifest.dataset,
                outputs_sha256=_sha256(records_folder / OUTPUTS),
            )
        ],
        selection=selection,
        created_by=created_by,
    )
    # the objective of `auto`'s choice is train accuracy; cost ties are told in the run's measure
    on_train = standing(runs[-1], train, 0.0, 1.0)
    return FittedPolicy(policy, replace(on_train, kind=kind, parameters=parameter_count(params)))


def _tables(table: OutcomeTable, measured: OutcomeTable) -> list[OutcomeTable]:
    """The table in dollars (the folder's figures), then in the selection's measure when that is
    another (the tie rule's cost)."""
    return [table] if measured is table else [table, measured]
