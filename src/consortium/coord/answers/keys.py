"""When two extracted answers agree, per answer kind: numbers by value, LaTeX by math-verify,
dates by the normalised date, letters by letter, code by its behaviour on its docstring examples
(consortium.tasks.code_checks), free text by its stripped text."""

from __future__ import annotations

from collections.abc import Mapping

from consortium.coord.answers.classes import AnswerKey, Equivalence
from consortium.tasks.dates import normalise_date
from consortium.tasks.math import equivalent


def number_key(answer: str) -> str | None:
    text = answer.strip().replace(",", "").rstrip(".").strip("$ ")
    if not text:
        return None
    try:
        return repr(round(float(text), 6))
    except ValueError:
        return text


def latex_key(answer: str) -> str | None:
    text = "".join(answer.split())
    return text or None


def date_key(answer: str) -> str | None:
    return normalise_date(answer) or (answer.strip() or None)


def choice_key(answer: str) -> str | None:
    return answer.strip().upper() or None


def text_key(answer: str) -> str | None:
    return answer.strip() or None


def _math_same(first: str, second: str) -> bool:
    try:
        return equivalent(first, second)
    except Exception:  # math-verify raises on malformed LaTeX: those answers do not agree
        return False


def agreement_for(
    kind: str, signatures: Mapping[str, str] | None = None
) -> tuple[AnswerKey, Equivalence | None]:
    """The key (and, for LaTeX, the equivalence) that decides agreement for an answer kind. For
    code, `signatures` maps a program's text to its behaviour on the docstring examples."""
    if kind == "number":
        return number_key, None
    if kind == "latex":
        return latex_key, _math_same
    if kind == "date":
        return date_key, None
    if kind == "choice":
        return choice_key, None
    if kind == "code":
        known = dict(signatures or {})
        return (lambda code: known.get(code)), None
    return text_key, None
