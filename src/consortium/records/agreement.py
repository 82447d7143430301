"""Loud grades: where our verdicts and the source's disagree on a model's rows, say so.

A coordinator is only as good as the verdicts it is trained on, and a grader that silently reads
the wrong thing (a choice past D read as no answer) looks like a weak model. When the two
verdicts agree on fewer than `AGREEMENT_FLOOR` % of a model's rows that have both, a warning names
the data set, the model, both accuracies and the commonest kind of disagreement."""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from consortium.records.store import Records

AGREEMENT_FLOOR = 95.0
"""Percent of rows (with both verdicts) on which ours and the source's must agree."""


@dataclass(frozen=True, slots=True)
class GradeWarning:
    dataset: str
    model: str
    agreement: float
    compared: int
    ours: float
    source: float
    commonest: str
    """The commonest disagreement, in words ('ours read no answer in 312 rows the source marks
    right')."""
    folder: str
    """The records folder, as it was named."""

    def line(self) -> str:
        """The warning, with the command that lists the rows, runnable as printed."""
        report = f"{Path(self.folder)}-grades.md"  # beside the folder, never a committed report
        return (
            f"warning: {self.dataset} / {self.model}: our grades and the source's agree on "
            f"{self.agreement:.1f}% of {self.compared} rows (ours {self.ours:.1f}% right, source "
            f"{self.source:.1f}%): {self.commonest}; read those rows before training on these "
            f"verdicts: `consortium records report {shlex.quote(str(Path(self.folder)))} "
            f"--report {shlex.quote(report)}` lists them in "
            f"{report.removesuffix('.md')}-disagreements.csv"
        )


def _kind(answer: str | None, ours: bool, code: bool) -> str:
    if ours:
        return "ours marks right {} rows the source marks wrong"
    if answer is None:
        return "ours read no answer in {} rows the source marks right"
    if code:
        return "the tests fail {} programs the source marks right"
    return "ours read another answer than the reference in {} rows the source marks right"


def grade_warnings(records: Records, floor: float = AGREEMENT_FLOOR) -> list[GradeWarning]:
    """One warning per model whose two verdicts agree on fewer than `floor` % of the rows that
    have both; none for a model without source verdicts."""
    table = records.table.select(["model", "answer", "correct", "source_correct"]).to_pylist()
    both: dict[str, list[tuple[str | None, bool, bool]]] = {}
    for row in table:
        if row["correct"] is not None and row["source_correct"] is not None:
            both.setdefault(row["model"], []).append(
                (row["answer"], row["correct"], row["source_correct"])
            )
    warnings = []
    code = records.manifest.answer_kind == "code"
    for model in records.manifest.models:
        rows = both.get(model, [])
        if not rows:
            continue
        differ = Counter(
            _kind(answer, ours, code) for answer, ours, theirs in rows if ours != theirs
        )
        agreement = 100.0 * (len(rows) - sum(differ.values())) / len(rows)
        if agreement >= floor:
            continue
        kind, count = differ.most_common(1)[0]
        warnings.append(
            GradeWarning(
                dataset=records.manifest.dataset,
                model=model,
                agreement=agreement,
                compared=len(rows),
                ours=100.0 * sum(ours for _, ours, _ in rows) / len(rows),
                source=100.0 * sum(theirs for _, _, theirs in rows) / len(rows),
                commonest=kind.format(count),
                folder=str(records.folder),
            )
        )
    return warnings
