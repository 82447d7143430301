"""A live answer-aware policy's stages: what it made of each sample it asked for (for the trace
store), and how it stops when the budget refuses a call — on what it has, as its rule would — or
fails when no call was answered. Shared by both live policies (`live`, `trinity_live`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from consortium.coord.answers.classes import NO_ANSWER, AnswerClasses
from consortium.coord.answers.rules import Ask, Decision, Rule, Seen, Submit
from consortium.core.errors import BudgetExceeded, ConsortiumError, CoordinatorError
from consortium.runtime.store_records import StageRecord

MAX_DECISIONS = 64
"""A rule that has not submitted after this many decisions is a bug, not a policy."""


@runtime_checkable
class ScoresClasses(Protocol):
    """A rule with a learned scorer: its probability per answer class on what it has seen."""

    def class_scores(self, seen: Sequence[Seen]) -> Mapping[int, float]: ...


def played_out(rule: Rule, seen: Sequence[Seen]) -> Submit:
    """What `rule` submits on `seen` when nothing more may be asked: it plays on as though every
    further call failed, which a rule goes on without (as without a sample the records lack), so
    its own submit decides — the vote of the answers so far, a cascade's best so far, a scorer's
    pick among what was answered. The index is into `seen` (failed entries are never chosen)."""
    played = list(seen)
    for _ in range(MAX_DECISIONS):
        decision = rule.decide(played)
        if isinstance(decision, Submit):
            return decision
        played += [Seen(model, k, NO_ANSWER, available=False) for model, k in decision.calls]
    raise RuntimeError(f"rule {rule.kind} asked {MAX_DECISIONS} times without submitting")


def budget_stop(rule: Rule, seen: Sequence[Seen]) -> Submit:
    """The rule's submit on what it has, its reason the budget's: 'budget hit after N calls'."""
    made = len(seen)
    chosen = played_out(rule, seen).index
    return Submit(chosen, f"budget hit after {made} call{'' if made == 1 else 's'}")


def unanswered(policy: str, failures: Sequence[str], all_refused: bool) -> ConsortiumError:
    """Why a policy whose every call failed has nothing to submit: a BudgetExceeded when the
    budget refused them all (402 when served), else a CoordinatorError (502)."""
    why = "; ".join(failures)
    if all_refused:
        return BudgetExceeded(f"policy {policy!r}: every call refused: {why}")
    return CoordinatorError(f"policy {policy!r}: every call failed: {why}")


def substitution_notes(substituted: Mapping[str, str]) -> list[str]:
    """An answer's notes on the pool models standing in for the policy's (`--substitute`)."""
    return [f"substituted: {old} -> {new}" for old, new in substituted.items()]


class StageTrail:
    """The samples one task asked for, stage by stage, as `StageRecord`s: each answer's class
    representative, check and scorer probability, and what the rule decided after each stage."""

    def __init__(self, rule: Rule, classes: AnswerClasses) -> None:
        self.rule = rule
        self.classes = classes
        self._rows: list[tuple[StageRecord, int | None]] = []
        """Each row, with its index in `seen` (None: refused, never in `seen`)."""

    def stage(
        self, step: int, asked: Sequence[tuple[str, int, Seen | None]], seen: Sequence[Seen]
    ) -> None:
        """Stage `step`'s samples (model, k, the entry appended to `seen`, or None when the
        budget refused the call), after they were appended."""
        scores = self.rule.class_scores(seen) if isinstance(self.rule, ScoresClasses) else {}
        position = len(seen) - sum(entry is not None for _, _, entry in asked)
        for model, k, entry in asked:
            if entry is None:
                self._rows.append((StageRecord(step, model, k, "refused"), None))
                continue
            row = StageRecord(step, model, k, _status(entry), checked=entry.checked)
            if entry.answer_class != NO_ANSWER:
                row.answer_class = entry.answer_class
                row.answer = self.classes.representatives[entry.answer_class]
                row.score = scores.get(entry.answer_class)
            self._rows.append((row, position))
            position += 1

    def decided(self, decision: Decision) -> None:
        """What the rule decided after the latest stage."""
        if not self._rows:
            return
        last = self._rows[-1][0].stage
        said = (
            "asked " + ", ".join(f"{model} #{k}" for model, k in decision.calls)
            if isinstance(decision, Ask)
            else f"stop: {decision.reason}"
        )
        for row, _ in self._rows:
            if row.stage == last:
                row.decision = said

    def records(self, chosen: int | None) -> list[StageRecord]:
        for row, index in self._rows:
            row.chosen = index is not None and index == chosen
        return [row for row, _ in self._rows]


def _status(entry: Seen) -> str:
    if not entry.available:
        return "failed"
    return "answered" if entry.answer_class != NO_ANSWER else "unread"
