"""RouterDC split2 score files (`split2_model7/*.json`): a JSON list of {"question", "scores":
{model: float}}. No texts and no gold: each model gets one row per question with no response,
`source_score` = the stored score and `source_correct` = score > 0 for multiple-choice files
(the score is then the confidence of a right argmax); for sampled files (10 samples, the score is
the fraction right) `source_correct` is None."""

from __future__ import annotations

from pathlib import Path

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport, SourceOutput, read_json
from consortium.records.schema import SourceFile


def split2_scores(path: str | Path) -> list[tuple[str, dict[str, float]]]:
    """(question, {model: score}) per row of one split2 file, in file order (both the importer
    and the replay read split2 through this)."""
    path = Path(path)
    rows = read_json(path)
    if not isinstance(rows, list) or not rows or "scores" not in rows[0]:
        raise RecordsError(f"{path}: expected a JSON list of {{question, scores}}")
    return [
        (str(row["question"]), {model: float(s) for model, s in row["scores"].items()})
        for row in rows
    ]


def read_split2(path: str | Path, *, choice: bool, prefix: str = "") -> SourceImport:
    """`prefix` keeps question ids unique when train and test files join (e.g. "test/")."""
    path = Path(path)
    rows = split2_scores(path)
    outputs = []
    for index, (question, scores) in enumerate(rows):
        for model, score in scores.items():
            outputs.append(
                SourceOutput(
                    question_id=f"{prefix}{index}",
                    question=question,
                    reference=None,
                    model=model,
                    sample=0,
                    response=None,
                    source_correct=(score > 0) if choice else None,
                    source_score=score,
                    error="no response text recorded (scores only)",
                )
            )
    models = list(rows[0][1])
    return SourceImport(outputs, [SourceFile(path=str(path), model=m) for m in models])
