"""A recorded corpus's recipe: which files, which model each holds, joined on the same questions
(`corpora`, `debate_corpora`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consortium.records.build import Part
from consortium.records.schema import AnswerKind, Protocol

NO_GRANT = (
    "no licence file in the source repo: no grant; internal research, evaluation and tests only, "
    "do not republish"
)


@dataclass(frozen=True)
class Recipe:
    dataset: str
    kind: AnswerKind
    licence: str
    parts: Callable[[Path], list[Part]]
    notes: tuple[str, ...] = ()
    protocol: Protocol | None = None
    """The exchange the folder's turn rows recorded (`records.debate_corpora`)."""
