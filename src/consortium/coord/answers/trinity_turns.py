"""Multi-turn TRINITY over answers: each turn a linear head reads the transcript so far and picks
a model and a role, or submits the current answer. One decision function, `TrinityTurns.decide`,
played on recorded samples (consortium.evaluation.recorded.episodes) and live (trinity_live).

Roles: a Worker's answer joins the transcript; a Verifier judges the current answer (ACCEPT or
not; how a verdict is reached is the runner's, see `resolve_verdict`); a Thinker (live only)
adds a plan and no answer. A code Verifier calls no model: it runs the current program's
docstring examples (records only).

Answer rule: the current answer is the most common Worker answer among those that pass their
check (programs: the docstring examples; otherwise: an answer is present), or among all answers
when none passes (ties: the most recent); the submitted answer is the current answer.

Stop (`stop`): "accept", the paper's rule, stops at a Verifier's ACCEPT or after `max_turns`;
"submit" adds a submit action the head may take whenever there is a current answer, after one
call included (ACCEPT and `max_turns` still stop). Both also stop when no model is left.

What a model may be asked is known from the transcript alone: at most `samples[model]` times,
and never again after a call to it failed (a records pool past its last recorded sample). A
failed call is remembered but is no turn: the head decides again, without that model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coord.answers.rules import Submit

WORKER, VERIFIER, THINKER, SUBMIT = "worker", "verifier", "thinker", "submit"
ROLES = (WORKER, VERIFIER, THINKER)
STOPS = ("accept", "submit")
BASE_FEATURES = 8
"""Features before the turn one-hot and the per-model ones (see `TrinityTurns.features`)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One decision carried out: who was asked in which role, and what came back."""

    model: str
    sample: int | None
    """The model's sample index (the seed a live call sends); None: no model call (a code
    Verifier's docstring check)."""
    role: str
    answer_class: int = NO_ANSWER
    """A Worker's answer (or a re-solving Verifier's) as an agreement class."""
    checked: bool = False
    """The answer passed its check (an answer is present; programs: the docstring examples)."""
    verdict: bool | None = None
    """A Verifier's: ACCEPT (True) or not."""
    available: bool = True
    """False: the call failed or there was no such sample; remembered, but no turn."""


@dataclass(frozen=True, slots=True)
class Call:
    """Ask `model` (its sample `sample`) in `role`."""

    model: str
    sample: int | None
    role: str


TurnDecision = Call | Submit
TextReader = Callable[[Sequence[Turn]], np.ndarray]
"""The transcript's text feature (the question and the Worker answers so far), as the runner
reads it; only a head with `text_dims` > 0 asks for it."""


def current_index(turns: Sequence[Turn]) -> int | None:
    """The index of the current answer's turn (the answer rule above), or None."""
    answered = [
        i
        for i, t in enumerate(turns)
        if t.available and t.role == WORKER and t.answer_class != NO_ANSWER
    ]
    if not answered:
        return None
    answered = [i for i in answered if turns[i].checked] or answered
    counts: dict[int, int] = {}
    latest: dict[int, int] = {}
    for i in answered:
        c = turns[i].answer_class
        counts[c] = counts.get(c, 0) + 1
        latest[c] = i
    winner = max(counts, key=lambda c: (counts[c], latest[c]))
    return next(i for i in reversed(answered) if turns[i].answer_class == winner)


def resolve_verdict(turns: Sequence[Turn], answer_class: int) -> bool:
    """A re-solving Verifier's verdict: ACCEPT exactly when its answer agrees with the current
    one (MoT's consistency test; the records simulation, and a live reply stating no verdict)."""
    now = current_index(turns)
    return now is not None and answer_class != NO_ANSWER and answer_class == turns[now].answer_class


@dataclass(frozen=True)
class Choice:
    """A decision with what the head read and its two softmaxes (for the REINFORCE gradient);
    `features` is None when the run stopped without consulting the head."""

    decision: TurnDecision
    features: np.ndarray | None = None
    p_model: np.ndarray | None = None
    p_action: np.ndarray | None = None
    model_index: int = 0
    action_index: int = 0


def _softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits, -np.inf)
    z = z - z[mask].max()
    p = np.exp(z)
    out: np.ndarray = p / p.sum()
    return out


