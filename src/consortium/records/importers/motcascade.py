"""MoT-cascade layout (MurongYue/LLM_MoT_cascade `*_result/<task>_<variant>.json`): a JSON list in
benchmark order (the row index is the question id), with `question`, `answer` (gold: a value, or
BIG-bench `target_scores` {option: 0/1}), `generated` (one text per sample; Python code for
program-of-thought files) and `results` (the extracted or executed answer per sample).

No verdict is stored; `source_correct` is the repo's own rule (`finqa_equal`: string equality,
numbers rounded to the shorter precision) on the per-sample result. Failed programs are dropped
from `results` in some files, so when `results` is shorter than `generated` the per-sample source
verdict is unknown (None)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import (
    SourceImport,
    SourceOutput,
    gold_text,
    read_json,
    text_or_none,
)
from consortium.records.schema import SourceFile


def _gold(answer: Any) -> str:
    if isinstance(answer, str) and answer.strip().startswith("{"):
        try:
            answer = ast.literal_eval(answer)
        except (ValueError, SyntaxError):
            return str(answer)
    if isinstance(answer, dict):
        right = [option for option, value in answer.items() if value == 1]
        return str(right[0]) if right else ""
    return gold_text(answer)


def _precision(number: float) -> int:
    text = repr(float(number))
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def finqa_equal(prediction: Any, gold: Any) -> bool:
    """The repo's comparison (Evaluation/utils.py), restated: strings exactly, numbers rounded
    to the shorter of their decimal precisions."""
    if isinstance(prediction, str) or isinstance(gold, str):
        return str(prediction).strip() == str(gold).strip()
    digits = min(_precision(prediction), _precision(gold))
    return bool(round(float(prediction), digits) == round(float(gold), digits))


def read_motcascade(
    path: str | Path, model: str, *, program: bool | None = None, limit: int | None = None
) -> SourceImport:
    """`program`: the samples are programs (default: the file name has "pot")."""
    path = Path(path)
    rows = read_json(path)
    if not isinstance(rows, list):
        raise RecordsError(f"{path}: expected a JSON list of questions")
    is_program = ("pot" in path.stem) if program is None else program
    outputs: list[SourceOutput] = []
    misaligned = no_samples = 0
    for index, row in enumerate(rows[:limit]):
        if "question" not in row or "generated" not in row:
            raise RecordsError(f"{path}: row {index} lacks question or generated")
        raw_gold = row.get("answer")
        gold = _gold(raw_gold)
        if isinstance(raw_gold, dict):
            raw_gold = gold
        generated = row.get("generated") or []
        results = row.get("results") or []
        aligned = len(results) == len(generated)
        misaligned += not aligned
        if not generated:
            no_samples += 1
        for sample, text in enumerate(generated):
            result = results[sample] if aligned else None
            response = text_or_none(text)
            outputs.append(
                SourceOutput(
                    question_id=str(index),
                    question=str(row["question"]),
                    reference=gold,
                    model=model,
                    sample=sample,
                    response=response,
                    source_answer=None if result is None else gold_text(result),
                    source_correct=(
                        None
                        if not aligned
                        else result is not None and finqa_equal(result, raw_gold)
                    ),
                    error=None if response is not None else "empty output recorded",
                    program=is_program,
                )
            )
    notes = []
    if misaligned:
        notes.append(
            f"{path.name}: {misaligned} questions whose results list is shorter than their samples "
            "(failed programs dropped): no per-sample source verdict there"
        )
    if no_samples:
        notes.append(f"{path.name}: {no_samples} questions with no recorded sample")
    return SourceImport(outputs, [SourceFile(path=str(path), model=model)], notes)
