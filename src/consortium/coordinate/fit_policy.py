"""Fitting an answer-aware policy on a records folder's train split, into a policy folder.

The rule's parameters (weights, order, the cascade's members and threshold) come from the train
split only; its figures on both splits come from playing the same rule on the recorded samples
(`consortium.coordinate.rule_runs`), so the folder states what the live policy would score on
that pool."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from consortium.coord.answers.folder import FOLDER_SCHEMA, AnswerPolicy, Figures, FittedOn
from consortium.coord.answers.kinds import RULE_KINDS
from consortium.coord.answers.live import LIVE_KINDS
from consortium.coord.answers.rules import Rule, SingleAnswer
from consortium.coordinate import baselines, scorer
from consortium.coordinate.outcomes import OutcomeTable
from consortium.coordinate.rule_runs import run_rule
from consortium.coordinate.runs import PolicyRun, train_accuracy, train_cost
from consortium.coordinate.selection import objective, select_best
from consortium.coordinate.tables import outcome_table
from consortium.core.errors import ConfigError
from consortium.records.schema import OUTPUTS
from consortium.records.store import load_records


def _figures(run: PolicyRun, questions: np.ndarray) -> Figures:
    return Figures(
        questions=len(questions),
        accuracy=round(100 * float(run.correct[questions].mean()), 4),
        usd_per_question=float(run.cost[questions].mean()),
        calls_per_question=float(run.calls[questions].mean()),
    )


def _ties(runs: list[PolicyRun], train: np.ndarray, lam: float, unit: float) -> int:
    scores = [round(objective(r, train, lam, unit), 12) for r in runs]
    return scores.count(max(scores))


def _fit(kind: str, table: OutcomeTable, lam: float) -> tuple[Rule, str]:
    train = table.indices("train")
    accuracy = train_accuracy(table)
    unit = float(train_cost(table)[int(np.argmax(accuracy))]) or 1.0
    if kind == "vote":
        return baselines.weighted_vote_rule(table), "every model, weighted by train accuracy"
    if kind == "model-switch":
        return baselines.model_switch_rule(table), "models in train-accuracy order"
    if kind == "single":
        singles = [baselines.single(table, m) for m in range(table.n_models)]
        best = select_best(singles, train, lam, unit)
        tied = _ties(singles, train, lam, unit)
        said = f"the best single model on train (λ={lam:g})"
        if tied > 1:
            said += f"; {tied} models tie on train, the cheapest was kept"
        return SingleAnswer(best.name), said
    if kind == "scorer":
        return scorer.scorer_vote_rule(table), "every model, the learned scorer (train) picks"
    if kind == "scorer-cascade":
        return _scorer_cascade(table, lam, unit)
    family = baselines.mot_family(table)
    if not family:
        raise ConfigError(
            f"{table.dataset}: no MoT cascade fits this pool (no model is cheaper than the most "
            "accurate ones; with every price 0, declare prices or record costs)"
        )
    chosen = select_best(family, train, lam, unit)
    tied = _ties(family, train, lam, unit)
    said = f"the MoT configuration with the best train objective right − λ·cost (λ={lam:g})"
    if tied > 1:
        said += f"; {tied} of {len(family)} configurations tie on train, the cheapest was kept"
    params = chosen.params
    cheap = [table.models.index(str(m)) for m in params["cheap"]]  # type: ignore[attr-defined]
    strong = table.models.index(str(params["strong"]))
    return baselines.mot_cascade_rule(table, cheap, strong, float(params["threshold"])), said  # type: ignore[arg-type]


def _scorer_cascade(table: OutcomeTable, lam: float, unit: float) -> tuple[Rule, str]:
    """The FrugalGPT cascades (subsets of up to 3 models, cheapest first) and the cascade over
    every model, each at every τ; the best train objective wins (ties: the cheaper)."""
    train = table.indices("train")
    family = scorer.frugal_family(table) + scorer.full_cascade_family(table)
    chosen = select_best(family, train, lam, unit)
    tied = _ties(family, train, lam, unit)
    said = f"the scorer cascade with the best train objective right − λ·cost (λ={lam:g})"
    if tied > 1:
        said += f"; {tied} of {len(family)} configurations tie on train, the cheapest was kept"
    order = [table.models.index(str(m)) for m in chosen.params["order"]]  # type: ignore[attr-defined]
    threshold = float(chosen.params["threshold"])  # type: ignore[arg-type]
    return scorer.scorer_cascade_rule(table, order, threshold), f"{said}: {chosen.name}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fit_answer_policy(
    kind: str, records_folder: Path, *, lam: float = 0.0, created_by: str = "consortium"
) -> AnswerPolicy:
    """The policy of `kind` fitted on the folder's train split, with its train and test figures.
    Raises ConfigError (one line) for an unknown kind or an answer kind not served live."""
    if kind not in RULE_KINDS:
        raise ConfigError(f"--kind: expected one of {', '.join(RULE_KINDS)}, got {kind!r}")
    if lam < 0:
        raise ConfigError(f"--lam must be >= 0, got {lam}")
    records = load_records(records_folder)
    manifest = records.manifest
    if manifest.answer_kind not in LIVE_KINDS:
        raise ConfigError(
            f"{records_folder}: answer kind {manifest.answer_kind!r} is not served live by an "
            f"answer-aware policy (served: {', '.join(LIVE_KINDS)}); `consortium coordinate` "
            "reports it"
        )
    table = outcome_table(records)
    rule, selection = _fit(kind, table, lam)
    run = run_rule(table, rule, kind)
    models = [m for m in table.models if m in rule.asks()]
    name = f"{kind}:{manifest.dataset}"
    return AnswerPolicy(
        schema_version=FOLDER_SCHEMA,
        kind=rule.kind,
        name=name,
        answer_kind=manifest.answer_kind,
        models=models,
        params=rule.params(),
        prices={m: manifest.prices[m] for m in models if m in manifest.prices},
        train=_figures(run, table.indices("train")),
        test=_figures(run, table.indices("test")),
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
