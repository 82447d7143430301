"""The import table: per data set × model, questions, samples, accuracy by our graders and by the
source's stored verdicts, how often the two agree, and every disagreement (listed, not resolved)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from consortium.records.agreement import AGREEMENT_FLOOR, GradeWarning, grade_warnings
from consortium.records.store import Records


@dataclass(frozen=True)
class ModelSummary:
    dataset: str
    model: str
    questions: int
    samples: int
    ours: float | None
    """Mean of our verdicts over the rows we could grade (%)."""
    graded: int
    source: float | None
    """Mean of the source's stored verdicts over the rows that have one (%)."""
    source_graded: int
    agreement: float | None
    """Share of rows with both verdicts where they are equal (%)."""
    compared: int
    disagreements: int
    cost_usd: float
    cost_estimated: bool


@dataclass(frozen=True)
class Disagreement:
    dataset: str
    question_id: str
    model: str
    sample: int
    reference: str | None
    answer: str | None
    correct: bool
    source_correct: bool


def _percent(hits: int, total: int) -> float | None:
    return round(100.0 * hits / total, 2) if total else None


def label(records: Records) -> str:
    """A data set's name in the table; a recorded debate's folder name (several teams and runs
    of one data set are imported)."""
    return records.folder.name if records.manifest.protocol else records.manifest.dataset


def summarise(records: Records) -> tuple[list[ModelSummary], list[Disagreement]]:
    dataset = label(records)
    columns = ["question_id", "model", "sample", "reference", "answer", "correct", "source_correct"]
    rows = records.table.select([*columns, "cost_usd", "cost_estimated"]).to_pylist()
    summaries: list[ModelSummary] = []
    disagreements: list[Disagreement] = []
    for model in records.manifest.models:
        mine = [row for row in rows if row["model"] == model]
        ours = [row["correct"] for row in mine if row["correct"] is not None]
        theirs = [row["source_correct"] for row in mine if row["source_correct"] is not None]
        both = [
            row for row in mine if row["correct"] is not None and row["source_correct"] is not None
        ]
        differ = [row for row in both if row["correct"] != row["source_correct"]]
        disagreements += [Disagreement(dataset, **{c: row[c] for c in columns}) for row in differ]
        summaries.append(
            ModelSummary(
                dataset=dataset,
                model=model,
                questions=len({row["question_id"] for row in mine}),
                samples=len(mine),
                ours=_percent(sum(ours), len(ours)),
                graded=len(ours),
                source=_percent(sum(theirs), len(theirs)),
                source_graded=len(theirs),
                agreement=_percent(len(both) - len(differ), len(both)),
                compared=len(both),
                disagreements=len(differ),
                cost_usd=round(sum(row["cost_usd"] for row in mine), 4),
                cost_estimated=any(row["cost_estimated"] for row in mine),
            )
        )
    return summaries, disagreements


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def write_report(
    all_records: Sequence[Records], markdown: Path, command: str, extra: Sequence[str] = ()
) -> tuple[list[ModelSummary], list[Disagreement]]:
    """`markdown`, a .json beside it, and `<stem>-disagreements.csv`; `extra` lines (a section of
    their own, e.g. the recorded debates') go after the data sets."""
    summaries: list[ModelSummary] = []
    disagreements: list[Disagreement] = []
    warnings: list[GradeWarning] = []
    for records in all_records:
        found, differ = summarise(records)
        summaries += found
        disagreements += differ
        warnings += grade_warnings(records)
    disagreement_file = markdown.with_name(markdown.stem + "-disagreements.csv")
    lines = _summary_lines(summaries, warnings, command)
    lines += _dataset_lines(all_records)
    lines += list(extra)
    lines += [
        f"Every disagreement (question, model, sample, reference, our extracted answer, both "
        f"verdicts) is listed in `{disagreement_file.name}`; none is resolved silently. For code "
        "data sets the tests and the code are not copied there (sources without a licence "
        "grant); read them from the records folder by question id, model and sample.",
        "",
    ]
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text("\n".join(lines), encoding="utf-8")
    markdown.with_suffix(".json").write_text(
        json.dumps({"command": command, "models": [asdict(s) for s in summaries]}, indent=2) + "\n",
        encoding="utf-8",
    )
    code_sets = {r.manifest.dataset for r in all_records if r.manifest.answer_kind == "code"}
    _write_disagreements(disagreement_file, disagreements, code_sets)
    return summaries, disagreements


