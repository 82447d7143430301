"""Answer-aware rules: from the answers seen so far, the next decision (ask, or submit).

A rule sees only `Seen` entries — which model gave which sample, and the agreement class of its
answer (answers in one class agree, by the answer kind's key) — never the answers' verdicts, so
the same rule runs on recorded samples and on live calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from consortium.coord.answers.classes import NO_ANSWER

__all__ = ["NO_ANSWER", "Ask", "Decision", "Rule", "Seen", "Submit"]

MAX_SAMPLES = 5
"""ModelSwitch and the MoT cascade ask a model for at most this many samples."""


@dataclass(frozen=True, slots=True)
class Seen:
    """One sample asked for: its model, its index, and its answer's agreement class."""

    model: str
    sample: int
    answer_class: int
    checked: bool | None = None
    """Whether the answer passed its check (for programs: its docstring examples); None: the
    default check, an answer is present."""
    available: bool = True
    """False when there was no such sample (a records pool past its last recorded sample) or
    the call failed: the entry is remembered (the rule does not ask again) but never voted."""


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask these (model, sample index) pairs next, all at once."""

    calls: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Submit:
    """Answer with `seen[index]` (None: nothing to answer with)."""

    index: int | None
    reason: str


Decision = Ask | Submit


class Rule(Protocol):
    @property
    def kind(self) -> str:
        """The policy kind a folder names ('vote', 'model-switch' …)."""
        ...

    def decide(self, seen: Sequence[Seen]) -> Decision: ...

    def params(self) -> dict[str, Any]:
        """What the policy folder stores to rebuild the rule."""
        ...

    def asks(self) -> tuple[str, ...]:
        """Every model the rule may ask."""
        ...


def _available(seen: Sequence[Seen]) -> list[int]:
    return [i for i, s in enumerate(seen) if s.available]


def weighted_plurality(seen: Sequence[Seen], weights: Mapping[str, float]) -> int | None:
    """The index of the first sample of the winning class: each model's samples share its
    weight; ties go to the class of the highest-weighted model that voted for one of them, then
    to the earliest class. With no answer read, the first available sample; with none, None."""
    indices = _available(seen)
    per_model: dict[str, int] = {}
    for i in indices:
        per_model[seen[i].model] = per_model.get(seen[i].model, 0) + 1
    score: dict[int, float] = {}
    first: dict[int, int] = {}
    best_weight: dict[int, float] = {}
    for i in indices:
        entry = seen[i]
        if entry.answer_class == NO_ANSWER:
            continue
        c = entry.answer_class
        weight = float(weights.get(entry.model, 0.0))
        score[c] = score.get(c, 0.0) + weight / per_model[entry.model]
        first.setdefault(c, i)
        best_weight[c] = max(best_weight.get(c, float("-inf")), weight)
    if not score:
        return indices[0] if indices else None
    top = max(score.values())
    tied = [c for c in score if score[c] >= top - 1e-12]
    return first[max(tied, key=lambda c: best_weight[c])]


def unanimous(seen: Sequence[Seen]) -> bool:
    classes = {seen[i].answer_class for i in _available(seen)}
    return len(classes) == 1 and NO_ANSWER not in classes


def plurality_share(seen: Sequence[Seen]) -> float:
    """The fraction of the available samples in the most common class (no answer counts as its
    own disagreeing vote)."""
    classes = [seen[i].answer_class for i in _available(seen)]
    answered = [c for c in classes if c != NO_ANSWER]
    if not answered:
        return 0.0
    return max(answered.count(c) for c in set(answered)) / len(classes)


def _samples(models: Sequence[str], limit: int) -> tuple[tuple[str, int], ...]:
    return tuple((m, k) for m in models for k in range(limit))


def _each(models: Sequence[str], limits: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Each model's samples 0 .. its limit − 1 (a model without one: its first sample)."""
    return tuple((m, k) for m in models for k in range(limits.get(m, 1)))


@dataclass(frozen=True)
class SingleAnswer:
    """One model's first sample."""

    model: str
    kind: str = "single"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        if not seen:
            return Ask(((self.model, 0),))
        return Submit(0 if seen[0].available else None, "answered")

    def params(self) -> dict[str, Any]:
        return {"model": self.model}

    def asks(self) -> tuple[str, ...]:
        return (self.model,)


@dataclass(frozen=True)
class WeightedVote:
    """Every model's first `samples` samples at once; the weighted plurality answers (weights:
    train accuracy for the honest bar; equal weights for a plain majority)."""

    models: tuple[str, ...]
    weights: Mapping[str, float]
    samples: int = 1
    kind: str = "vote"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        if not seen:
            return Ask(_samples(self.models, self.samples))
        return Submit(weighted_plurality(seen, self.weights), "voted")

    def params(self) -> dict[str, Any]:
        return {"models": list(self.models), "weights": dict(self.weights), "samples": self.samples}

    def asks(self) -> tuple[str, ...]:
        return self.models


@dataclass(frozen=True)
class ModelSwitch:
    """ModelSwitch's rule: models in order, each for up to `samples[model]` samples (fitted on
    records: as many as were recorded, at most MAX_SAMPLES, so a live endpoint is asked what the
    records held); stop once two or more answers are gathered and all agree; the weighted
    plurality of everything answers."""

    order: tuple[str, ...]
    weights: Mapping[str, float]
    samples: Mapping[str, int]
    kind: str = "model-switch"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        asked = list(dict.fromkeys(s.model for s in seen))
        if len(_available(seen)) >= 2 and unanimous(seen):
            return Submit(weighted_plurality(seen, self.weights), f"agreed after {len(asked)}")
        if len(asked) < len(self.order):
            return Ask(_each([self.order[len(asked)]], self.samples))
        return Submit(weighted_plurality(seen, self.weights), "every model asked")

    def params(self) -> dict[str, Any]:
        return {
            "order": list(self.order),
            "weights": dict(self.weights),
            "samples": dict(self.samples),
        }

    def asks(self) -> tuple[str, ...]:
        return self.order


@dataclass(frozen=True)
class MotCascade:
    """MoT-style cascade: the cheap models' samples (up to `samples[model]` each, as ModelSwitch);
    when two or more answered and the most common answer holds at least `threshold` of them,
    their weighted plurality answers; otherwise the strong model's first sample is final (when
    it fails, the cheap answers' plurality stands, said in the stop reason)."""

    cheap: tuple[str, ...]
    strong: str
    threshold: float
    weights: Mapping[str, float]
    samples: Mapping[str, int]
    kind: str = "mot-cascade"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        if not seen:
            return Ask(_each(self.cheap, self.samples))
        if seen[-1].model == self.strong:
            if seen[-1].available:
                return Submit(len(seen) - 1, "escalated")
            return Submit(weighted_plurality(seen, self.weights), "escalation failed: cheap vote")
        if len(_available(seen)) >= 2 and plurality_share(seen) >= self.threshold:
            share = plurality_share(seen)
            agreed = f"accepted: agreement {share:.2f} >= tau {self.threshold:.2f}"
            return Submit(weighted_plurality(seen, self.weights), agreed)
        return Ask(((self.strong, 0),))

    def params(self) -> dict[str, Any]:
        return {
            "cheap": list(self.cheap),
            "strong": self.strong,
            "threshold": self.threshold,
            "weights": dict(self.weights),
            "samples": dict(self.samples),
        }

    def asks(self) -> tuple[str, ...]:
        return (*self.cheap, self.strong)
