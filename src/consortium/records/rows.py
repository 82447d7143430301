"""One recorded output as a plain object, and rows <-> an Arrow table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields

import pyarrow as pa

from consortium.records.schema import COLUMNS, TURN_COLUMNS


def scorable(verdicts: list[bool | None], source_verdicts: list[bool | None]) -> bool:
    """Whether a question whose samples carry these verdicts (ours, the source's) can be scored:
    every sample has a verdict; or none has, and the source marks every one wrong (then no
    answer can be right). A question only some of whose samples have a verdict cannot: counting
    the others wrong would be a verdict nobody gave."""
    missing = [verdict is None for verdict in verdicts]
    if not any(missing):
        return bool(verdicts)
    if all(missing):
        return all(verdict is False for verdict in source_verdicts)
    return False


@dataclass(frozen=True, slots=True)
class OutputRow:
    question_id: str
    question: str
    reference: str | None
    model: str
    sample: int
    response: str | None
    answer: str | None
    correct: bool | None
    source_correct: bool | None
    tokens_in: int
    tokens_out: int
    tokens_estimated: bool
    cost_usd: float
    cost_estimated: bool
    source_score: float | None = None
    latency_s: float | None = None
    error: str | None = None
    turn: int | None = None
    """The row's place in a recorded exchange (`schema.TURN_COLUMNS`); None: an ordinary row."""
    seen: tuple[str, ...] | None = None
    """The rows of the same question this turn was written after reading (`schema.turn_ref`)."""
    source_answer: str | None = None
    """The answer the source read from a turn (`schema.TURN_COLUMNS`; None elsewhere)."""


def question_order(question_id: str) -> tuple[int, int | str, str]:
    # "2" before "10", and "HumanEval/2" before "HumanEval/10".
    head, _, tail = question_id.rpartition("/")
    return (0, int(tail), head) if tail.isdigit() else (1, question_id, "")


def row_key(row: OutputRow) -> tuple[tuple[int, int | str, str], str, int]:
    return (question_order(row.question_id), row.model, row.sample)


def to_table(rows: Iterable[OutputRow]) -> pa.Table:
    """The rows as a table in the one column order, sorted by (question, model, sample) so that
    the same rows always give the same file; with the turn columns only when a row has a turn."""
    ordered = sorted(rows, key=row_key)
    schema = TURN_COLUMNS if any(row.turn is not None for row in ordered) else COLUMNS
    names = [field.name for field in fields(OutputRow)]
    columns = {name: [getattr(row, name) for row in ordered] for name in names}
    columns["seen"] = [None if seen is None else list(seen) for seen in columns["seen"]]
    return pa.Table.from_pydict({f.name: columns[f.name] for f in schema}, schema=schema)


def from_table(table: pa.Table) -> list[OutputRow]:
    rows = []
    for row in table.to_pylist():
        if row.get("seen") is not None:
            row["seen"] = tuple(row["seen"])
        rows.append(OutputRow(**row))
    return rows


def as_dict(row: OutputRow) -> dict[str, object]:
    return asdict(row)
