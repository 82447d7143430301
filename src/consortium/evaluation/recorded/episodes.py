"""Multi-turn TRINITY played on recorded outputs: the records runner of the one decision function
(`consortium.coord.answers.trinity_turns.TrinityTurns`), with the roles as declared simulations.

- Worker: the model's next recorded sample (the k-th ask of a model gets its k-th sample, as the
  replay server serves it) joins the transcript as an answer.
- Verifier: re-solves (the model's next recorded sample) and ACCEPTs exactly when its answer
  agrees with the current answer (MoT's consistency test; `resolve_verdict`); for code it instead
  runs the current program on its docstring examples in the sandbox (no model call, no $) and
  ACCEPTs when they pass.
- Thinker: no replay simulation exists; a head that may pick it is refused here.
An ask past a model's last recorded sample of the question fails, as the replay server answers
it (samples exhausted): remembered, not charged, no turn (the head decides again without that
model). Every answered call is charged its sample's recorded $ and tokens, rejected ones
included. The answer rule and the stop rule are the decision function's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from consortium.coord.answers.rules import Submit
from consortium.coord.answers.stages import MAX_DECISIONS
from consortium.coord.answers.trinity_turns import (
    THINKER,
    Call,
    TextReader,
    TrinityTurns,
    Turn,
    current_index,
    resolve_verdict,
)
from consortium.coord.answers.trinity_turns import VERIFIER as VERIFIER_ROLE
from consortium.coord.answers.trinity_turns import WORKER as WORKER_ROLE
from consortium.evaluation.recorded.outcomes import OutcomeTable, Sample
from consortium.evaluation.recorded.runs import PolicyRun, new_run
from consortium.evaluation.recorded.transcript_text import TranscriptText

ROLE_NAMES = (WORKER_ROLE, VERIFIER_ROLE)
"""The role rows a head trained on records has, in order (a Thinker has no simulation)."""
WORKER, VERIFIER = 0, 1
"""The two roles' row indices in ROLE_NAMES (what `Episodes.step` takes)."""


@dataclass
class Transcript:
    """One question's run: the turns as the decision function reads them, and what was paid."""

    q: int
    table: OutcomeTable
    log: list[Turn] = field(default_factory=list)
    cost: float = 0.0
    tokens: int = 0
    calls: int = 0
    submitted: Submit | None = None

    def _done(self) -> list[Turn]:
        return [t for t in self.log if t.available]

    @property
    def accepted(self) -> bool:
        done = self._done()
        return bool(done and done[-1].role == VERIFIER_ROLE and done[-1].verdict)

    @property
    def rejected_last(self) -> bool:
        done = self._done()
        return bool(done and done[-1].role == VERIFIER_ROLE and not done[-1].verdict)

    @property
    def turns(self) -> list[tuple[int, int, bool]]:
        """(model, role row, accepted) per turn."""
        models = self.table.models
        return [
            (models.index(t.model), ROLE_NAMES.index(t.role), bool(t.verdict)) for t in self._done()
        ]

    @property
    def used(self) -> list[int]:
        """[m]: how many of model m's samples were asked for."""
        return [
            sum(1 for t in self.log if t.model == name and t.sample is not None)
            for name in self.table.models
        ]

    @property
    def asked(self) -> list[tuple[int, int]]:
        """(model, sample index) of each Worker answer, in order."""
        models = self.table.models
        return [
            (models.index(t.model), t.sample or 0) for t in self._done() if t.role == WORKER_ROLE
        ]

    def sample(self, turn: Turn) -> Sample:
        return self.table.samples[self.q][self.table.models.index(turn.model)][turn.sample or 0]

    def current(self) -> Sample | None:
        now = current_index(self.log)
        return None if now is None else self.sample(self.log[now])

    def answer(self) -> Sample | None:
        """The submitted answer's sample (the current answer when the run has not submitted)."""
        index = self.submitted.index if self.submitted is not None else current_index(self.log)
        return None if index is None else self.sample(self.log[index])


