"""Verdicts by the project's own graders, per answer kind: math-verify for numbers and LaTeX,
letters for choices, dates for DATE, the sandbox with the task's own tests for code.

`grade` returns (extracted answer, verdict); the verdict is None when the row cannot be graded
(no reference, no response)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from consortium.records.schema import AnswerKind
from consortium.sandbox.session import RunsPython
from consortium.tasks.base import Task
from consortium.tasks.choice import Choices, extract_choice
from consortium.tasks.code import CodeGrader, extract_code
from consortium.tasks.dates import extract_date, normalise_date
from consortium.tasks.math import MAX_ANSWER_CHARS, equivalent, extract_answer

GRADER_NAMES: dict[str, str] = {
    "number": "consortium.tasks.math (extract_answer + math-verify equivalence)",
    "latex": "consortium.tasks.math (extract_answer + math-verify equivalence)",
    "choice": "consortium.tasks.choice.extract_choice (letter equality; the letters read from "
    "the question's options unless declared)",
    "date": "consortium.tasks.dates (MM/DD/YYYY, compared as dates)",
    "code": "consortium.tasks.code.CodeGrader (the task's own tests in the sandbox)",
    "text": "none (no grader for free text)",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    answer: str | None
    correct: bool | None


def _number(text: str) -> float | None:
    plain = text.strip().strip("$").rstrip(".").replace(",", "").strip()
    try:
        return float(plain)
    except ValueError:
        return None


def grade_math(reference: str | None, response: str | None) -> Verdict:
    if response is None or not response.strip():
        return Verdict(None, False if reference is not None else None)
    extracted, _ = extract_answer(response)
    if reference is None:
        return Verdict(extracted, None)
    if extracted is None or len(extracted) > MAX_ANSWER_CHARS:
        return Verdict(extracted, False)
    gold, given = _number(reference), _number(extracted)
    if gold is not None and given is not None:
        # Two plain numbers: what math-verify would decide, without its parser and its alarm.
        return Verdict(extracted, abs(gold - given) <= 1e-6 * max(1.0, abs(gold)))
    return Verdict(extracted, equivalent(reference, extracted))


def grade_choice(reference: str | None, response: str | None, choices: Choices) -> Verdict:
    chosen = extract_choice(response, choices) if response else None
    if reference is None:
        return Verdict(chosen, None)
    return Verdict(chosen, chosen is not None and chosen == choices.letter_of(reference))


def grade_date(reference: str | None, response: str | None) -> Verdict:
    stated = extract_date(response) if response else None
    if reference is None:
        return Verdict(stated, None)
    return Verdict(stated, stated is not None and stated == normalise_date(reference))


_CALLED = re.compile(r"assert\s+(?:not\s+)?\(?\s*(?:[\w.]+\()?\s*([A-Za-z_]\w*)\(")
_TAGGED = re.compile(r"\[PYTHON\]\n?(.*?)\[/PYTHON\]", re.DOTALL)
_TOP_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def bind_tested_name(code: str, tests: list[str]) -> str:
    """The response's code, plus `tested_name = its_last_function` when the tests call a name the
    code does not define (RouterBench's MBPP prompts did not show the tests, so the models chose
    their own function names)."""
    called = next((m.group(1) for m in map(_CALLED.search, tests) if m), None)
    defined = _TOP_DEF.findall(code)
    if called is None or not defined or called in defined:
        return code
    return f"{code}\n\n{called} = {defined[-1]}\n"


class CodeVerdicts:
    """Code verdicts through the sandbox; one grader (and sandbox) for a whole import."""

    def __init__(self, sandbox: RunsPython | None = None) -> None:
        self.grader = CodeGrader(sandbox)

    def grade(self, task_meta: Mapping[str, Any], response: str | None) -> Verdict:
        if task_meta.get("format") not in ("humaneval", "mbpp"):
            return Verdict(extract_code(response) if response else None, None)
        if response is None or not response.strip():
            return Verdict(None, False)
        task = Task("code", str(task_meta.get("prompt", "")), "code", "test", None, dict(task_meta))
        if task_meta.get("bind_name") and task_meta.get("format") == "mbpp":
            tagged = _TAGGED.search(response)  # Code Llama's [PYTHON] … [/PYTHON]
            code = tagged.group(1) if tagged else extract_code(response)
            response = bind_tested_name(code, list(task_meta["test_list"]))
        grade = self.grader.grade(task, response)
        return Verdict(extract_code(response), grade.correct)


def grade_text(
    kind: AnswerKind,
    reference: str | None,
    response: str | None,
    *,
    question: str = "",
    letters: str | None = None,
) -> Verdict:
    """Any kind but code (which needs the task's tests: `CodeVerdicts`). A choice reads the
    letters and option texts from `question` unless `letters` declares them."""
    if kind in ("number", "latex"):
        return grade_math(reference, response)
    if kind == "choice":
        return grade_choice(reference, response, Choices.of(question, letters))
    if kind == "date":
        return grade_date(reference, response)
    return Verdict(None, None)
