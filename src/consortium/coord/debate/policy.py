"""The debate as a live policy: each turn a real call through the caller (any pool, or the
replay of a recorded debate, which answers only the recorded turns), its answer read as the
records' grader reads it, the rule (`rule.DebateRule`) deciding who speaks next and what is
submitted."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Protocol

from consortium.coord.answers.reading import ReplyReader
from consortium.coord.base import Outcome
from consortium.coord.debate.rule import DebateRule, Said, agreed
from consortium.coord.debate.transcript import Spoken, turn_messages
from consortium.core.errors import AgentError
from consortium.core.types import Completion
from consortium.records.schema import AnswerKind
from consortium.records.task_kind import answer_kind_of
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

ROLE = "debater"


class WhenToTalk(Protocol):
    """Decides, once the first answers differ, whether the debate goes on (`gate.TalkGate`)."""

    def talks(self, question: str, first: list[Spoken]) -> bool: ...


@dataclass
class DebateRun:
    """One task's exchange: each turn in the order spoken (the first answers in speaker order),
    the reply it came from (None: the call failed, `errors` says why), what is submitted."""

    spoken: list[Spoken] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)
    replies: list[Completion | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    final: int | None = None
    reason: str = ""


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
        debated = await self.debate(task, caller)
        notes = (f"stop: {debated.reason}", *debated.notes)
        if debated.final is None:
            return Outcome("", notes=notes)
        submitted = debated.spoken[debated.final]
        return Outcome(submitted.text, model=submitted.speaker, notes=notes)

    async def debate(self, task: Task, caller: TaskCaller) -> DebateRun:
        """The whole exchange on one task: every turn, what it answered, and what is submitted."""
        kind = self.kind or answer_kind_of(task)
        reader = ReplyReader(kind)
        run = DebateRun()
        rule = self.rule
        replies = await asyncio.gather(
            *(self._ask(task, caller, kind, model, [], 0) for model in rule.speakers)
        )
        for model, reply in zip(rule.speakers, replies, strict=True):
            await self._heard(task, reader, model, reply, run)
        talks = self.gate is None or agreed(run.said, rule.speakers)
        if not talks and self.gate is not None and not self.gate.talks(task.question, run.spoken):
            rule = replace(rule, stop_after=0, pick="lead")
            run.notes.append(f"the learned rule: no talk, {rule.lead}'s first answer")
        while (speaker := rule.next_speaker(run.said)) is not None:
            turn = len(run.said) - len(rule.speakers) + 1
            reply = await self._ask(task, caller, kind, speaker, run.spoken, turn)
            if isinstance(reply, AgentError):
                run.notes.append(f"turn {turn} ({speaker}): {reply}")
                break
            await self._heard(task, reader, speaker, reply, run)
        run.final, run.reason = rule.final(run.said)
        return run

    @staticmethod
    async def _heard(
        task: Task,
        reader: ReplyReader,
        model: str,
        reply: Completion | AgentError,
        run: DebateRun,
    ) -> None:
        """One reply into the transcript (a failed first answer: an empty turn, no answer)."""
        text = reply.text if isinstance(reply, Completion) else ""
        if isinstance(reply, AgentError):
            run.notes.append(f"first answer ({model}): {reply}")
        (reading,) = await reader.read_all(task, [text])
        key = reader.key(reading.answer) if reading.answer is not None else None
        run.spoken.append(Spoken(model, text))
        run.said.append(Said(model, key))
        run.replies.append(reply if isinstance(reply, Completion) else None)
        run.errors.append(str(reply) if isinstance(reply, AgentError) else None)

    @staticmethod
    async def _ask(
        task: Task,
        caller: TaskCaller,
        kind: AnswerKind,
        model: str,
        earlier: list[Spoken],
        turn: int,
    ) -> Completion | AgentError:
        messages = turn_messages(task.question, earlier, model, kind)
        try:
            return await caller.call(model, messages, role=ROLE, turn=turn)
        except AgentError as error:
            return error
