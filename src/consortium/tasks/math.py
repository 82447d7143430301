"""Math answers: extract the final answer, compare symbolically with math-verify."""

from __future__ import annotations

import logging
import re
import threading

from consortium.tasks.base import Grade, Task

MAX_ANSWER_CHARS = 1000
_ANSWER_IS = re.compile(
    r"(?:final answer|the answer)\s*(?:is|:)\s*[:\s]*(.+?)(?:\.\s|\.$|\n|$)", re.IGNORECASE
)
_HASHES = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_MATH_WORDS = frozenset({"pi", "sqrt", "sin", "cos", "tan", "log", "ln", "exp", "frac", "mod"})
_MARKUP = re.compile(r"[\\^_{}]")


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{…} or \\fbox{…}, braces balanced."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for index in range(brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : index]
    return None


def extract_answer(text: str) -> tuple[str | None, str]:
    """(answer, how found): boxed, then "#### x", then "the answer is x", then the last number."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip(), "boxed"
    hashes = _HASHES.findall(text)
    if hashes:
        return hashes[-1].strip(), "####"
    stated = _ANSWER_IS.findall(text)
    if stated:
        return _stated_number(stated[-1].strip().strip("$ ")), "answer is"
    numbers = _NUMBER.findall(text)
    if numbers:
        return numbers[-1], "last number"
    return None, "none"


def _stated_number(stated: str) -> str:
    """A stated answer in words around a number is that number, the last one ("indeed 42" ->
    42, "about 3.5 hours" -> 3.5); math (markup, pi, sqrt …) stays whole for math-verify."""
    words = {word.lower() for word in _WORD.findall(stated)}
    numbers: list[str] = _NUMBER.findall(stated)
    if not numbers or not words or words & _MATH_WORDS or _MARKUP.search(stated):
        return stated
    return numbers[-1]


def _as_math(answer: str) -> str:
    # math-verify reads LaTeX inside $…$; thousands separators are not decimal commas here.
    plain = re.sub(r"(?<=\d),(?=\d{3}\b)", "", answer)
    return f"${plain}$"


def _timeout() -> int | None:
    # math-verify's timeouts use SIGALRM, which only the main thread may set.
    return 5 if threading.current_thread() is threading.main_thread() else None


def _not_the_timeout_notice(record: logging.LogRecord) -> bool:
    """Off the main thread math-verify cannot use SIGALRM and says so once per module; that is
    expected here (answers are capped at MAX_ANSWER_CHARS instead), so the notice is dropped."""
    return not record.getMessage().startswith("Timeout is disabled")


def equivalent(reference: str, answer: str) -> bool:
    # math-verify pulls in sympy (about 0.6 s); commands that grade no math skip it.
    from math_verify import parse, verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_not_the_timeout_notice)  # once: filters are a set

    timeout = _timeout()
    gold = parse(_as_math(reference), parsing_timeout=timeout or 0)
    predicted = parse(_as_math(answer), parsing_timeout=timeout or 0)
    if not gold or not predicted:
        return reference.strip() == answer.strip()
    return bool(verify(gold, predicted, timeout_seconds=timeout))


class MathGrader:
    """Right when the extracted final answer equals the reference symbolically."""

    def grade(self, task: Task, answer: str) -> Grade:
        extracted, how = extract_answer(answer)
        if extracted is None:
            return Grade(False, 0.0, "no final answer found")
        if len(extracted) > MAX_ANSWER_CHARS:
            return Grade(False, 0.0, f"final answer longer than {MAX_ANSWER_CHARS} characters")
        correct = equivalent(str(task.reference), extracted)
        return Grade(correct, float(correct), f"{how}: {extracted[:100]}")
