"""Multiple choice: find the letter an answer chose, robust to common answer styles."""

from __future__ import annotations

import re

from consortium.tasks.base import Grade, Task

_STATED = [
    # "The answer is (B)", "answer: B", "Final answer: **B**", "correct option is B"
    re.compile(
        r"(?:answer|option|choice)\s*(?:is|:|=)?\s*[:\s]*[\*\(\[]*([A-J])\b[\)\]\*]*", re.IGNORECASE
    ),
    re.compile(r"\\boxed\{\s*\(?([A-J])\)?\s*\}"),
    re.compile(r"\*\*\(?([A-J])\)?[\.\):]?\*\*"),
]
_LEADING = re.compile(r"^\s*[\(\[]?([A-J])(?:[\)\]\.:]|\s*$|\s)")
_ALONE = re.compile(r"(?<![A-Za-z])\(?([A-J])\)(?![A-Za-z])|(?<![A-Za-z'])([A-J])(?![A-Za-z'])")


def extract_choice(text: str, letters: str = "ABCD") -> str | None:
    """The chosen letter, or None. Stated answers win over a leading letter over a lone one."""
    allowed = set(letters.upper())
    for pattern in _STATED:
        found: list[str] = [m.upper() for m in pattern.findall(text) if m.upper() in allowed]
        if found:
            return found[-1]
    leading = _LEADING.match(text)
    if leading and leading.group(1).upper() in allowed:
        return str(leading.group(1).upper())
    alone: list[str] = [a or b for a, b in _ALONE.findall(text)]
    alone = [letter for letter in alone if letter in allowed]
    if len(set(alone)) == 1:
        return alone[0]
    return None


class ChoiceGrader:
    def grade(self, task: Task, answer: str) -> Grade:
        letters = task.meta.get("letters", "ABCD")
        chosen = extract_choice(answer, letters)
        if chosen is None:
            return Grade(False, 0.0, "no choice found")
        correct = chosen == str(task.reference).strip().upper()
        return Grade(correct, float(correct), f"chose {chosen}")
