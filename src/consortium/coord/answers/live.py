"""An answer-aware rule as a live `Coordinator`: it asks the pool's models through the caller,
reads each answer with the graders' extractor for the policy's answer kind (a program: its run on
the prompt's docstring examples, `reading`), classifies it, and lets the rule decide — the same
rule the records runner plays on recorded samples."""

from __future__ import annotations

import asyncio

from consortium.coord.answers.classes import AnswerClasses
from consortium.coord.answers.reading import ReplyReader
from consortium.coord.answers.rules import NO_ANSWER, Ask, Rule, Seen
from consortium.coord.answers.stages import (
    MAX_DECISIONS,
    StageTrail,
    budget_stop,
    substitution_notes,
    unanswered,
)
from consortium.coord.base import Outcome
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError
from consortium.core.types import user
from consortium.records.schema import AnswerKind
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

LIVE_KINDS: tuple[AnswerKind, ...] = ("number", "latex", "choice", "date", "text", "code")
"""Answer kinds a live answer-aware policy reads (code: each program run in the sandbox on its
prompt's docstring examples and probe calls tells agreement and the check)."""


class AnswerAwareCoordinator:
    """`rule` over live calls; each sample k of a model is asked with `seed=k` (a records replay
    server serves its recorded sample k; a live endpoint samples with that seed). When the
    budget refuses a call, the rule submits on what was answered ('budget hit after N calls');
    only when nothing was answered is it a BudgetExceeded. Each sample's stage goes to the trace
    store beside its call (`stages.StageTrail`)."""

    def __init__(self, rule: Rule, answer_kind: AnswerKind, name: str) -> None:
        if answer_kind not in LIVE_KINDS:
            raise CoordinatorError(
                f"policy {name!r}: answer kind {answer_kind!r} is not served live "
                f"(served: {', '.join(LIVE_KINDS)})"
            )
        self.rule = rule
        self.answer_kind = answer_kind
        self.name = name
        self._reader = ReplyReader(answer_kind)
        self.substituted: dict[str, str] = {}
        """Pool models standing in for the policy's (its name -> the pool's), said in notes."""

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        classes = AnswerClasses(self._reader.key, self._reader.same)
        seen: list[Seen] = []
        texts: list[str | None] = []
        failures: list[str] = []
        refused = 0
        trail = StageTrail(self.rule, classes)
        for step in range(1, MAX_DECISIONS + 1):  # stages count from 1, as their stop reasons
            decision = self.rule.decide(seen)
            trail.decided(decision)
            if not isinstance(decision, Ask):
                break
            replies = await asyncio.gather(
                *(self._ask(task, caller, model, k, step) for model, k in decision.calls)
            )
            readings = await self._reader.read_all(task, replies)
            stage: list[tuple[str, int, Seen | None]] = []
            for (model, k), reply, read in zip(decision.calls, replies, readings, strict=True):
                if isinstance(reply, str):
                    seen.append(Seen(model, k, classes.add(read.answer), checked=read.checked))
                    texts.append(reply)
                elif reply.refused:  # never sent: the rule stops below
                    failures.append(f"{model} sample {k}: {reply}")
                    refused += 1
                    stage.append((model, k, None))
                    continue
                else:
                    seen.append(Seen(model, k, NO_ANSWER, available=False))
                    texts.append(None)
                    failures.append(f"{model} sample {k}: {reply}")
                stage.append((model, k, seen[-1]))
            trail.stage(step, stage, seen)
            if refused:
                decision = budget_stop(self.rule, seen)
                trail.decided(decision)
                break
        else:
            raise CoordinatorError(f"policy {self.name!r} did not submit an answer")
        await caller.trace_stages(trail.records(decision.index))
        notes = (f"stop: {decision.reason}", *failures, *substitution_notes(self.substituted))
        if decision.index is None:
            if failures and not any(s.available for s in seen):
                raise unanswered(self.name, failures, all_refused=refused == len(failures))
            return Outcome("", notes=(*notes, "no answer to submit"))
        chosen = seen[decision.index]
        return Outcome(texts[decision.index] or "", model=chosen.model, notes=notes)

    @staticmethod
    async def _ask(task: Task, caller: TaskCaller, model: str, k: int, step: int) -> str | _Failed:
        """The reply's text, or why there is none: a failed call or a sample past the records'
        last (the rule goes on without it), or a call the budget refuses (the rule stops)."""
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
