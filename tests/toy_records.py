"""Small records folders' rows for the coordination tests: three models (two cheap, one strong)
answering numbered questions, graded by exact match against a reference."""

from __future__ import annotations

from consortium.records import OutputRow
from consortium.records.schema import SCHEMA_VERSION, Manifest, Price
from consortium.records.split import split_rule

MODELS = ["cheap-a", "cheap-b", "strong"]
COSTS = {"cheap-a": 0.001, "cheap-b": 0.002, "strong": 0.01}


def toy_manifest(dataset: str, kind: str = "number") -> Manifest:
    return Manifest(
        schema_version=SCHEMA_VERSION,
        dataset=dataset,
        answer_kind=kind,  # type: ignore[arg-type]
        sources=[],
        licence="test data written by this test",
        grader="test",
        split=split_rule(),
        prices={
            m: Price(input_per_mtok=1, output_per_mtok=1, source="t", date="2025-01-01")
            for m in MODELS
        },
        models=MODELS,
        questions=60,
        created_by="tests/toy_records.py",
    )


def output_row(
    q: int,
    model: str,
    sample: int,
    answer: str | None,
    gold: str | None,
    source_correct: bool | None = None,
) -> OutputRow:
    return OutputRow(
        str(q),
        f"question {q}",
        gold,
        model,
        sample,
        f"the answer is {answer}",
        answer,
        None if gold is None else answer == gold,
        source_correct,
        10,
        10,
        True,
        COSTS[model],
        True,
    )


def toy_rows(n: int = 60) -> list[OutputRow]:
    """Even questions: both cheap models right and agreeing; odd ones: they disagree and are wrong.
    The strong model is always right; cheap-a has a second sample equal to its first."""
    rows = []
    for q in range(n):
        gold = str(q)
        if q % 2 == 0:
            a, b = gold, gold
        else:
            a, b = str(q + 1000), str(q + 2000)
        rows += [output_row(q, "cheap-a", 0, a, gold), output_row(q, "cheap-a", 1, a, gold)]
        rows += [output_row(q, "cheap-b", 0, b, gold), output_row(q, "strong", 0, gold, gold)]
    return rows


def cheapest_right_rows(n: int = 30) -> list[OutputRow]:
    """cheap-a, the cheapest model, is right on every question; cheap-b on even ones, strong on
    every third; wrong answers all differ. The best single model is the cheapest, so a cascade
    that asks it first and stops there ties it on train accuracy and cost."""
    rows = []
    for q in range(n):
        gold = str(q)
        rows.append(output_row(q, "cheap-a", 0, gold, gold))
        rows.append(output_row(q, "cheap-b", 0, gold if q % 2 == 0 else str(q + 2000), gold))
        rows.append(output_row(q, "strong", 0, gold if q % 3 == 0 else str(q + 3000), gold))
    return rows
