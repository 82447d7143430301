"""A task's answer kind (how its answers are read and when two agree), for the tool steps of a
workflow, the debates and the answer-aware rounds of `evolve` alike."""

from __future__ import annotations

from typing import overload

from consortium.records.errors import RecordsError
from consortium.records.schema import DATASET_KINDS, AnswerKind
from consortium.records.store import folder_answer_kind
from consortium.records.tasks import RecordsGrader
from consortium.tasks.base import Grader, Task
from consortium.tasks.choice import ChoiceGrader
from consortium.tasks.code import CodeGrader
from consortium.tasks.dates import DateGrader
from consortium.tasks.math import MathGrader

GRADER_KINDS: tuple[tuple[type[Grader], AnswerKind], ...] = (
    (MathGrader, "latex"),  # equivalent by math-verify
    (ChoiceGrader, "choice"),
    (DateGrader, "date"),
    (CodeGrader, "code"),  # the program's behaviour
)


@overload
def answer_kind_of(task: Task) -> AnswerKind: ...
@overload
def answer_kind_of(task: Task, grader: Grader) -> AnswerKind | None: ...
def answer_kind_of(task: Task, grader: Grader | None = None) -> AnswerKind | None:
    """A `records:` task's records folder's kind. Else, given the grader that judges the task,
    the grader's (None for a grader whose answers nothing reads: a replay's recorded verdicts);
    without one, by the task: code for a task with tests, the built-in task set's, choice for a
    task with lettered options, else text."""
    folder = task.meta.get("records")
    if isinstance(folder, str):
        try:
            return folder_answer_kind(folder)
        except (RecordsError, OSError, ValueError):
            pass
    if grader is not None:
        if isinstance(grader, RecordsGrader):
            return grader.kind
        return next((kind for form, kind in GRADER_KINDS if isinstance(grader, form)), None)
    if task.meta.get("format") in ("humaneval", "mbpp"):
        return "code"
    if task.dataset in DATASET_KINDS:
        return DATASET_KINDS[task.dataset]
    return "choice" if task.meta.get("letters") else "text"
