"""ModelSwitch layout (`Results/<DATASET>/MS/...json`): a JSON list, one object per question with
`no` (the join key), `question`, `solution` (gold) and either `step_sampling` / `final_answer` /
`Correctness` (closed-source files) or `<model>_Sampling` / `<model>_final_answer` (open-source
files, no stored verdict; the model name is read from the field names)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport, SourceOutput, read_json, text_or_none
from consortium.records.schema import SourceFile

_PREFIX = "assistant\n\n"  # chat-template residue at the start of the open-source outputs


def _open_model(row: dict[str, Any]) -> str | None:
    for key in row:
        if key.endswith("_Sampling"):
            return key.removesuffix("_Sampling")
    return None


def read_modelswitch(path: str | Path, model: str | None = None) -> SourceImport:
    path = Path(path)
    rows = read_json(path)
    if not isinstance(rows, list) or not rows:
        raise RecordsError(f"{path}: expected a non-empty JSON list of questions")
    open_model = _open_model(rows[0])
    name = model or open_model or path.stem
    outputs: list[SourceOutput] = []
    empty = 0
    for row in rows:
        if "no" not in row or "question" not in row:
            raise RecordsError(f"{path}: a row lacks no or question")
        if open_model:
            samples = row.get(f"{open_model}_Sampling") or []
            final = row.get(f"{open_model}_final_answer")
            stored = None
        else:
            samples = row.get("step_sampling") or []
            final = row.get("final_answer")
            stored = row.get("Correctness")
        if isinstance(stored, str):
            stored = stored.strip().lower() == "true"
        for sample, text in enumerate(samples or [None]):
            response = text_or_none(text)
            if response is not None and open_model:
                response = response.removeprefix(_PREFIX)
            if response is None:
                empty += 1
            outputs.append(
                SourceOutput(
                    question_id=str(row["no"]),
                    question=str(row["question"]),
                    reference=text_or_none(row.get("solution")),
                    model=name,
                    sample=sample,
                    response=response,
                    source_answer=text_or_none(final),
                    source_correct=None if stored is None else bool(stored),
                    error=None if response is not None else "empty output recorded",
                )
            )
    notes = [f"{path.name}: {empty} empty outputs (graded wrong)"] if empty else []
    if open_model:
        notes.append(f"{path.name}: no stored verdict; the leading {_PREFIX!r} residue is removed")
    return SourceImport(outputs, [SourceFile(path=str(path), model=name)], notes)
