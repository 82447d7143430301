"""The replay of a recorded debate: a debate turn's request (`coord.debate.transcript`) is answered
only when it is the recorded protocol's next turn for its question, matched by the transcript it
carries, with the recorded text. Anything else is one clear refusal, never an answer made up."""

from __future__ import annotations

from dataclasses import dataclass

from consortium.coord.debate.transcript import TurnRequest
from consortium.core.errors import ConfigError
from consortium.records.store import Records

REFUSED = "turn_not_recorded"
"""The error code of a refused turn (HTTP 404)."""


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    model: str
    turn: int
    text: str
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True)
class RecordedDebate:
    folder: str
    speakers: tuple[str, ...]
    turns: tuple[RecordedTurn, ...]
    """The first answers in speaker order, then the later turns in the order spoken."""

    def next_turn(self, request: TurnRequest, model: str) -> RecordedTurn | str:
        """The recorded turn `model` gives after the request's transcript, or why there is
        none."""
        n = len(self.speakers)
        if model not in self.speakers:
            return f"{model} is not a debater of the recorded debate ({', '.join(self.speakers)})"
        earlier = request.earlier
        if not earlier:
            return self.turns[self.speakers.index(model)]
        if len(earlier) < n:
            return (
                f"a later turn's transcript holds every first answer ({n}), this one {len(earlier)}"
            )
        for index, text in enumerate(earlier):
            if index >= len(self.turns):
                break
            if text.strip() != self.turns[index].text.strip():
                recorded = self.turns[index]
                return (
                    f"the transcript's turn {index + 1} is not the recorded one "
                    f"({recorded.model}'s turn {recorded.turn} of the recorded debate)"
                )
        if len(earlier) >= len(self.turns):
            return (
                f"the recorded debate ends after its turn {self.turns[-1].turn} "
                f"({len(self.turns) - n} later turns): no later turn was recorded"
            )
        following = self.turns[len(earlier)]
        if following.model != model:
            return f"the recorded turn after this transcript is {following.model}'s, not {model}'s"
        return following


def recorded_debates(loaded: Records) -> dict[str, RecordedDebate]:
    """A protocol folder's debates by question text (none for a folder without a protocol)."""
    protocol = loaded.manifest.protocol
    if protocol is None:
        return {}
    speakers = tuple(protocol.speakers)
    columns = ["question_id", "question", "model", "turn", "response", "tokens_in", "tokens_out"]
    by_id: dict[str, list[RecordedTurn]] = {}
    texts: dict[str, str] = {}
    for row in loaded.table.select(columns).to_pylist():
        if row["turn"] is None:
            continue
        turn = RecordedTurn(
            row["model"], row["turn"], row["response"] or "", row["tokens_in"], row["tokens_out"]
        )
        by_id.setdefault(row["question_id"], []).append(turn)
        texts[row["question_id"]] = row["question"].strip()
    debates: dict[str, RecordedDebate] = {}
    for question_id, turns in by_id.items():  # a question asked twice: its first id's debate
        ordered = tuple(sorted(turns, key=lambda t: (t.turn, speakers.index(t.model))))
        debates.setdefault(
            texts[question_id], RecordedDebate(loaded.folder.name, speakers, ordered)
        )
    return debates


def joined(
    first: dict[str, RecordedDebate], second: dict[str, RecordedDebate]
) -> dict[str, RecordedDebate]:
    """Two folders' debates behind one server; a question both recorded with a debater in common
    is one line (the server could not tell whose debate a turn is)."""
    for question, debate in second.items():
        other = first.get(question)
        if other is not None and set(other.speakers) & set(debate.speakers):
            raise ConfigError(
                f"records {other.folder} and {debate.folder} both recorded a debate of the "
                "same question with a debater in common: serve one of them at a time"
            )
    return {**first, **second}
