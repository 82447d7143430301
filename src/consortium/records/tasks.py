"""A records folder as a task set: its questions and references, split by the one rule, graded by
the grader of its answer kind. The `records:` kind of `--tasks`:
`records:path=records/gsm8k:split=test:limit=100:seed=0`."""

from __future__ import annotations

import random
from typing import Any

from consortium.core.errors import TaskSpecError
from consortium.records.agreement import GradeWarning, grade_warnings
from consortium.records.errors import RecordsError
from consortium.records.grading import CodeVerdicts, grade_text
from consortium.records.rows import scorable
from consortium.records.schema import AnswerKind
from consortium.records.split import split_of
from consortium.records.store import Records, load_records
from consortium.tasks.base import Grade, Task, TaskSet
from consortium.tasks.code import entry_point
from consortium.tasks.forms import RECORDS
from consortium.tasks.spec import TaskSpec


def _code_meta(question: str, reference: str) -> dict[str, Any]:
    function = entry_point(question)
    if "def check(" in reference and function is not None:
        return {
            "format": "humaneval",
            "prompt": question,
            "test": reference,
            "entry_point": function,
        }
    return {"format": "mbpp", "test_list": reference.splitlines(), "test_setup_code": ""}


class RecordsGrader:
    """Grades an answer as the import graded the recorded ones (the data set's answer kind)."""

    def __init__(self, kind: AnswerKind) -> None:
        self.kind = kind
        self._code = CodeVerdicts() if kind == "code" else None

    def grade(self, task: Task, answer: str) -> Grade:
        reference = None if task.reference is None else str(task.reference)
        if self._code is not None:
            verdict = self._code.grade(task.meta, answer)
        else:
            verdict = grade_text(
                self.kind,
                reference,
                answer,
                question=task.question,
                letters=task.meta.get("letters"),
            )
        correct = bool(verdict.correct)
        return Grade(correct, float(correct), f"answer: {(verdict.answer or '')[:100]}")


def unscored_questions(records: Records) -> set[str]:
    """The questions the records runner leaves out (`rows.scorable`: some sample without our
    verdict), so that a live evaluation scores the same questions as a policy folder states."""
    rows = records.table.select(["question_id", "correct", "source_correct"]).to_pylist()
    verdicts: dict[str, tuple[list[bool | None], list[bool | None]]] = {}
    for row in rows:
        ours, source = verdicts.setdefault(row["question_id"], ([], []))
        ours.append(row["correct"])
        source.append(row["source_correct"])
    return {question for question, (ours, source) in verdicts.items() if not scorable(ours, source)}


def records_tasks(
    folder: str, split: str | None = None
) -> tuple[list[Task], AnswerKind, str, list[GradeWarning]]:
    """The scored questions of a split (`unscored_questions` left out), the answer kind, the data
    set's name, and the warnings on its verdicts (`consortium.records.agreement`)."""
    loaded = load_records(folder)
    manifest = loaded.manifest
    seen: dict[str, Task] = {}
    unscored = unscored_questions(loaded)
    table = loaded.table.select(["question_id", "question", "reference"])
    for row in table.to_pylist():
        question_id = row["question_id"]
        if question_id in seen or question_id in unscored:
            continue
        part = split_of(manifest.dataset, question_id, manifest.split.test_fraction)
        if split not in (None, "all", part):
            continue
        meta: dict[str, Any] = {"records": folder}
        if manifest.letters:  # the letters the import graded with, for every reader of the task
            meta["letters"] = manifest.letters
        if manifest.answer_kind == "code" and row["reference"]:
            meta |= _code_meta(row["question"], row["reference"])
            if manifest.binds_tested_name and meta["format"] == "mbpp":
                meta["bind_name"] = True  # as the import graded them
        seen[question_id] = Task(
            question_id, row["question"], manifest.dataset, part, row["reference"], meta
        )
    return list(seen.values()), manifest.answer_kind, manifest.dataset, grade_warnings(loaded)


def records_task_set(spec: TaskSpec) -> TaskSet:
    spec.check_keys(RECORDS.keys)
    path = spec.get("path")
    if not path:
        raise TaskSpecError("--tasks records: give path=FOLDER (a records folder)")
    split = spec.get("split", "all")
    if split not in ("train", "test", "all"):
        raise TaskSpecError(f"--tasks records: split must be train, test or all, got {split!r}")
    try:
        tasks, kind, dataset, warnings = records_tasks(path, split)
    except RecordsError as error:
        raise TaskSpecError(f"--tasks records: {error}") from None
    limit = spec.get_int("limit")
    if limit is not None and limit < len(tasks):
        chosen = sorted(random.Random(spec.get_int("seed", 0)).sample(range(len(tasks)), limit))
        tasks = [tasks[i] for i in chosen]
    if not tasks:
        raise TaskSpecError(f"--tasks records: no questions in {path} (split {split})")
    description = f"{dataset} from records {path} (split {split})"
    unscored = unscored_questions(load_records(path))
    if unscored:
        description += f"; {len(unscored)} questions without a verdict on every sample left out"
    if warnings:
        models = ", ".join(w.model for w in warnings)
        description += f"; our grades disagree with the source's for {models}"
    lines = tuple(w.line() for w in warnings)
    return TaskSet(tasks, RecordsGrader(kind), description, warnings=lines)
