"""What a recording keeps of each call beside its text: the answer read as the data set's kind,
and the task's reference (`recorder`, `evaluation.debates.record`)."""

from __future__ import annotations

from consortium.core.answers import final_answer
from consortium.records.schema import AnswerKind
from consortium.tasks.base import Task
from consortium.tasks.choice import Choices, extract_choice
from consortium.tasks.code import extract_code
from consortium.tasks.dates import extract_date
from consortium.tasks.math import extract_answer


def answer_of(kind: AnswerKind, task: Task, text: str) -> str | None:
    """The answer a recorded text gives, read as the data set's kind (None: an empty text)."""
    if not text.strip():
        return None
    if kind in ("number", "latex"):
        return extract_answer(text)[0]
    if kind == "choice":
        return extract_choice(text, Choices.of(task.question, task.meta.get("letters")))
    if kind == "date":
        return extract_date(text)
    if kind == "code":
        return extract_code(text)
    return final_answer(text)


def task_reference(task: Task) -> str | None:
    """What a records row keeps as a task's reference (code: its tests)."""
    if "test" in task.meta:  # HumanEval: the test program is the reference
        return str(task.meta["test"])
    if "test_list" in task.meta:
        return "\n".join(task.meta["test_list"])
    return None if task.reference is None else str(task.reference)