class Episodes:
    """The records side of TRINITY over one outcome table: each model may be asked as many times
    as its most-sampled question recorded; `stop` and `max_turns` are the head's."""

    def __init__(
        self,
        table: OutcomeTable,
        max_turns: int = 5,
        text: TranscriptText | None = None,
        stop: str = "accept",
    ) -> None:
        self.table = table
        self.text = text
        """With it, the head also reads the transcript's text feature (transcript_text)."""
        self.code = table.answer_kind == "code"
        self.n_models = table.n_models
        self.index = {name: m for m, name in enumerate(table.models)}
        limits = {
            name: max(1, max(len(row[m]) for row in table.samples))
            for m, name in enumerate(table.models)
        }
        self.head = TrinityTurns(
            table.models,
            None,
            limits,
            max_turns=max_turns,
            roles=ROLE_NAMES,
            stop=stop,
            code=self.code,
            text_dims=text.dims if text is not None else 0,
        )
        self.n_structured = self.head.n_structured
        self.n_features = self.head.n_features

    @property
    def n_weights(self) -> int:
        return int(self.head.weights.size)

    def rule(self, weights: np.ndarray) -> TrinityTurns:
        return self.head.with_weights(weights)

    def start(self, q: int) -> Transcript:
        return Transcript(q, self.table)

    def reader(self, q: int) -> TextReader | None:
        text = self.text
        if text is None:
            return None
        index = self.index

        def read(turns: Sequence[Turn]) -> np.ndarray:
            workers = [t for t in turns if t.available and t.role == WORKER_ROLE]
            return text.features(q, [(index[t.model], t.sample or 0) for t in workers])

        return read

    def available(self, t: Transcript) -> np.ndarray:
        return self.head.available(t.log)

    def features(self, t: Transcript) -> np.ndarray:
        return self.head.features(t.log, self.reader(t.q))

    def step(self, t: Transcript, model: int, role: int) -> None:
        """Carry out (model, role row) as the head would ask it."""
        name = self.table.models[model]
        if role == VERIFIER and self.code:
            self.apply(t, Call(name, None, VERIFIER_ROLE))
        else:
            self.apply(t, Call(name, self.head.asked(t.log, name), ROLE_NAMES[role]))

    def apply(self, t: Transcript, call: Call) -> Turn:
        """The call on the recorded samples: its turn joins the transcript (and is paid)."""
        if call.role == THINKER:
            raise ValueError("a Thinker has no replay simulation; train without it")
        if call.sample is None:  # a code Verifier: the current program's docstring examples
            current = t.current()
            turn = Turn(call.model, None, VERIFIER_ROLE, verdict=bool(current and current.checked))
            t.log.append(turn)
            return turn
        recorded = self.table.samples[t.q][self.index[call.model]]
        if call.sample >= len(recorded):
            turn = Turn(call.model, call.sample, call.role, available=False)
            t.log.append(turn)
            return turn
        sample = recorded[call.sample]
        t.cost += sample.cost_usd
        t.tokens += sample.tokens
        t.calls += 1
        resolves = call.role == VERIFIER_ROLE
        verdict = resolve_verdict(t.log, sample.answer_class) if resolves else None
        turn = Turn(
            call.model, call.sample, call.role, sample.answer_class, sample.checked, verdict
        )
        t.log.append(turn)
        return turn

    def done(self, t: Transcript) -> bool:
        return self.head.stopped(t.log) is not None

    def correct(self, t: Transcript) -> bool:
        answer = t.answer()
        return bool(answer is not None and answer.correct)

    def play(self, rule: TrinityTurns, q: int) -> Transcript:
        """The rule's decisions on question q's recorded samples, until it submits."""
        t = self.start(q)
        reader = self.reader(q)
        for _ in range(MAX_DECISIONS):
            decision = rule.decide(t.log, reader)
            if isinstance(decision, Submit):
                t.submitted = decision
                return t
            self.apply(t, decision)
        raise RuntimeError(f"TRINITY asked {MAX_DECISIONS} times without submitting")


def run_trinity(episodes: Episodes, rule: TrinityTurns, name: str, note: str = "") -> PolicyRun:
    """The rule over every question of the table (the report's TRINITY rows)."""
    table = episodes.table
    run = new_run(name, table, "trinity", note)
    for q in range(table.n_questions):
        t = episodes.play(rule, q)
        run.correct[q] = episodes.correct(t)
        run.cost[q] = t.cost
        run.tokens[q] = t.tokens
        run.calls[q] = t.calls
    return run
