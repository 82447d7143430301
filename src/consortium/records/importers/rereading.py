"""Re2 layout (Tebmer/Rereading-LLM-Reasoning `results/*.jsonl`): one JSON line per question with
`id`, `input`, `target` and one object per prompting method (`vanilla`, `cot`, ...) holding
`generation` (a list with one text), `answer` and `score` (0/1). Duplicated ids keep the first row
(the gpt-3.5-turbo Re2 file repeats 30 ids)."""

from __future__ import annotations

from pathlib import Path

from consortium.records.errors import RecordsError
from consortium.records.importers.base import (
    SourceImport,
    SourceOutput,
    gold_text,
    read_jsonl,
    text_or_none,
)
from consortium.records.schema import SourceFile


def read_rereading(path: str | Path, model: str, method: str = "cot") -> SourceImport:
    path = Path(path)
    outputs: list[SourceOutput] = []
    seen: set[str] = set()
    duplicates = 0
    for row in read_jsonl(path):
        if "id" not in row or "input" not in row or method not in row:
            raise RecordsError(
                f"{path}: a row lacks id, input or {method!r} (methods here: "
                f"{', '.join(k for k in row if isinstance(row[k], dict))})"
            )
        question_id = str(row["id"])
        if question_id in seen:
            duplicates += 1
            continue
        seen.add(question_id)
        result = row[method] or {}
        generations = result.get("generation") or [None]
        score = result.get("score")
        for sample, generation in enumerate(generations):
            response = text_or_none(generation)
            outputs.append(
                SourceOutput(
                    question_id=question_id,
                    question=str(row["input"]),
                    reference=gold_text(row["target"]) if row.get("target") is not None else None,
                    model=model,
                    sample=sample,
                    response=response,
                    source_answer=text_or_none(result.get("answer")),
                    source_correct=None if score is None else bool(score),
                    error=None if response is not None else "no generation recorded",
                )
            )
    notes = (
        [f"{path.name}: {duplicates} duplicated ids dropped (first row kept)"] if duplicates else []
    )
    return SourceImport(
        outputs, [SourceFile(path=str(path), model=model, note=f"method {method}")], notes
    )
