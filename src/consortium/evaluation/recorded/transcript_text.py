"""The transcript as text, for the TRINITY head on replay: a language-model feature of the question
and the Worker answers so far, as the paper's encoder reads the transcript each turn.

The feature is the static MiniLM's (`all-MiniLM-L6-v2-static`, model2vec's distillation of the
pinned weights). A static feature composes: the feature of texts joined together is the normalised
sum of each text's token-vector sum, so each question and each recorded response is encoded once
and a transcript's feature, whatever turns led to it, is a sum (of whole texts: the 512-token cut
`encode` applies to one text is not applied). The head reads its first `dims` principal
components, whitened (consortium.coord.trinity.encoder.Standardizer, fitted on the train split's
questions alone and with each model's first answer), so they start on the scale of the
structured features; as a bag of tokens it does not see the order of the answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.trinity.encoder import Standardizer
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.records.store import Records

TokenSums = Callable[[Sequence[str]], np.ndarray]
"""Texts → each text's summed token vectors (n × d); StaticMiniLMEncoder.token_sums."""

DIMS = 16

Responses = tuple[tuple[np.ndarray, ...], ...]
"""[q][m]: model m's recorded responses to question q, one token sum per sample."""


@dataclass(frozen=True)
class TranscriptText:
    questions: np.ndarray
    """[q]: the question's token sum."""
    responses: Responses
    """[q][m]: model m's recorded responses to q, one token sum per sample, in sample order."""
    projection: Standardizer
    """The whitened principal components the head reads."""

    @property
    def dims(self) -> int:
        return self.projection.out_dim

    def unit(self, q: int, workers: Sequence[tuple[int, int]]) -> np.ndarray:
        """The transcript's feature: question q and the (model, sample) answers, normalised."""
        return _unit(self.questions, self.responses, q, workers)

    def features(self, q: int, workers: Sequence[tuple[int, int]]) -> np.ndarray:
        return self.projection.apply(self.unit(q, workers))


def _unit(
    questions: np.ndarray, responses: Responses, q: int, workers: Sequence[tuple[int, int]]
) -> np.ndarray:
    total = questions[q].copy()
    for m, k in workers:
        total += responses[q][m][k]
    norm = float(np.linalg.norm(total))
    out: np.ndarray = total / norm if norm > 0 else total
    return out


def transcript_text(
    records: Records, table: OutcomeTable, token_sums: TokenSums, dims: int = DIMS
) -> TranscriptText:
    """Encode the table's questions and every recorded response once; fit the projection on the
    train split."""
    index = {q: i for i, q in enumerate(table.question_ids)}
    model_index = {m: i for i, m in enumerate(table.models)}
    rows = records.table.select(["question_id", "question", "model", "sample", "response"])
    kept = [row for row in rows.to_pylist() if row["question_id"] in index]
    question_text = {row["question_id"]: row["question"] or "" for row in kept}
    questions = token_sums([question_text[q] for q in table.question_ids])
    ordered = sorted(kept, key=lambda row: (index[row["question_id"]], row["model"], row["sample"]))
    sums = token_sums([row["response"] or "" for row in ordered])
    per: list[list[list[np.ndarray]]] = [[[] for _ in table.models] for _ in table.question_ids]
    for row, vector in zip(ordered, sums, strict=True):
        per[index[row["question_id"]]][model_index[row["model"]]].append(vector)
    responses = tuple(
        tuple(np.array(vectors).reshape(len(vectors), questions.shape[1]) for vectors in row)
        for row in per
    )
    points = []
    for q in table.indices("train"):
        points.append(_unit(questions, responses, int(q), []))
        points += [
            _unit(questions, responses, int(q), [(m, 0)])
            for m in range(table.n_models)
            if per[q][m]
        ]
    return TranscriptText(questions, responses, Standardizer.fit(np.array(points), dims))
