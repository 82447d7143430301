"""A tried-and-left-out cascade on a records folder (docs/coordination.md, "A cheaper scorer for
GSM8K"): the first model's answer is scored from features of its text (response length, question
length, whether the answer is an integer, its magnitude, how many numbers the question has;
logistic regression on the train split); a high score stops there, otherwise the second model
answers and agreement (equal extracted answers) stops, otherwise the third answers and the majority
of the three is submitted (the third's answer when all differ). Measured on train only (what a
selection may read): per threshold, accuracy and $ as a share of the third model's, and the
scorer's cross-validated AUC with and without the question's MiniLM embedding.
`scripts/answer_text_scorer.py` parses the options and prints the lines."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from consortium.evaluation.recorded.scorer import Logistic
from consortium.records.split import split_of
from consortium.records.store import load_records
from consortium.reports.coordination.router_runs import question_features


@dataclass(frozen=True)
class AnswerTextRequest:
    """The records folder, the cascade's three models in order, and where question embeddings
    are cached."""

    records: Path
    first: str
    second: str
    third: str
    cache: Path = Path(".cache/coordination")


THRESHOLDS = (0.9, 0.95, 0.97, 0.98, 0.99)
EMBEDDING_DIMS = 32
FOLDS = 5


def text_features(row: dict[str, Any]) -> list[float]:
    answer = row["answer"] or ""
    try:
        value = float(answer)
        integer, magnitude = float(value == int(value)), float(np.log1p(abs(value)))
    except (ValueError, OverflowError):
        integer, magnitude = 0.0, 0.0
    numbers = len(re.findall(r"\d+(?:\.\d+)?", row["question"]))
    return [
        float(np.log1p(row["tokens_out"])),
        float(np.log1p(len(row["question"]))),
        integer,
        magnitude,
        float(np.log1p(numbers)),
        float(row["answer"] is None),
    ]


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    ranks = np.empty(len(scores))
    ranks[np.argsort(scores)] = np.arange(len(scores))
    positive = labels == 1
    return float(
        (ranks[positive].mean() - (positive.sum() - 1) / 2) / max(1, int((~positive).sum()))
    )


def cross_validated_auc(x: np.ndarray, y: np.ndarray, embedding: np.ndarray | None) -> float:
    folds = np.random.default_rng(0).integers(0, FOLDS, len(y))
    scores = np.zeros(len(y))
    for fold in range(FOLDS):
        fit, held = folds != fold, folds == fold
        parts_fit, parts_held = [x[fit]], [x[held]]
        if embedding is not None:
            centre = embedding[fit].mean(0)
            axes = np.linalg.svd(embedding[fit] - centre, full_matrices=False)[2][:EMBEDDING_DIMS].T
            parts_fit.append((embedding[fit] - centre) @ axes)
            parts_held.append((embedding[held] - centre) @ axes)
        model = Logistic.fit(np.hstack(parts_fit), y[fit])
        scores[held] = model.predict(np.hstack(parts_held))
    return auc(scores, y)


def cascade(
    first: dict[str, Any], second: dict[str, Any], third: dict[str, Any], stop: bool
) -> tuple[bool, float]:
    if stop:
        return bool(first["correct"]), float(first["cost_usd"])
    cost = float(first["cost_usd"] + second["cost_usd"])
    if first["answer"] is not None and first["answer"] == second["answer"]:
        return bool(second["correct"]), cost
    cost += third["cost_usd"]
    answers = [r for r in (third, second, first) if r["answer"] is not None]
    counts = Counter(r["answer"] for r in answers)
    top = counts.most_common(1)[0] if counts else None
    chosen = (
        third if top is None or top[1] < 2 else next(r for r in answers if r["answer"] == top[0])
    )
    return bool(chosen["correct"]), cost


def answer_text_lines(request: AnswerTextRequest) -> list[str]:
    """What the measurement prints: the train questions and in-sample AUC, the best single model
    on train, the cross-validated AUCs, then one line per threshold."""
    models = (request.first, request.second, request.third)
    firsts = _first_answers(request.records, models)
    train = list(firsts)
    x = np.array([text_features(firsts[q][request.first]) for q in train])
    x = (x - x.mean(0)) / (x.std(0) + 1e-9)
    x = np.hstack([x, np.ones((len(x), 1))])
    y = np.array([bool(firsts[q][request.first]["correct"]) for q in train], dtype=float)
    scores = Logistic.fit(x, y).predict(x)
    third_cost = float(np.mean([firsts[q][request.third]["cost_usd"] for q in train]))
    best = max(np.mean([bool(firsts[q][m]["correct"]) for q in train]) for m in models)
    embedding = question_features(
        [firsts[q][request.first]["question"] for q in train], request.cache
    )
    lines = [
        f"{len(train)} train questions; {request.first}'s answer AUC {auc(scores, y):.2f} "
        "(in sample)",
        f"best of the three on train: {100 * best:.2f}",
        f"{FOLDS}-fold AUC on train: answer text features {cross_validated_auc(x, y, None):.2f}, "
        f"with the question's MiniLM embedding {cross_validated_auc(x, y, embedding):.2f}",
    ]
    for threshold in THRESHOLDS:
        outcomes = [
            cascade(
                firsts[q][request.first],
                firsts[q][request.second],
                firsts[q][request.third],
                s >= threshold,
            )
            for q, s in zip(train, scores, strict=True)
        ]
        right = 100 * np.mean([r for r, _ in outcomes])
        share = 100 * np.mean([c for _, c in outcomes]) / third_cost
        stopped = np.mean(scores >= threshold)
        lines.append(
            f"tau {threshold:.2f}: train {right:.2f} at {share:.1f} % ({stopped:.0%} stop first)"
        )
    return lines


def _first_answers(
    folder: Path, models: tuple[str, str, str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per train question answered by all three models, each model's first recorded sample."""
    records = load_records(folder)
    firsts: dict[str, dict[str, dict[str, Any]]] = {}
    for row in records.table.to_pylist():
        if row["sample"] == 0 and row["model"] in models:
            firsts.setdefault(row["question_id"], {})[row["model"]] = row
    return {
        q: by_model
        for q, by_model in firsts.items()
        if len(by_model) == 3 and split_of(records.manifest.dataset, q) == "train"
    }
