"""One guarded refit: the labelled traffic exported as records, every answer-aware kind fitted on
its train part (`train.best_kind.fit_best_kind`), the best judged against the serving policy on
the held-out part with `evolve.guards.judge` (caps first, then the sign test or the cheaper
non-inferiority), both played on the same recorded samples (`run_rule`). Blocking: the learner
runs it in a worker thread."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from consortium.coord.answers.folder import AnswerPolicy
from consortium.coord.answers.trinity_turns import TrinityTurns
from consortium.core.errors import ConsortiumError
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evolve.guards import GuardConfig, Measured, judge
from consortium.records.store import Records
from consortium.train.answers.best_kind import fit_best_kind

DECISION = "decision.json"


@dataclass(frozen=True)
class RefitOutcome:
    adopted: AnswerPolicy | None
    reason: str
    evidence: dict[str, Any]


def _measured(run: PolicyRun, questions: np.ndarray) -> Measured:
    return Measured.of(run.correct[questions], run.cost[questions], run.calls[questions])


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
    train, held_out = table.indices("train"), table.indices("test")
    if len(train) == 0 or len(held_out) == 0:
        return RefitOutcome(None, "no labelled request yet on one side of the split", base)
    try:
        candidate = fit_best_kind(
            records.folder, lam=lam, created_by="consortium serve --learn", cache_dir=checks
        )
    except ConsortiumError as error:
        return RefitOutcome(None, f"no kind fits the labelled traffic: {error}", base)
    unknown = [m for m in incumbent.models if m not in table.models]
    if unknown:
        return RefitOutcome(None, f"the serving policy asks models never sampled: {unknown}", base)
    rule = candidate.rule()
    assert not isinstance(rule, TrinityTurns)  # fit_best_kind fits rule kinds only
    theirs, ours = run_rule(table, serving, incumbent.name), run_rule(table, rule, candidate.name)
    tuning = float(ours.correct[train].mean() - theirs.correct[train].mean())
    decision = judge(_measured(theirs, held_out), _measured(ours, held_out), guard, tuning)
    evidence = {
        **base,
        "candidate": candidate.name,
        "train_questions": len(train),
        "evidence": decision.evidence.model_dump(mode="json"),
    }
    return RefitOutcome(candidate if decision.adopted else None, decision.reason, evidence)
