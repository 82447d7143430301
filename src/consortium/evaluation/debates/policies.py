"""The policies of when to talk, measured per question on a recorded debate's folder: each model's
first answer, the vote, the first answers' pick (never talk), the debate (the recorded protocol,
and with its ties to the stronger model), stop after turn k, the learned rule (`gate`). Each is
the debate's rule (`coord.debate.rule`) played on the recorded turns (`play`), as the live policy
plays it over the replay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from consortium.coord.debate.gate import TalkGate
from consortium.coord.debate.rule import DebateRule, Said, agreed
from consortium.coord.debate.transcript import Spoken
from consortium.evaluation.debates.play import Debated, play, turn_of


@dataclass
class Measured:
    """A policy's outcome on every question of a folder, in question order."""

    name: str
    correct: np.ndarray
    calls: np.ndarray
    cost: np.ndarray
    note: str = ""
    talked: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Whether it went past the first answers (a later turn was asked)."""


def first_turns(debated: Debated, speakers: Sequence[str]) -> list[Spoken]:
    return [
        Spoken(s, next(t.text for t in debated.turns if t.turn == 0 and t.model == s))
        for s in speakers
    ]


def disputed(debated: Debated, speakers: Sequence[str]) -> bool:
    """The first answers differ (as our grader read them)."""
    firsts = {t.model: t.answer for t in debated.turns if t.turn == 0}
    return not agreed([Said(s, firsts.get(s)) for s in speakers], speakers)


def single(model: str, questions: Sequence[Debated]) -> Measured:
    """The model's first answer alone: its turn-0 row."""
    turns = [next(t for t in q.turns if t.turn == 0 and t.model == model) for q in questions]
    return Measured(
        f"{model} alone",
        np.array([t.correct for t in turns]),
        np.ones(len(turns)),
        np.array([t.cost for t in turns]),
    )


def stronger_on_train(speakers: Sequence[str], questions: Sequence[Debated]) -> str:
    """The model whose first answers are right most often on the train split (ties: the first
    listed)."""
    train = [q for q in questions if q.split == "train"]
    accuracy = {m: float(single(m, train).correct.mean()) if train else 0.0 for m in speakers}
    return max(speakers, key=lambda m: accuracy[m])


def _talks(gate: TalkGate, debated: Debated, rule: DebateRule) -> bool:
    """As the live policy asks its gate: only once the first answers differ."""
    if not disputed(debated, rule.speakers):
        return True
    return gate.talks(debated.question, first_turns(debated, rule.speakers))


def measure(
    name: str,
    rule: DebateRule,
    questions: Sequence[Debated],
    gate: TalkGate | None = None,
    note: str = "",
) -> Measured:
    """The rule (and, once the first answers differ, the gate) on every question."""
    correct, calls, cost, talked = [], [], [], []
    n = len(rule.speakers)
    for debated in questions:
        chosen = rule
        if gate is not None and not _talks(gate, debated, rule):
            chosen = replace(rule, stop_after=0, pick="lead")
        played = play(chosen, debated)
        used = [turn_of(debated, chosen, i) for i in range(played.used)]
        final = None if played.final is None else used[played.final]
        correct.append(bool(final and final.correct))
        calls.append(played.calls)
        cost.append(sum(t.cost for t in used))
        talked.append(played.used > n or played.refused)
    return Measured(
        name, np.array(correct), np.array(calls), np.array(cost), note, np.array(talked)
    )
