"""Dates (BIG-bench date understanding): read the MM/DD/YYYY a response states, compare as dates.

A chain-of-thought response states its answer after "A:" (the MoT-cascade prompts) and may run on
into invented further questions, so the first stated answer wins; else the last date in the text.
"5/1/2021" and "05/01/2021" are the same date.
"""

from __future__ import annotations

import datetime as dt
import re

from consortium.tasks.base import Grade, Task

_DATE = re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(\d{4})(?!\d)")
_STATED = re.compile(r"(?:^|\n)\s*A:\s*(\d{1,2}/\d{1,2}/\d{4})")


def normalise_date(text: str) -> str | None:
    """ "MM/DD/YYYY" zero-padded, or None when `text` is not a valid calendar date."""
    found = _DATE.search(text)
    if found is None:
        return None
    month, day, year = (int(part) for part in found.groups())
    try:
        dt.date(year, month, day)
    except ValueError:
        return None
    return f"{month:02d}/{day:02d}/{year:04d}"


def extract_date(text: str) -> str | None:
    stated = _STATED.search(text)
    if stated is not None:
        return normalise_date(stated.group(1))
    dates = _DATE.findall(text)
    return normalise_date("/".join(dates[-1])) if dates else None


class DateGrader:
    """Right when the stated date equals the reference date."""

    def grade(self, task: Task, answer: str) -> Grade:
        chosen = extract_date(answer)
        if chosen is None:
            return Grade(False, 0.0, "no date found")
        correct = chosen == normalise_date(str(task.reference))
        return Grade(correct, float(correct), f"stated {chosen}")