def _summary_lines(
    summaries: Sequence[ModelSummary], warnings: Sequence[GradeWarning], command: str
) -> list[str]:
    """The title, how to read the figures, one row per data set and model, and the warnings."""
    warned = {(w.dataset, w.model) for w in warnings}
    lines = [
        "# Recorded outputs imported into the records format",
        "",
        f"Generated by `{command}`. Pool: none (recorded outputs of real models, read from files; "
        "no model was called). Accuracies are over samples (rows): **ours** re-grades each "
        "response with the project's graders (answer kind per data set below), over the rows "
        "that have a reference (`graded`); **source** is the verdict stored by (or, where none is "
        "stored, recomputed with the rule of) the source repository, over the rows that have one "
        "(`with source`). The two can therefore cover different rows (RouterBench: questions "
        "whose reference letter cannot be reconstructed are not graded by us; empty verdict "
        "cells are not counted as the source's). **Agreement** is over rows that have both. "
        "Costs marked * are computed from the declared list prices in each manifest "
        "(estimates), the others are recorded by the source. split2_* data sets hold scores "
        "only (no texts): there is nothing for our graders to read.",
        "",
        "| data set | model | questions | samples | graded | ours % | with source | source % "
        "| agreement % | disagree | cost USD |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        cost = f"{s.cost_usd:.2f}{'*' if s.cost_estimated else ''}"
        lines.append(
            f"| {s.dataset} | {s.model} | {s.questions} | {s.samples} | {s.graded} | "
            f"{_cell(s.ours)} | {s.source_graded} | {_cell(s.source)} | {_cell(s.agreement)}"
            f"{' ⚠' if (s.dataset, s.model) in warned else ''} | "
            f"{s.disagreements} | {cost} |"
        )
    if warnings:
        lines += [
            "",
            f"⚠ Our grades and the source's agree on fewer than {AGREEMENT_FLOOR:g} % of these "
            "models' rows; a policy trained on either verdict learns that grader's reading:",
            "",
            *[f"- {w.line()}" for w in warnings],
        ]
    return lines


def _dataset_lines(all_records: Sequence[Records]) -> list[str]:
    """Per data set: its answer kind, questions, grader, sources, licence and notes."""
    lines = ["", "## Data sets", ""]
    for records in all_records:
        m = records.manifest
        lines += [
            f"### {label(records)} ({m.answer_kind}, {m.questions} questions, grader: {m.grader})",
            "",
            f"Sources: {'; '.join(f'{s.repo} @ {s.commit[:12]}' for s in m.sources)}. "
            f"Licence: {m.licence}.",
            "",
            *[f"- {note}" for note in m.notes],
            "",
        ]
    return lines


def _write_disagreements(
    path: Path, disagreements: Sequence[Disagreement], code_sets: set[str]
) -> None:
    """One CSV row per disagreement; a code data set's reference and answer are left out (its
    sources grant no licence to copy them)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(Disagreement.__dataclass_fields__))
        for d in disagreements:
            shown = d.dataset not in code_sets
            answer = None if d.answer is None or not shown else " ".join(d.answer.split())[:200]
            writer.writerow(
                [
                    d.dataset,
                    d.question_id,
                    d.model,
                    d.sample,
                    (d.reference or "")[:200] if shown else "",
                    answer,
                    d.correct,
                    d.source_correct,
                ]
            )
