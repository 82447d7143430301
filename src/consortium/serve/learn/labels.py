"""Feedback as a label, and a label as a verdict on each recorded sample of the request.

A reference answer is graded by the answer kind's grader (`records.grading.grade_text`), so every
sample of the request gets a verdict. A verdict on the answer the client received labels the
samples that agree with it (the kind's agreement key); when it says right, every other sample is
wrong (one right answer); when it says wrong, the others stay without a verdict."""

from __future__ import annotations

from typing import Any

from consortium.coord.answers.keys import agreement_for
from consortium.records.grading import grade_text
from consortium.records.schema import AnswerKind
from consortium.serve.learn.store import FeedbackError, Label
from consortium.tasks.choice import Choices
from consortium.tasks.code import extract_code
from consortium.tasks.dates import normalise_date
from consortium.tasks.math import extract_answer


def label_of(body: Any) -> Label:
    """{"id": str, "correct": bool} or {"id": str, "reference": str}; FeedbackError otherwise."""
    if not isinstance(body, dict):
        raise FeedbackError("feedback must be a JSON object with id and correct or reference")
    response_id = body.get("id")
    if not isinstance(response_id, str) or not response_id:
        raise FeedbackError("feedback needs id: the id of the chat completion it labels")
    correct, reference = body.get("correct"), body.get("reference")
    if (correct is None) == (reference is None):
        raise FeedbackError(f"feedback for {response_id!r}: give one of correct or reference")
    if correct is not None and not isinstance(correct, bool):
        raise FeedbackError(f"feedback for {response_id!r}: correct must be true or false")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        raise FeedbackError(f"feedback for {response_id!r}: reference must be non-empty text")
    return Label(response_id, correct, reference)


def check_reference(kind: AnswerKind, reference: str, question: str) -> None:
    """FeedbackError when the kind's grader cannot read `reference` as an answer."""
    readable = {
        "number": lambda: _number_read(reference),
        "latex": lambda: bool(reference.strip()),
        "date": lambda: normalise_date(reference) is not None,
        "choice": lambda: _choice_read(reference, question),
    }
    if kind not in readable:
        raise FeedbackError(
            f"answers of kind {kind!r} are labelled with correct: true or false, not a reference"
        )
    if not readable[kind]():
        raise FeedbackError(f"the {kind} grader cannot read the reference {reference!r}")


def _choice_read(reference: str, question: str) -> bool:
    choices = Choices.of(question)
    return choices.letter_of(reference) in choices.letters


def _number_read(reference: str) -> bool:
    found, _ = extract_answer(reference)
    return found is not None


def answer_of(kind: AnswerKind, response: str | None) -> str | None:
    """The answer the kind's extractor reads from a reply (the records' `answer` column; for
    code, the program)."""
    if not response:
        return None
    if kind == "code":
        return extract_code(response).strip() or None
    return grade_text(kind, None, response).answer


def verdicts(
    kind: AnswerKind,
    label: Label,
    question: str,
    served_answer: str | None,
    responses: list[str | None],
) -> list[bool | None]:
    """Each sample's verdict under `label` (None: the label says nothing of it)."""
    if label.reference is not None:
        return [
            grade_text(kind, label.reference, response, question=question).correct
            for response in responses
        ]
    key, same = agreement_for(kind) if kind != "code" else (_program_key, None)
    served_key = _keyed(key, answer_of(kind, served_answer))

    def agrees(response: str | None) -> bool:
        mine = _keyed(key, answer_of(kind, response))
        if mine is None or served_key is None:
            return False
        return mine == served_key or (same is not None and same(mine, served_key))

    if label.correct:
        return [agrees(response) for response in responses]
    return [False if agrees(response) else None for response in responses]


def _program_key(program: str) -> str | None:
    """Two programs agree, for a verdict on one of them, when their text is the same."""
    return program or None


def _keyed(key: Any, answer: str | None) -> str | None:
    return None if answer is None else key(answer)
