"""Multi-turn TRINITY on recorded outputs, as a declared simulation of the roles.

Each turn the head reads the transcript's features and picks a model and a role:
- Worker: the model's next recorded sample (the k-th ask of a model gets its k-th sample, as the
  replay server serves it) joins the transcript as an answer.
- Verifier: re-solves (the model's next recorded sample) and ACCEPTs exactly when its answer agrees
  with the current answer (MoT's consistency test); for code it instead runs the current program on
  its docstring examples in the sandbox (no model call, no $) and ACCEPTs when they pass.
- Thinker: no replay simulation exists; it is left out of the action space.
The run stops at ACCEPT or after `max_turns`. Answer rule (declared): the current answer is the
most common answer among the Worker answers so far that pass their check (for code: the
docstring examples; otherwise: an answer is present), or among all answers when none passes
(ties: the most recent); the final answer is the current answer when the run stops. Every turn
is charged its sample's recorded $ and tokens, rejected ones included. A model with no sample
left cannot be picked (masked)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coordinate.outcomes import OutcomeTable, Sample
from consortium.coordinate.transcript_text import TranscriptText

WORKER, VERIFIER = 0, 1
ROLES = ("Worker", "Verifier")


@dataclass
class Transcript:
    """The state of one question's run."""

    q: int
    used: list[int]
    workers: list[tuple[int, Sample]] = field(default_factory=list)
    asked: list[tuple[int, int]] = field(default_factory=list)
    """(model, sample index) of each Worker answer, in the order of `workers`."""
    turns: list[tuple[int, int, bool]] = field(default_factory=list)
    """(model, role, accepted) per turn."""
    cost: float = 0.0
    tokens: int = 0
    calls: int = 0
    accepted: bool = False
    rejected_last: bool = False

    def current(self) -> Sample | None:
        answered = [(i, s) for i, (_, s) in enumerate(self.workers) if s.answer_class != NO_ANSWER]
        if not answered:
            return None
        # a program that fails its docstring examples is not submitted while one that passes is
        answered = [(i, s) for i, s in answered if s.checked] or answered
        counts: dict[int, int] = {}
        latest: dict[int, int] = {}
        for i, s in answered:
            counts[s.answer_class] = counts.get(s.answer_class, 0) + 1
            latest[s.answer_class] = i
        winner = max(counts, key=lambda c: (counts[c], latest[c]))
        return next(s for i, s in reversed(answered) if s.answer_class == winner)


class Episodes:
    """The simulation over one outcome table."""

    def __init__(
        self, table: OutcomeTable, max_turns: int = 5, text: TranscriptText | None = None
    ) -> None:
        self.table = table
        self.max_turns = max_turns
        self.text = text
        """With it, the head also reads the transcript's text feature (transcript_text)."""
        self.code = table.answer_kind == "code"
        self.n_models = table.n_models
        self.n_structured = 8 + max_turns + 3 * self.n_models
        self.n_features = self.n_structured + (text.dims if text is not None else 0)

    def start(self, q: int) -> Transcript:
        return Transcript(q, [0] * self.n_models)

    def available(self, t: Transcript) -> np.ndarray:
        return np.array(
            [t.used[m] < len(self.table.samples[t.q][m]) for m in range(self.n_models)], bool
        )

    def features(self, t: Transcript) -> np.ndarray:
        """The declared structured features of the transcript (the answers so far): a constant,
        the turn, how many Worker answers, the current answer's share and presence and check, how
        many distinct answers, whether the last Verifier rejected; per model: answered as Worker,
        agrees with the current answer, has samples left. With `text`, then the transcript's text
        feature (the question and the Worker answers so far)."""
        x = np.zeros(self.n_features)
        x[0] = 1.0
        current = t.current()
        classes = [s.answer_class for _, s in t.workers if s.answer_class != NO_ANSWER]
        x[1] = len(t.workers) / self.max_turns
        if current is not None:
            x[2] = 1.0
            x[3] = classes.count(current.answer_class) / max(1, len(t.workers))
            x[4] = 1.0 if current.checked else 0.0
            x[5] = classes.count(current.answer_class) / self.max_turns
        x[6] = len(set(classes)) / self.max_turns
        x[7] = 1.0 if t.rejected_last else 0.0
        x[8 + min(len(t.turns), self.max_turns - 1)] = 1.0
        base = 8 + self.max_turns
        for m, s in t.workers:
            x[base + 3 * m] = 1.0
            if current is not None and s.answer_class == current.answer_class:
                x[base + 3 * m + 1] = 1.0
        for m, left in enumerate(self.available(t)):
            x[base + 3 * m + 2] = 1.0 if left else 0.0
        if self.text is not None:
            x[self.n_structured :] = self.text.features(t.q, t.asked)
        return x

    def role_mask(self, t: Transcript) -> np.ndarray:
        """A Verifier needs a current answer to verify."""
        return np.array([True, t.current() is not None])

    def step(self, t: Transcript, model: int, role: int) -> None:
        if role == VERIFIER and self.code:
            current = t.current()
            t.accepted = bool(current is not None and current.checked)
            t.turns.append((model, role, t.accepted))
            t.rejected_last = not t.accepted
            return
        sample = self.table.samples[t.q][model][t.used[model]]
        t.used[model] += 1
        t.cost += sample.cost_usd
        t.tokens += sample.tokens
        t.calls += 1
        if role == WORKER:
            t.workers.append((model, sample))
            t.asked.append((model, t.used[model] - 1))
            t.turns.append((model, role, False))
            t.rejected_last = False
            return
        current = t.current()
        t.accepted = bool(
            current is not None
            and sample.answer_class != NO_ANSWER
            and sample.answer_class == current.answer_class
        )
        t.turns.append((model, role, t.accepted))
        t.rejected_last = not t.accepted

    def done(self, t: Transcript) -> bool:
        return t.accepted or len(t.turns) >= self.max_turns or not self.available(t).any()

    def correct(self, t: Transcript) -> bool:
        current = t.current()
        return bool(current is not None and current.correct)
