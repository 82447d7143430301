"""The debate's rule, one function of what was said: who speaks next and, once no one does, which
turn's answer is submitted. The live policy (`policy`) plays it on replies; the report plays it
on a records folder's recorded turns (`consortium.evaluation.debates.play`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Said:
    """A turn as the rule reads it: its speaker and its answer's agreement key (None: no answer
    read)."""

    speaker: str
    answer: str | None


def latest_answers(said: Sequence[Said], speakers: Sequence[str]) -> list[str | None]:
    """Each speaker's latest answer (None before it spoke)."""
    latest: dict[str, str | None] = {}
    for turn in said:
        latest[turn.speaker] = turn.answer
    return [latest.get(speaker) for speaker in speakers]


def agreed(said: Sequence[Said], speakers: Sequence[str]) -> bool:
    """Every speaker's latest answer is one and the same answer."""
    latest = latest_answers(said, speakers)
    return latest[0] is not None and all(answer == latest[0] for answer in latest)


@dataclass(frozen=True)
class DebateRule:
    """Every speaker answers alone (turn 0, `speakers` order); while their latest answers differ,
    one speaker a turn (`speakers` order, round-robin) answers again after reading every earlier
    turn, for at most `max_rounds` turns (`stop_after` stops sooner; `always`: at least one turn
    even when the first answers agree). Without agreement the answer is the one stated most
    often (first answers included); a tie goes to `lead`'s latest answer when it is among the
    tied, else to the one stated first. `pick="lead"`: without agreement, `lead`'s latest answer
    (with `stop_after=0`, pick-the-stronger: the stronger model's first answer unless all
    agree)."""

    speakers: tuple[str, ...]
    max_rounds: int
    stop_after: int | None = None
    always: bool = False
    lead: str | None = None
    pick: Literal["majority", "lead"] = "majority"

    def __post_init__(self) -> None:
        if len(self.speakers) < 2 or len(set(self.speakers)) < len(self.speakers):
            raise ValueError(f"a debate needs two or more different models, got {self.speakers}")
        if self.max_rounds < 0 or (self.stop_after is not None and self.stop_after < 0):
            raise ValueError("rounds cannot be negative")
        if self.lead is not None and self.lead not in self.speakers:
            raise ValueError(f"lead {self.lead!r} is not one of the debaters")
        if self.pick == "lead" and self.lead is None:
            raise ValueError("pick=lead needs a lead")

    @property
    def rounds(self) -> int:
        """The most later turns this rule lets happen."""
        if self.stop_after is None:
            return self.max_rounds
        return min(self.max_rounds, self.stop_after)

    def next_speaker(self, said: Sequence[Said]) -> str | None:
        """Who answers next (the first answers one by one, in order); None: the debate is over."""
        n = len(self.speakers)
        if len(said) < n:
            return self.speakers[len(said)]
        later = len(said) - n
        if later >= self.rounds:
            return None
        if agreed(said, self.speakers) and not (self.always and later == 0):
            return None
        return self.speakers[later % n]

    def final(self, said: Sequence[Said]) -> tuple[int | None, str]:
        """The index in `said` of the turn whose answer is submitted (the latest turn stating
        it; None: no answer was read) and why."""
        rounds = max(0, len(said) - len(self.speakers))
        if agreed(said, self.speakers):
            return len(said) - 1, f"agreed after {rounds} rounds"
        lead = latest_answers(said, [self.lead])[0] if self.lead is not None else None
        if self.pick == "lead" and lead is not None:
            index = max(i for i, turn in enumerate(said) if turn.speaker == self.lead)
            return index, f"no agreement after {rounds} rounds: {self.lead}'s answer"
        counts = Counter(turn.answer for turn in said if turn.answer is not None)
        if not counts:
            return None, f"no answer read after {rounds} rounds"
        most = max(counts.values())
        tied = [answer for answer, count in counts.items() if count == most]
        if len(tied) == 1:
            chosen, why = tied[0], "stated most often"
        elif lead in tied:
            chosen, why = lead, f"a tie, {self.lead}'s answer"
        else:  # Counter keeps the order answers were first stated
            chosen, why = tied[0], "a tie, the answer stated first"
        index = max(i for i, turn in enumerate(said) if turn.answer == chosen)
        return index, f"no agreement after {rounds} rounds: {why}"