class TrinityTurns:
    """The head z = W·x (no bias; x carries a constant) with one row per model and one per
    action (`roles`, then submit when `stop` is "submit"); two softmaxes, model and action,
    argmax when deployed. `samples[model]`: how many times a model may be asked."""

    kind = "trinity"

    def __init__(
        self,
        models: Sequence[str],
        weights: np.ndarray | Sequence[Sequence[float]] | None,
        samples: Mapping[str, int],
        *,
        max_turns: int = 5,
        roles: Sequence[str] = (WORKER, VERIFIER),
        stop: str = "accept",
        code: bool = False,
        text_dims: int = 0,
    ) -> None:
        if stop not in STOPS:
            raise ValueError(f"stop must be one of {', '.join(STOPS)}, got {stop!r}")
        if WORKER not in roles or not set(roles) <= set(ROLES) or len(set(roles)) < len(roles):
            raise ValueError(f"roles must include worker and be among {', '.join(ROLES)}")
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.models = tuple(models)
        self.samples = {m: int(samples.get(m, 1)) for m in self.models}
        if any(count < 1 for count in self.samples.values()):
            raise ValueError("every sample count must be at least 1")
        self.max_turns = max_turns
        self.roles = tuple(roles)
        self.stop = stop
        self.code = code
        self.text_dims = text_dims
        self.actions = (*self.roles, SUBMIT) if stop == "submit" else self.roles
        self.n_models = len(self.models)
        self.n_structured = BASE_FEATURES + max_turns + 3 * self.n_models
        self.n_features = self.n_structured + text_dims
        shape = (self.n_models + len(self.actions), self.n_features)
        self.weights = (
            np.zeros(shape) if weights is None else np.asarray(weights, np.float64).reshape(shape)
        )
        self._index = {m: i for i, m in enumerate(self.models)}

    def with_weights(self, weights: np.ndarray) -> TrinityTurns:
        return TrinityTurns(
            self.models,
            weights,
            self.samples,
            max_turns=self.max_turns,
            roles=self.roles,
            stop=self.stop,
            code=self.code,
            text_dims=self.text_dims,
        )

    def asked(self, turns: Sequence[Turn], model: str) -> int:
        """How many times `model` was asked (its next sample index)."""
        return sum(1 for t in turns if t.model == model and t.sample is not None)

    def available(self, turns: Sequence[Turn]) -> np.ndarray:
        """[m]: model m may still be asked (under its sample count, no failed call)."""
        asks = [0] * self.n_models
        failed = [False] * self.n_models
        for t in turns:
            m = self._index[t.model]
            if t.sample is not None:
                asks[m] += 1
            if not t.available:
                failed[m] = True
        return np.array(
            [asks[m] < self.samples[name] and not failed[m] for m, name in enumerate(self.models)],
            bool,
        )

    def features(self, turns: Sequence[Turn], text: TextReader | None = None) -> np.ndarray:
        """The declared structured features: a constant, the Worker answers so far, the current
        answer's share, presence and check, how many distinct answers, whether the last turn was
        a rejecting Verifier; the turn one-hot; per model: answered as Worker, agrees with the
        current answer, may still be asked. With `text_dims`, then the transcript's text."""
        x = np.zeros(self.n_features)
        x[0] = 1.0
        done = [t for t in turns if t.available]
        workers = [t for t in done if t.role == WORKER]
        now = current_index(turns)
        current = turns[now] if now is not None else None
        classes = [t.answer_class for t in workers if t.answer_class != NO_ANSWER]
        x[1] = len(workers) / self.max_turns
        if current is not None:
            share = classes.count(current.answer_class)
            x[2] = 1.0
            x[3] = share / max(1, len(workers))
            x[4] = 1.0 if current.checked else 0.0
            x[5] = share / self.max_turns
        x[6] = len(set(classes)) / self.max_turns
        x[7] = 1.0 if done and done[-1].role == VERIFIER and not done[-1].verdict else 0.0
        x[BASE_FEATURES + min(len(done), self.max_turns - 1)] = 1.0
        base = BASE_FEATURES + self.max_turns
        for t in workers:
            m = self._index[t.model]
            x[base + 3 * m] = 1.0
            if current is not None and t.answer_class == current.answer_class:
                x[base + 3 * m + 1] = 1.0
        for m, left in enumerate(self.available(turns)):
            x[base + 3 * m + 2] = 1.0 if left else 0.0
        if self.text_dims:
            if text is None:
                raise ValueError("this head reads the transcript's text: give a text reader")
            x[self.n_structured :] = text(turns)
        return x

    def decide(self, turns: Sequence[Turn], text: TextReader | None = None) -> TurnDecision:
        """The next call, or Submit(index of the current answer's turn, why)."""
        return self.choose(turns, text).decision

    def stopped(self, turns: Sequence[Turn]) -> Submit | None:
        """The stop rule, before the head is read: a Verifier's ACCEPT, `max_turns` turns, or
        no model left to ask; None: the head decides."""
        done = [t for t in turns if t.available]
        if done and done[-1].role == VERIFIER and done[-1].verdict:
            reason = f"accepted by {done[-1].model} after {len(done)} turns"
            return Submit(current_index(turns), reason)
        if len(done) >= self.max_turns:
            return Submit(current_index(turns), f"{self.max_turns} turns")
        if not self.available(turns).any():
            return Submit(current_index(turns), "no model left to ask")
        return None

    def choose(
        self,
        turns: Sequence[Turn],
        text: TextReader | None = None,
        rng: np.random.Generator | None = None,
    ) -> Choice:
        """`decide` with what the head read; `rng`: sample the choices (training) instead of
        the argmax (deployed)."""
        stopped = self.stopped(turns)
        if stopped is not None:
            return Choice(stopped)
        done = [t for t in turns if t.available]
        now = current_index(turns)
        available = self.available(turns)
        x = self.features(turns, text)
        z = self.weights @ x
        model_mask = np.ones(self.n_models, bool) if self.code else available
        has_answer = now is not None
        action_mask = np.array([a not in (VERIFIER, SUBMIT) or has_answer for a in self.actions])
        p_model = _softmax(z[: self.n_models], model_mask)
        p_action = _softmax(z[self.n_models :], action_mask)
        if rng is None:
            model, action = int(np.argmax(p_model)), int(np.argmax(p_action))
        else:
            model = int(rng.choice(self.n_models, p=p_model))
            action = int(rng.choice(len(self.actions), p=p_action))
        role = self.actions[action]
        if self.code and role == WORKER and not available[model]:
            # a code Verifier calls no model, so every model row stays open for it
            left = np.flatnonzero(available)
            model = int(left[np.argmax(p_model[left])])
        name = self.models[model]
        decision: TurnDecision
        if role == SUBMIT:
            decision = Submit(now, f"submitted after {len(done)} turns")
        elif role == VERIFIER and self.code:
            decision = Call(name, None, VERIFIER)
        else:
            decision = Call(name, self.asked(turns, name), role)
        return Choice(decision, x, p_model, p_action, model, action)

    def params(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "weights": [[float(w) for w in row] for row in self.weights],
            "samples": dict(self.samples),
            "max_turns": self.max_turns,
            "roles": list(self.roles),
            "stop": self.stop,
            "features": "structured" + (f"+text{self.text_dims}" if self.text_dims else ""),
        }

    def asks(self) -> tuple[str, ...]:
        return self.models


def trinity_from(params: Mapping[str, Any], code: bool = False) -> TrinityTurns:
    """The head a policy folder's params describe (KeyError / TypeError / ValueError when they
    do not build one)."""
    if params.get("features", "structured") != "structured":
        raise ValueError("a live TRINITY reads the structured features only")
    given = params["samples"]
    if not isinstance(given, dict):
        raise TypeError("samples must map each model to how many times it may be asked")
    models = [str(m) for m in params["models"]]
    if len(set(models)) != len(models):
        raise ValueError("models names a model twice")
    rows = np.asarray(params["weights"], dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError("weights must be a matrix: one row per model and per action")
    rule = TrinityTurns(
        models,
        None,
        {str(m): int(c) for m, c in given.items()},
        max_turns=int(params["max_turns"]),
        roles=tuple(str(r) for r in params["roles"]),
        stop=str(params.get("stop", "accept")),
        code=code,
    )
    if rows.shape != rule.weights.shape:
        raise ValueError(f"weights must be {rule.weights.shape[0]}×{rule.weights.shape[1]}")
    return rule.with_weights(rows)
