"""A judge's reply read as a choice among the candidate answers it saw.

A vote's judge is asked which answer most candidates give; what the workflow returns is the
chosen candidate's own text, never the judge's wording (a small judge may reply "The answer is
A." naming a label, not an answer). The judge's final answer is matched to the candidates' final
answers (`core.answers.final_answer`); when it matches none, the candidates' own majority decides
(ties: the earliest candidate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from consortium.core.answers import final_answer


@dataclass(frozen=True)
class Selection:
    index: int
    """Position of the chosen candidate among those given."""
    how: str
    """`judge` (the judge's answer is this candidate's) or `majority` (it matched none)."""


def select_candidate(judge: str, candidates: Sequence[str]) -> Selection | None:
    """The candidate the judge's reply picks; None when there are no candidates."""
    if not candidates:
        return None
    answers = [final_answer(text) for text in candidates]
    said = final_answer(judge)
    if said in answers:
        return Selection(answers.index(said), "judge")
    counts = Counter(answers)
    top = max(counts.values())
    return Selection(next(i for i, a in enumerate(answers) if counts[a] == top), "majority")
