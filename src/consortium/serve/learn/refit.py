"""One guarded refit: the labelled traffic exported as records, and the best answer-aware kind
(`train.best_kind.fit_best_kind`) judged against the serving policy with `evolve.guards.judge`
(caps first, then the sign test or the cheaper non-inferiority), both played on the same recorded
samples (`run_rule`).

The judgement is cross-fitted: the labelled requests fall in `FOLDS` folds by a hash of the
response id; the kind chosen and fitted on the other folds plays each fold, so every labelled
request is held out from the fit that scores it and the guard sees all of them (a single split
would show it half). What is adopted is the same procedure fitted on every labelled request, its
`test` figures the cross-fitted ones. Blocking: the learner
runs it in a worker thread."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.answers.folder import AnswerPolicy, Figures
from consortium.coord.answers.rules import Rule
from consortium.coord.answers.trinity_turns import TrinityTurns
from consortium.core.errors import ConsortiumError
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evolve.guards import GuardConfig, Measured, judge
from consortium.records.split import id_hash
from consortium.records.store import Records
from consortium.train.answers.best_kind import fit_best_kind

DECISION = "decision.json"


@dataclass(frozen=True)
class RefitOutcome:
    adopted: AnswerPolicy | None
    reason: str
    evidence: dict[str, Any]


def _measured(run: PolicyRun) -> Measured:
    return Measured.of(run.correct, run.cost, run.calls)


def refit(
    records: Records, incumbent: AnswerPolicy, guard: GuardConfig, lam: float = 0.0
) -> RefitOutcome:
    """The refit on `records` (written by `export.export_labelled`); its decision is also
    written beside them (`decision.json`)."""
    outcome = _decide(records, incumbent, guard, lam)
    record = {"adopted": outcome.adopted is not None, "reason": outcome.reason, **outcome.evidence}
    (records.folder / DECISION).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return outcome


def _decide(
    records: Records, incumbent: AnswerPolicy, guard: GuardConfig, lam: float
) -> RefitOutcome:
    base = {"records": str(records.folder), "incumbent": incumbent.name}
    serving = incumbent.rule()
    if isinstance(serving, TrinityTurns):
        return RefitOutcome(None, f"{incumbent.kind}: no refit of a TRINITY head", base)
    checks = records.folder.parent  # code: the sandbox runs kept for the next refit
    table = outcome_table(records, checks)
    folds = fold_of(table.question_ids)
    if len(set(folds)) < 2:
        return RefitOutcome(None, "too few labelled requests to hold any out", base)
    unknown = [m for m in incumbent.models if m not in table.models]
    if unknown:
        return RefitOutcome(None, f"the serving policy asks models never sampled: {unknown}", base)
    try:
        played = _out_of_fold(table, folds, lambda ids: _fit(records, lam, checks, ids))
        candidate = _fit(records, lam, checks, table.question_ids)
    except ConsortiumError as error:
        return RefitOutcome(None, f"no kind fits the labelled traffic: {error}", base)
    ours, by = played
    theirs = run_rule(table, serving, incumbent.name)
    in_sample = run_rule(table, _rule(candidate), candidate.name)
    tuning = float(in_sample.correct.mean() - theirs.correct.mean())
    decision = judge(_measured(theirs), ours, guard, tuning)
    evidence = {
        **base,
        "candidate": candidate.name,
        "cross_fit": {"folds": FOLDS, "kinds": by},
        "labelled_questions": table.n_questions,
        "evidence": decision.evidence.model_dump(mode="json"),
    }
    if not decision.adopted:
        return RefitOutcome(None, decision.reason, evidence)
    return RefitOutcome(_with_cross_fit(candidate, ours), decision.reason, evidence)


FOLDS = 5
"""Cross-fitting folds: each fit sees 4/5 of the labelled traffic, so the held-out play is close to
the fit on all of it, and every labelled request is held out once."""


def fold_of(question_ids: Sequence[str]) -> np.ndarray:
    """Each labelled request's fold, from a hash of its response id (the same in every refit)."""
    return np.array([id_hash(f"fold/{q}") % FOLDS for q in question_ids])


def _fit(records: Records, lam: float, checks: Path, ids: Collection[str]) -> AnswerPolicy:
    return fit_best_kind(
        records.folder, lam=lam, created_by="consortium serve --learn", cache_dir=checks,
        fit_on=ids,
    )  # fmt: skip


def _rule(policy: AnswerPolicy) -> Rule:
    rule = policy.rule()
    assert not isinstance(rule, TrinityTurns)  # fit_best_kind fits rule kinds only
    return rule


def _out_of_fold(
    table: OutcomeTable, folds: np.ndarray, fit: Callable[[list[str]], AnswerPolicy]
) -> tuple[Measured, dict[str, int]]:
    """The candidate procedure on every labelled request, each played by the policy fitted on the
    other folds; and how many folds chose each kind."""
    correct, cost, calls = (np.zeros(table.n_questions) for _ in range(3))
    kinds: dict[str, int] = {}
    ids = np.array(table.question_ids)
    for fold in sorted(set(folds.tolist())):
        held = folds == fold
        policy = fit(ids[~held].tolist())
        run = run_rule(table, _rule(policy), policy.name)
        correct[held], cost[held], calls[held] = run.correct[held], run.cost[held], run.calls[held]
        kinds[policy.kind] = kinds.get(policy.kind, 0) + 1
    return Measured(correct, cost, calls), kinds


def _with_cross_fit(policy: AnswerPolicy, held_out: Measured) -> AnswerPolicy:
    """The policy fitted on every labelled request, its `test` figures the cross-fitted ones."""
    figures = Figures(
        questions=int(held_out.correct.size),
        accuracy=round(100 * held_out.accuracy, 4),
        usd_per_question=held_out.cost_per_task,
        calls_per_question=held_out.calls_per_task,
    )
    note = f"; test: cross-fitted ({FOLDS} folds of the labelled traffic)"
    return policy.model_copy(update={"test": figures, "selection": policy.selection + note})
