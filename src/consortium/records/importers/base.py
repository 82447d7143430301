"""What every importer yields: the outputs as the source holds them, before our grading."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.schema import SourceFile


@dataclass(frozen=True, slots=True)
class SourceOutput:
    """One recorded output as found in a source file (ids, gold and verdicts the source's own)."""

    question_id: str
    question: str
    reference: str | None
    model: str
    sample: int
    response: str | None
    source_answer: str | None = None
    source_correct: bool | None = None
    source_score: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    error: str | None = None
    program: bool = False
    """The response is a program whose printed `ans` is the answer (program-of-thought)."""
    task: dict[str, Any] = field(default_factory=dict)
    """What a grader needs beyond the reference: code format and tests, choice letters."""
    turn: int | None = None
    """Its place in a recorded exchange (`records.schema.TURN_COLUMNS`); None: an ordinary row."""
    seen: tuple[str, ...] | None = None
    """The rows of the same question the turn was written after reading."""


@dataclass
class SourceImport:
    outputs: list[SourceOutput]
    files: list[SourceFile]
    notes: list[str] = field(default_factory=list)


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise RecordsError(f"source file not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: not valid JSON ({error})") from None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise RecordsError(f"source file not found: {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise RecordsError(f"{path}:{number}: invalid JSON ({error.msg})") from None
    return rows


def text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


def gold_text(value: Any) -> str:
    """A gold answer as text; 18.0 -> "18"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()
