"""The debate as a live policy: each turn a real call through the caller (any pool, or the
replay of a recorded debate, which answers only the recorded turns), its answer read as the
records' grader reads it, the rule (`rule.DebateRule`) deciding who speaks next and what is
submitted."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Protocol

from consortium.coord.answers.reading import ReplyReader
from consortium.coord.base import Outcome
from consortium.coord.debate.rule import DebateRule, Said, agreed
from consortium.coord.debate.transcript import Spoken, turn_messages
from consortium.core.errors import AgentError
from consortium.records.schema import AnswerKind
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

ROLE = "debater"


class WhenToTalk(Protocol):
    """Decides, once the first answers differ, whether the debate goes on (`gate.TalkGate`)."""

    def talks(self, question: str, first: list[Spoken]) -> bool: ...


class DebateCoordinator:
    """`rule` over live calls. A call that fails ends the debate: the rule submits on what was
    said (the failure is in the notes), so a turn the replay did not record is never invented."""

    def __init__(
        self,
        rule: DebateRule,
        name: str = "debate",
        kind: AnswerKind | None = None,
        gate: WhenToTalk | None = None,
    ) -> None:
        self.rule = rule
        self.name = name
        self.kind = kind
        self.gate = gate
        self.models = list(rule.speakers)

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        from consortium.coord.conductor.tool_steps import answer_kind_of

        kind = self.kind or answer_kind_of(task)
        reader = ReplyReader(kind)
        rule = self.rule
        spoken: list[Spoken] = []
        said: list[Said] = []
        notes: list[str] = []
        first = rule.speakers
        replies = await asyncio.gather(
            *(self._ask(task, caller, kind, model, [], 0) for model in first)
        )
        for model, reply in zip(first, replies, strict=True):
            await self._heard(task, reader, model, reply, spoken, said, notes)
        talks = self.gate is None or agreed(said, rule.speakers)
        if not talks and self.gate is not None and not self.gate.talks(task.question, spoken):
            rule = replace(rule, stop_after=0, pick="lead")
            notes.append(f"the learned rule: no talk, {rule.lead}'s first answer")
        while (speaker := rule.next_speaker(said)) is not None:
            turn = len(said) - len(rule.speakers) + 1
            reply = await self._ask(task, caller, kind, speaker, spoken, turn)
            if isinstance(reply, AgentError):
                notes.append(f"turn {turn} ({speaker}): {reply}")
                break
            await self._heard(task, reader, speaker, reply, spoken, said, notes)
        index, reason = rule.final(said)
        notes.insert(0, f"stop: {reason}")
        if index is None:
            return Outcome("", notes=tuple(notes))
        return Outcome(spoken[index].text, model=spoken[index].speaker, notes=tuple(notes))

    @staticmethod
    async def _heard(
        task: Task,
        reader: ReplyReader,
        model: str,
        reply: str | AgentError,
        spoken: list[Spoken],
        said: list[Said],
        notes: list[str],
    ) -> None:
        """One reply into the transcript (a failed first answer: an empty turn, no answer)."""
        if isinstance(reply, AgentError):
            notes.append(f"first answer ({model}): {reply}")
            reply = ""
        (reading,) = await reader.read_all(task, [reply])
        key = reader.key(reading.answer) if reading.answer is not None else None
        spoken.append(Spoken(model, reply))
        said.append(Said(model, key))

    @staticmethod
    async def _ask(
        task: Task,
        caller: TaskCaller,
        kind: AnswerKind,
        model: str,
        earlier: list[Spoken],
        turn: int,
    ) -> str | AgentError:
        messages = turn_messages(task.question, earlier, model, kind)
        try:
            completion = await caller.call(model, messages, role=ROLE, turn=turn)
        except AgentError as error:
            return error
        return completion.text
