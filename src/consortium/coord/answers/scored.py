"""Rules that pick by the learned answer scorer: every model at once and the best-scored answer
(`ScorerPick`), or a FrugalGPT cascade that asks one model at a time and stops once the scorer
fitted for the models asked so far gives its best answer at least `threshold`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from consortium.coord.answers.rules import Ask, Decision, Seen, Submit
from consortium.coord.answers.scoring import best_candidate, candidate_features, probabilities


@dataclass(frozen=True)
class ScorerPick:
    """Ask each of `asked` once, at once; the scorer picks the answer."""

    models: tuple[str, ...]
    """The feature order: every model the scorer was fitted with."""
    asked: tuple[str, ...]
    weights: tuple[float, ...]
    kind: str = "scorer"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        if not seen:
            return Ask(tuple((m, 0) for m in self.asked))
        chosen, p = best_candidate(seen, self.models, np.array(self.weights))
        return Submit(chosen, f"highest scorer p {p:.2f}")

    def class_scores(self, seen: Sequence[Seen]) -> Mapping[int, float]:
        return _class_scores(seen, self.models, self.weights)

    def params(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "asked": list(self.asked),
            "weights": list(self.weights),
        }

    def asks(self) -> tuple[str, ...]:
        return self.asked


@dataclass(frozen=True)
class ScorerCascade:
    """Ask the models in `order` one at a time; after the j-th, `scorers[j]` (fitted on the
    first j+1 models' answers) scores the candidates; stop at a best score ≥ `threshold`. Stage
    j+1 in the stop reason, the trace store and every table (stages count from 1)."""

    models: tuple[str, ...]
    order: tuple[str, ...]
    threshold: float
    scorers: tuple[tuple[float, ...], ...]
    kind: str = "scorer-cascade"

    def decide(self, seen: Sequence[Seen]) -> Decision:
        asked = len(seen)
        if asked:
            chosen, p = best_candidate(seen, self.models, np.array(self.scorers[asked - 1]))
            if p >= self.threshold:
                return Submit(chosen, f"accepted at stage {asked}: {self._compared(p, '>=')}")
            if asked == len(self.order):
                return Submit(chosen, f"every stage asked: {self._compared(p, '<')}")
        return Ask(((self.order[asked], 0),))

    def _compared(self, p: float, relation: str) -> str:
        """The comparison that stopped the cascade, in the words of the stages table's column."""
        return f"scorer p {p:.2f} {relation} tau {self.threshold:.2f}"

    def class_scores(self, seen: Sequence[Seen]) -> Mapping[int, float]:
        """The scorer of the stage `seen` reached, on each answer class."""
        if not seen:
            return {}
        return _class_scores(seen, self.models, self.scorers[min(len(seen), len(self.order)) - 1])

    def params(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "order": list(self.order),
            "threshold": self.threshold,
            "scorers": [list(w) for w in self.scorers],
        }

    def asks(self) -> tuple[str, ...]:
        return self.order


def _class_scores(
    seen: Sequence[Seen], models: Sequence[str], weights: Sequence[float]
) -> dict[int, float]:
    """The scorer's probability of each answer class among `seen` (what the trace shows)."""
    found, x = candidate_features(seen, models)
    if not found:
        return {}
    p = probabilities(x, np.array(weights))
    return {seen[i].answer_class: float(score) for i, score in zip(found, p, strict=True)}
