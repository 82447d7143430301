"""The messages of a debate turn: one format, written by the live policy and read by the replay
of a recorded debate (`consortium.replay.protocol_turns`), which answers a turn only when the
transcript a request carries is the recorded one.

A turn's request: the system message `DEBATE_SYSTEM` (it marks the request as a debate turn),
the question alone, each earlier turn in the order spoken (the asked model's own as `assistant`,
another's as `user`, headed `<model> said:`), then the instruction. A first answer has no earlier
turn. Instructions also go in the last user message: some chat templates (Gemma's) drop a system
message."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from consortium.core.types import Message
from consortium.core.wire import content_text
from consortium.records.schema import AnswerKind

DEBATE_SYSTEM = (
    "You are in a debate: several models answer the same question; then, one at a time, each "
    "reads the others' answers and answers again, keeping or changing its choice."
)
SAID = " said:\n"
_ANSWER_LINE: dict[str, str] = {
    "choice": "Answer: (X), X the letter of the option you choose",
}


@dataclass(frozen=True, slots=True)
class Spoken:
    """A turn of the transcript: who spoke and the reply's text as it came back."""

    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A debate turn's request as the replay reads it."""

    question: str
    earlier: tuple[str, ...]
    """The earlier turns' texts, in the order spoken."""


def instruction(kind: AnswerKind, first: bool) -> str:
    line = _ANSWER_LINE.get(kind, "Answer: <your answer>")
    if first:
        return f"Answer the question. Explain briefly, then end with the line `{line}`."
    return (
        "Above are the answers so far. Say what is wrong in the others' reasoning or in yours, "
        f"then answer again: explain briefly, then end with the line `{line}`."
    )


def turn_messages(
    question: str, earlier: Sequence[Spoken], asked: str, kind: AnswerKind
) -> list[Message]:
    """The request of `asked`'s turn after the turns `earlier`."""
    messages: list[Message] = [
        {"role": "system", "content": DEBATE_SYSTEM},
        {"role": "user", "content": question},
    ]
    for spoken in earlier:
        if spoken.speaker == asked:
            messages.append({"role": "assistant", "content": spoken.text})
        else:
            messages.append({"role": "user", "content": f"{spoken.speaker}{SAID}{spoken.text}"})
    messages.append({"role": "user", "content": instruction(kind, first=not earlier)})
    return messages


def read_turn_request(messages: Sequence[Any]) -> TurnRequest | None:
    """The question and earlier turns of a debate turn's messages; None when the messages are
    not a debate turn's (no `DEBATE_SYSTEM` first)."""
    if len(messages) < 3 or not all(isinstance(m, dict) for m in messages):
        return None
    head = messages[0]
    if head.get("role") != "system" or content_text(head.get("content")) != DEBATE_SYSTEM:
        return None
    earlier = []
    for message in messages[2:-1]:
        text = content_text(message.get("content"))
        if message.get("role") == "user" and SAID in text:
            text = text.split(SAID, 1)[1]
        earlier.append(text)
    return TurnRequest(content_text(messages[1].get("content")), tuple(earlier))
