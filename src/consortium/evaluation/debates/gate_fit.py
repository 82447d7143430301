"""Fitting the rule of when to talk (`coord.debate.gate.TalkGate`) on the train split of a
recorded debate's disputed questions: a logistic regression of "debating on ends right where the
stronger model's first answer does not" on the questions where the two differ, then the
threshold that makes the most train questions right, ties to the higher (fewer calls); kept
only when its 5-fold cross-validated train accuracy beats never and always talking, else the
rule is the better of those. Nothing of the test split is read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.coord.answers.scoring import probabilities
from consortium.coord.debate.gate import TalkGate, gate_features
from consortium.coord.debate.rule import DebateRule
from consortium.evaluation.debates.play import Debated, debated_questions
from consortium.evaluation.debates.policies import (
    disputed,
    first_turns,
    measure,
    stronger_on_train,
)
from consortium.evaluation.recorded.scorer import Logistic
from consortium.records.errors import RecordsError
from consortium.records.schema import AnswerKind

THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
NEVER, ALWAYS = 1.01, -1.0
"""Thresholds that make the rule a constant: p is never above 1.01, always above -1."""
FOLDS = 5


@dataclass(frozen=True)
class Fitted:
    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    threshold: float

    def talks(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / self.scale
        return np.asarray(probabilities(z, self.weights) > self.threshold)


def _fit(x: np.ndarray, never: np.ndarray, always: np.ndarray) -> Fitted:
    """Weights on the rows where talking changes the verdict, then the threshold that makes the
    most rows right (ties: the higher, fewer calls)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    mean[-1], scale[-1] = 0.0, 1.0  # the constant stays a constant
    differ = never != always
    z = (x - mean) / scale
    weights = (
        Logistic.fit(z[differ], always[differ].astype(float)).weights
        if differ.any()
        else np.zeros(x.shape[1])
    )
    p = probabilities(z, weights)
    scores = [(float(np.where(p > t, always, never).mean()), t) for t in THRESHOLDS]
    best = max(score for score, _ in scores)
    return Fitted(weights, mean, scale, max(t for score, t in scores if score == best))


def _cross_validated(x: np.ndarray, never: np.ndarray, always: np.ndarray) -> float:
    """The learned rule's accuracy on each fifth of the rows, fitted on the other four."""
    fold = np.arange(len(x)) % FOLDS
    right = np.zeros(len(x), dtype=bool)
    for k in range(FOLDS):
        held = fold == k
        if held.all() or not held.any():
            continue
        fitted = _fit(x[~held], never[~held], always[~held])
        right[held] = np.where(fitted.talks(x[held]), always[held], never[held])
    return float(right.mean())


def fit_gate(
    rule: DebateRule, train: Sequence[Debated], kind: AnswerKind = "choice"
) -> tuple[TalkGate, dict[str, float]]:
    """The gate for `rule` (its `lead`'s first answer where it does not talk) and its train
    figures. The learned rule is kept only when its cross-validated train accuracy beats both
    never and always talking on the train split; else the better of those (ties: never, then the
    learned rule: fewer calls)."""
    if rule.lead is None:
        raise ValueError("the gate's rule needs a lead (the stronger model on train)")
    asked = [q for q in train if disputed(q, rule.speakers)]
    if not asked:
        raise ValueError("no train question whose first answers differ: nothing to fit")
    never = measure("never", replace(rule, stop_after=0, pick="lead"), asked).correct
    always = measure("always", rule, asked).correct
    x = np.array(
        [
            gate_features(q.question, first_turns(q, rule.speakers), rule.speakers, kind)
            for q in asked
        ]
    )
    fitted = _fit(x, never, always)
    cv = _cross_validated(x, never, always)
    options = [(float(never.mean()), NEVER), (cv, fitted.threshold), (float(always.mean()), ALWAYS)]
    best = max(score for score, _ in options)
    threshold = next(t for score, t in options if score == best)
    gate = TalkGate(
        rule.speakers,
        rule.lead,
        kind,
        tuple(float(w) for w in fitted.weights),
        tuple(float(m) for m in fitted.mean),
        tuple(float(v) for v in fitted.scale),
        threshold,
    )
    figures = {
        "train_questions": float(len(train)),
        "train_disputed": float(len(asked)),
        "train_differ": float((never != always).sum()),
        "threshold": threshold,
        "never": 100 * float(never.mean()),
        "always": 100 * float(always.mean()),
        "learned_cross_validated": 100 * cv,
    }
    return gate, figures


def fit_folder_gate(folder: Path, out: Path) -> tuple[Path, dict[str, float]]:
    """The gate of a recorded debate's folder, fitted on its train split (the stronger model on
    train leads), written to `out`."""
    from consortium.coord.debate.gate import write_gate
    from consortium.records.store import load_records

    loaded = load_records(folder)
    protocol = loaded.manifest.protocol
    if protocol is None:
        raise RecordsError(f"{folder}: not a recorded debate (its manifest names no protocol)")
    questions = debated_questions(loaded)
    train = [q for q in questions if q.split == "train"]
    lead = stronger_on_train(protocol.speakers, questions)
    rule = DebateRule(tuple(protocol.speakers), protocol.max_rounds, lead=lead)
    gate, figures = fit_gate(rule, train, loaded.manifest.answer_kind)
    return write_gate(out, gate, f"{folder} (train split)", figures), figures
