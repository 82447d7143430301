"""Multi-turn TRINITY over answers as a live `Coordinator`: each turn `TrinityTurns.decide` (the
function the records runner plays) picks a model and a role, or submits; the call is made through
the caller and its reply joins the transcript.

- Worker: the question alone, sample k of the model asked with `seed=k` (a records replay server
  serves its recorded sample k); the reply's answer is read and classified.
- Verifier, `verifier="re-solve"`: the question alone, like a Worker; ACCEPT exactly when the
  reply's answer agrees with the current answer. This is the records simulation itself, so on a
  records replay pool every verdict, call and $ equals the records runner's.
- Verifier, `verifier="prompt"`: the TRINITY Verifier prompt (consortium.coord.trinity.protocol)
  with the question and the current answer; the reply's stated VERDICT decides (ACCEPT, or
  REVISE: not accepted); a reply that states none is read as a re-solve, as above. A records
  replay server serves recorded solutions, never a verdict, so there too the verdicts equal the
  simulation's; the $ differ by the longer prompt.
- A code Verifier calls no model: ACCEPT when the current program passes its docstring examples.
- Thinker: the TRINITY Thinker prompt with the work so far; its reply joins the transcript and
  carries no answer (a head trained on records never picks it: records cannot simulate it).
A failed call (a model past its recorded samples, an endpoint error) is no turn: the head
decides again without that model. A call the budget refuses stops the run on what was answered."""

from __future__ import annotations

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER, AnswerClasses
from consortium.coord.answers.reading import ReplyReader
from consortium.coord.answers.rules import Submit
from consortium.coord.answers.stages import MAX_DECISIONS, substitution_notes, unanswered
from consortium.coord.answers.trinity_turns import (
    THINKER,
    VERIFIER,
    WORKER,
    Call,
    TrinityTurns,
    Turn,
    current_index,
    resolve_verdict,
)
from consortium.coord.base import Outcome
from consortium.coord.trinity.head import ROLES as TRINITY_ROLES
from consortium.coord.trinity.protocol import role_messages
from consortium.coord.trinity.turns import TurnRecord
from consortium.core.answers import find_verdict
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError
from consortium.core.types import Message, user
from consortium.records.schema import AnswerKind
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

VERIFIERS = ("re-solve", "prompt")


class TrinityTeam:
    """`rule` over live calls, as the module says."""

    def __init__(
        self, rule: TrinityTurns, answer_kind: AnswerKind, name: str, verifier: str = "re-solve"
    ) -> None:
        if verifier not in VERIFIERS:
            raise CoordinatorError(f"verifier must be one of {', '.join(VERIFIERS)}")
        if rule.code != (answer_kind == "code"):
            raise CoordinatorError(f"policy {name!r}: its head was built for another answer kind")
        self.rule = rule
        self.answer_kind = answer_kind
        self.name = name
        self.verifier = verifier
        self._reader = ReplyReader(answer_kind)
        self.substituted: dict[str, str] = {}
        """Pool models standing in for the policy's (its name -> the pool's), said in notes."""

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        classes = AnswerClasses(self._reader.key, self._reader.same)
        turns: list[Turn] = []
        texts: list[str] = []
        failures: list[str] = []
        for _ in range(MAX_DECISIONS):
            decision = self.rule.decide(turns)
            if isinstance(decision, Submit):
                break
            try:
                turn, text = await self._carry_out(task, caller, decision, turns, texts, classes)
            except AgentError as error:
                turn, text = (
                    Turn(decision.model, decision.sample, decision.role, available=False),
                    "",
                )
                failures.append(f"{decision.model} sample {decision.sample}: {error}")
            except BudgetExceeded as error:
                failures.append(f"{decision.model}: refused by the budget: {error}")
                decision = Submit(current_index(turns), "budget hit")
                break
            turns.append(turn)
            texts.append(text)
        else:
            raise CoordinatorError(f"policy {self.name!r} did not submit an answer")
        notes = (
            f"stop: {decision.reason}",
            *(f"{t.role} {t.model}" for t in turns if t.available),
            *failures,
            *substitution_notes(self.substituted),
        )
        accepted = bool(turns) and turns[-1].role == VERIFIER and bool(turns[-1].verdict)
        if decision.index is None:
            if failures and not any(t.available for t in turns):
                all_refused = all("refused by the budget" in f for f in failures)
                raise unanswered(self.name, failures, all_refused)
            return Outcome("", notes=(*notes, "no answer to submit"), accepted=accepted)
        chosen = turns[decision.index]
        return Outcome(texts[decision.index], model=chosen.model, notes=notes, accepted=accepted)

    async def _carry_out(
        self,
        task: Task,
        caller: TaskCaller,
        call: Call,
        turns: list[Turn],
        texts: list[str],
        classes: AnswerClasses,
    ) -> tuple[Turn, str]:
        """The call made and read: its turn and its reply's text (AgentError when it failed)."""
        now = current_index(turns)
        if call.sample is None:  # a code Verifier: the current program's docstring examples
            verdict = now is not None and turns[now].checked
            return Turn(call.model, None, VERIFIER, verdict=verdict), ""
        step = sum(1 for t in turns if t.available) + 1
        messages = self._messages(task, call, turns, texts, now)
        completion = await caller.call(
            call.model, messages, role=call.role, turn=step, seed=call.sample
        )
        text = completion.text
        if call.role == THINKER:
            return Turn(call.model, call.sample, THINKER), text
        stated = find_verdict(text) if call.role == VERIFIER and self.verifier == "prompt" else None
        if stated is not None:
            return Turn(call.model, call.sample, VERIFIER, verdict=stated == "ACCEPT"), text
        (reading,) = await self._reader.read_all(task, [text])
        answer_class = classes.add(reading.answer)
        checked = reading.checked if reading.checked is not None else answer_class != NO_ANSWER
        resolved = resolve_verdict(turns, answer_class) if call.role == VERIFIER else None
        return Turn(call.model, call.sample, call.role, answer_class, checked, resolved), text

    def _messages(
        self, task: Task, call: Call, turns: list[Turn], texts: list[str], now: int | None
    ) -> list[Message]:
        if call.role == WORKER or (call.role == VERIFIER and self.verifier == "re-solve"):
            return [user(task.question)]
        if call.role == VERIFIER:
            shown = [now] if now is not None else []
        else:  # a Thinker reads the work so far
            shown = [i for i, t in enumerate(turns) if t.available]
        records = [self._record(n + 1, turns[i], texts[i]) for n, i in enumerate(shown)]
        return role_messages(call.role, task.question, records)

    def _record(self, index: int, turn: Turn, text: str) -> TurnRecord:
        verdict = None if turn.verdict is None else ("ACCEPT" if turn.verdict else "REVISE")
        return TurnRecord(
            index,
            turn.model,
            turn.role,
            text,
            verdict,
            1.0,
            self.rule.models.index(turn.model),
            TRINITY_ROLES.index(turn.role),
            np.zeros(0),
        )
