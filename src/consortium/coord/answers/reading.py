"""How a live answer-aware policy reads a reply: the answer the records' grader would extract
and, for code, the program's run in the sandbox on its prompt's docstring examples and probe
calls (never the hidden tests) — whether it passed (`Seen.checked`) and its behaviour, which
decides agreement as it does in the records' outcome table."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from consortium.coord.answers.classes import AnswerKey, Equivalence
from consortium.coord.answers.keys import agreement_for
from consortium.records.grading import grade_text
from consortium.records.schema import AnswerKind
from consortium.tasks.base import Task
from consortium.tasks.code import extract_code
from consortium.tasks.code_checks import behaviour_key, check_reply


@dataclass(frozen=True, slots=True)
class Reading:
    answer: str | None
    """What the agreement key reads (for code: the program's behaviour); None: no answer."""
    checked: bool | None = None
    """For code: the program passed every docstring example; None: the default check."""


def answer_reader(kind: AnswerKind) -> Callable[[Task, str], str | None]:
    """The answer the import's grader would extract from a response (no reference needed)."""

    def read(task: Task, text: str) -> str | None:
        letters = task.meta.get("letters")
        return grade_text(kind, None, text, question=task.question, letters=letters).answer

    return read


def read_program(prompt: str, reply: str) -> Reading:
    """A code reply checked in the sandbox (blocking): an empty reply is no answer, as in the
    records, but is still checked (its check is what the records table holds for it)."""
    result = check_reply(prompt, reply)
    answer = behaviour_key(result.signature, extract_code(reply)) if reply.strip() else None
    return Reading(answer, result.passed)


def _as_is(found: str) -> str | None:
    return found


class ReplyReader:
    """Reads one step's replies for an answer kind; `key` and `same` classify what it read."""

    def __init__(self, kind: AnswerKind) -> None:
        self.kind = kind
        self._read = answer_reader(kind)
        self.key: AnswerKey
        self.same: Equivalence | None
        if kind == "code":  # the reading already is the behaviour key
            self.key, self.same = _as_is, None
        else:
            self.key, self.same = agreement_for(kind)

    async def read_all(self, task: Task, replies: Sequence[object]) -> list[Reading]:
        """One reading per reply (a reply that is not text, i.e. a failed call, reads as no
        answer); code replies are checked in worker threads, off the event loop, at once."""
        if self.kind != "code":
            return [
                Reading(self._read(task, r)) if isinstance(r, str) else Reading(None)
                for r in replies
            ]
        return list(
            await asyncio.gather(
                *(
                    asyncio.to_thread(read_program, task.question, r)
                    if isinstance(r, str)
                    else _no_answer()
                    for r in replies
                )
            )
        )


async def _no_answer() -> Reading:
    return Reading(None)
