"""Agreement classes of one question's answers: which answers agree (by the answer kind's key,
`consortium.coord.answers.keys`), one object for the records tables and the live coordinators."""

from __future__ import annotations

from collections.abc import Callable

NO_ANSWER = -1
"""The class of an answer that could not be read."""

AnswerKey = Callable[[str], str | None]
"""Maps an extracted answer to a hashable key; answers with equal keys agree."""
Equivalence = Callable[[str, str], bool]
"""Decides agreement of two answers whose keys differ (e.g. LaTeX via math-verify)."""


class AnswerClasses:
    """Agreement classes of one question's answers, given one at a time: equal keys agree; with
    `same`, an answer of a new key joins the first earlier class `same` says it is equivalent to.
    The records table and a live coordinator classify with this one object."""

    def __init__(self, key: AnswerKey, same: Equivalence | None = None) -> None:
        self.key = key
        self.same = same
        self.representatives: list[str] = []
        self.by_key: dict[str, int] = {}

    def add(self, answer: str | None) -> int:
        found = self.key(answer) if answer is not None else None
        if found is None:
            return NO_ANSWER
        if found not in self.by_key:
            match = None
            if self.same is not None:
                for index, representative in enumerate(self.representatives):
                    if self.same(representative, found):
                        match = index
                        break
            if match is None:
                self.representatives.append(found)
                match = len(self.representatives) - 1
            self.by_key[found] = match
        return self.by_key[found]
