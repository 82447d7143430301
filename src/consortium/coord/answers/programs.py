"""Rules that read a check on each answer (`Seen.checked`; for programs: every example of the
prompt's docstring passes, run in the sandbox): the example filter, a cascade that stops at the
first answer that passes, and AlphaCode's filter-and-cluster, the weighted plurality of the
answers that pass."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from consortium.coord.answers.rules import (
    NO_ANSWER,
    Ask,
    Decision,
    Seen,
    Submit,
    weighted_plurality,
)


def passed(entry: Seen) -> bool:
    """Whether an answer passed its check (unset: an answer is present); never when absent."""
    if not entry.available:
        return False
    return entry.answer_class != NO_ANSWER if entry.checked is None else entry.checked


@dataclass(frozen=True)
class ExampleFilter:
    """The models in `order`, each for up to `samples` samples, one call at a time; the first
    answer that passes its check is submitted. A model whose sample is missing (past the records'
    last, or a failed call) is left for the next one. When none passes: the first answer
    received (no further call)."""

    order: tuple[str, ...]
    samples: int
    kind: str = "example-filter"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        for index, entry in enumerate(seen):
            if passed(entry):
                return Submit(index, f"passed its check after {len(seen)}")
        following = self._next(seen)
        if following is not None:
            return Ask((following,))
        first = next((i for i, s in enumerate(seen) if s.available), None)
        return Submit(first, "none passed its check: the first answer")

    def _next(self, seen: Sequence[Seen]) -> tuple[str, int] | None:
        if not seen:
            return (self.order[0], 0)
        last = seen[-1]
        if last.available and last.sample + 1 < self.samples:
            return (last.model, last.sample + 1)
        position = self.order.index(last.model) + 1
        return (self.order[position], 0) if position < len(self.order) else None

    def params(self) -> dict[str, Any]:
        return {"order": list(self.order), "samples": self.samples}

    def asks(self) -> tuple[str, ...]:
        return self.order


@dataclass(frozen=True)
class FilterAndCluster:
    """AlphaCode's selection: every model's first `samples` samples at once; of the answers that
    pass their check, the weighted plurality (for programs, agreement is equal behaviour on the
    examples and probe calls: the largest cluster, each model's votes weighted as in the
    weighted vote). When none passes, the same vote over every answer."""

    models: tuple[str, ...]
    weights: Mapping[str, float]
    samples: int
    kind: str = "filter-and-cluster"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        if not seen:
            return Ask(tuple((m, k) for m in self.models for k in range(self.samples)))
        passing = [i for i, entry in enumerate(seen) if passed(entry)]
        pool = passing or [i for i, entry in enumerate(seen) if entry.available]
        chosen = weighted_plurality([seen[i] for i in pool], self.weights)
        if chosen is None:
            return Submit(None, "no answer")
        said = f"{len(passing)} of {len(seen)} passed: largest cluster"
        return Submit(pool[chosen], said if passing else "none passed: vote of every answer")

    def params(self) -> dict[str, Any]:
        return {"models": list(self.models), "weights": dict(self.weights), "samples": self.samples}

    def asks(self) -> tuple[str, ...]:
        return self.models
