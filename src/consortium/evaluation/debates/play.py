"""The debate rule played on a records folder's recorded turns, in process: per question, each
turn the rule asks for is the recorded one (its answer as our grader read it, its verdict, its
cost), and a turn the recording does not hold ends the debate there, as the replay's refusal ends
a live debate (`coord.debate.policy`). The same per-question outcome as the live policy over the
HTTP replay (tests/test_debates_replay.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from consortium.coord.answers.keys import choice_key
from consortium.coord.debate.rule import DebateRule, Said
from consortium.records.errors import RecordsError
from consortium.records.split import split_of
from consortium.records.store import Records


@dataclass(frozen=True, slots=True)
class Turn:
    model: str
    turn: int
    text: str
    answer: str | None
    """Its answer's agreement key, as our grader read the text."""
    correct: bool
    source_answer: str | None
    """The answer the source read from the turn."""
    source_correct: bool
    cost: float
    tokens: int


@dataclass(frozen=True)
class Debated:
    """A question and its recorded turns: the first answers in speaker order, then the later
    turns in the order spoken."""

    question_id: str
    question: str
    split: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Played:
    used: int
    """Turns the rule took (the calls answered)."""
    final: int | None
    reason: str
    refused: bool
    """The rule asked for a turn the recording does not hold (a call the replay refuses)."""

    @property
    def calls(self) -> int:
        return self.used + self.refused


def debated_questions(loaded: Records) -> list[Debated]:
    """Every question of a protocol folder, in id order."""
    protocol = loaded.manifest.protocol
    if protocol is None:
        raise RecordsError(
            f"{loaded.folder}: not a recorded debate (its manifest names no protocol)"
        )
    speakers = list(protocol.speakers)
    dataset = loaded.manifest.dataset
    columns = ["question_id", "question", "model", "turn", "response", "answer", "correct"]
    columns += ["source_answer", "source_correct", "cost_usd", "tokens_in", "tokens_out"]
    grouped: dict[str, tuple[str, list[Turn]]] = {}
    for row in loaded.table.select(columns).to_pylist():
        if row["turn"] is None:
            continue
        _, turns = grouped.setdefault(row["question_id"], (row["question"], []))
        answer = None if row["answer"] is None else choice_key(row["answer"])
        turns.append(
            Turn(
                row["model"],
                row["turn"],
                row["response"] or "",
                answer,
                bool(row["correct"]),
                row["source_answer"],
                bool(row["source_correct"]),
                row["cost_usd"],
                row["tokens_in"] + row["tokens_out"],
            )
        )
    return [
        Debated(
            qid,
            question,
            split_of(dataset, qid, loaded.manifest.split.test_fraction),
            tuple(sorted(turns, key=lambda t: (t.turn, speakers.index(t.model)))),
        )
        for qid, (question, turns) in grouped.items()
    ]


def play(rule: DebateRule, debated: Debated) -> Played:
    """The rule on the recorded turns of one question."""
    said: list[Said] = []
    refused = False
    n = len(rule.speakers)
    turns = debated.turns
    first = {turn.model: turn for turn in turns if turn.turn == 0}
    recorded_order = [turn.model for turn in turns[:n]]
    while (speaker := rule.next_speaker(said)) is not None:
        if len(said) < n:
            found = first.get(speaker)
        elif list(rule.speakers) != recorded_order or len(said) >= len(turns):
            found = None  # the transcript is not the recorded one, or the recording ended
        else:
            found = turns[len(said)] if turns[len(said)].model == speaker else None
        if found is None:
            refused = True
            break
        said.append(Said(speaker, found.answer))
    final, reason = rule.final(said)
    return Played(len(said), final, reason, refused)


def as_the_source_read(debated: Debated) -> Debated:
    """The question with each turn's answer and verdict as the source read them."""
    turns = tuple(
        replace(turn, answer=turn.source_answer, correct=turn.source_correct)
        for turn in debated.turns
    )
    return replace(debated, turns=turns)


def turn_of(debated: Debated, rule: DebateRule, index: int) -> Turn:
    """The recorded turn behind `said[index]` of a play (first answers in the rule's order)."""
    if index < len(rule.speakers):
        return next(t for t in debated.turns if t.turn == 0 and t.model == rule.speakers[index])
    return debated.turns[index]


def speakers_of(debated: Sequence[Debated]) -> list[str]:
    return [t.model for t in debated[0].turns if t.turn == 0] if debated else []
