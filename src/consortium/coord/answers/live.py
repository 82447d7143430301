"""An answer-aware rule as a live `Coordinator`: it asks the pool's models through the caller,
reads each answer with the graders' extractor for the policy's answer kind, classifies it, and
lets the rule decide — the same rule the records runner plays on recorded samples."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from consortium.coord.answers.classes import AnswerClasses
from consortium.coord.answers.keys import agreement_for
from consortium.coord.answers.rules import NO_ANSWER, Ask, Rule, Seen
from consortium.coord.base import Outcome
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError
from consortium.core.types import user
from consortium.records.grading import grade_text
from consortium.records.schema import AnswerKind
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

MAX_DECISIONS = 64
LIVE_KINDS: tuple[AnswerKind, ...] = ("number", "latex", "choice", "date", "text")
"""Answer kinds a live answer-aware policy reads; code needs each program's run on its
docstring examples to tell agreement, which only the records report does today."""


def answer_reader(kind: AnswerKind) -> Callable[[Task, str], str | None]:
    """The answer the import's grader would extract from a response (no reference needed)."""

    def read(task: Task, text: str) -> str | None:
        letters = task.meta.get("letters")
        return grade_text(kind, None, text, question=task.question, letters=letters).answer

    return read


class AnswerAwareCoordinator:
    """`rule` over live calls; each sample k of a model is asked with `seed=k` (a records replay
    server serves its recorded sample k; a live endpoint samples with that seed)."""

    def __init__(self, rule: Rule, answer_kind: AnswerKind, name: str) -> None:
        if answer_kind not in LIVE_KINDS:
            raise CoordinatorError(
                f"policy {name!r}: answer kind {answer_kind!r} is not served live "
                f"(served: {', '.join(LIVE_KINDS)})"
            )
        self.rule = rule
        self.answer_kind = answer_kind
        self.name = name
        self._read = answer_reader(answer_kind)
        self._key, self._same = agreement_for(answer_kind)

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        classes = AnswerClasses(self._key, self._same)
        seen: list[Seen] = []
        texts: list[str | None] = []
        failures: list[str] = []
        refused = 0
        for step in range(MAX_DECISIONS):
            decision = self.rule.decide(seen)
            if not isinstance(decision, Ask):
                break
            replies = await asyncio.gather(
                *(self._ask(task, caller, model, k, step) for model, k in decision.calls)
            )
            for (model, k), reply in zip(decision.calls, replies, strict=True):
                if isinstance(reply, str):
                    seen.append(Seen(model, k, classes.add(self._read(task, reply))))
                    texts.append(reply)
                else:
                    seen.append(Seen(model, k, NO_ANSWER, available=False))
                    texts.append(None)
                    failures.append(f"{model} sample {k}: {reply}")
                    refused += reply.refused
        else:
            raise CoordinatorError(f"policy {self.name!r} did not submit an answer")
        notes = (f"stop: {decision.reason}", *failures)
        if decision.index is None:
            if failures and not any(s.available for s in seen):
                why = "; ".join(failures)
                if refused == len(failures):  # the budget refused every call: 402, not 502
                    raise BudgetExceeded(f"policy {self.name!r}: every call refused: {why}")
                raise CoordinatorError(f"policy {self.name!r}: every call failed: {why}")
            return Outcome("", notes=(*notes, "no answer to submit"))
        chosen = seen[decision.index]
        return Outcome(texts[decision.index] or "", model=chosen.model, notes=notes)

    @staticmethod
    async def _ask(task: Task, caller: TaskCaller, model: str, k: int, step: int) -> str | _Failed:
        """The reply's text, or why there is none (a failed call, a sample past the records'
        last, a budget that refuses the call): the rule goes on without it."""
        try:
            completion = await caller.call(model, [user(task.question)], turn=step, seed=k)
        except AgentError as error:
            return _Failed(str(error))
        except BudgetExceeded as error:
            return _Failed(f"refused by the budget: {error}", refused=True)
        return completion.text


class _Failed:
    def __init__(self, why: str, refused: bool = False) -> None:
        self.why = why
        self.refused = refused

    def __str__(self) -> str:
        return self.why
