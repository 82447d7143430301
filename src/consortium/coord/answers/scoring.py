"""The learned answer scorer's side of a rule: FrugalGPT-style features of each candidate answer
(which models gave it, how many agree, whether it passed its check) and the logistic score.
Fitting lives with the records (`consortium.evaluation.recorded.scorer`); scoring is the same
function on recorded samples and on live answers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coord.answers.rules import Seen


def candidate_features(seen: Sequence[Seen], models: Sequence[str]) -> tuple[list[int], np.ndarray]:
    """One row per answer class among the available samples (the index of its first sample in
    `seen`): per model of `models`, the share of its samples in the class, whether its first
    sample is in it, whether it was asked; then the share of all samples in the class, one over
    the number of classes, log(1 + samples), the share of the class's samples that passed their
    check (`Seen.checked`; unset: an answer is present), and a constant."""
    available = [i for i, s in enumerate(seen) if s.available]
    passed = [s.answer_class != NO_ANSWER if s.checked is None else s.checked for s in seen]
    per_model: dict[str, list[int]] = {}
    for i in available:
        per_model.setdefault(seen[i].model, []).append(i)
    firsts: dict[int, int] = {}
    for i in available:
        if seen[i].answer_class != NO_ANSWER:
            firsts.setdefault(seen[i].answer_class, i)
    classes = list(firsts)
    total = max(1, len(available))
    rows = []
    for c in classes:
        row: list[float] = []
        in_class = 0
        passing = 0
        for model in models:
            got = per_model.get(model, [])
            hits = [i for i in got if seen[i].answer_class == c]
            in_class += len(hits)
            passing += sum(passed[i] for i in hits)
            row += [
                len(hits) / len(got) if got else 0.0,
                1.0 if got and seen[got[0]].answer_class == c else 0.0,
                1.0 if got else 0.0,
            ]
        row += [in_class / total, 1.0 / len(classes), np.log1p(len(available))]
        row += [passing / max(1, in_class), 1.0]
        rows.append(row)
    return [firsts[c] for c in classes], np.array(rows, dtype=float)


def probabilities(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    p: np.ndarray = 1.0 / (1.0 + np.exp(-(x @ weights)))
    return p


def best_candidate(
    seen: Sequence[Seen], models: Sequence[str], weights: np.ndarray
) -> tuple[int | None, float]:
    """The index in `seen` of the best-scored candidate answer and its score (None, 0.0 when
    no answer could be read)."""
    found, x = candidate_features(seen, models)
    if not found:
        return None, 0.0
    p = probabilities(x, weights)
    best = int(np.argmax(p))
    return found[best], float(p[best])
