"""One recorded debate's folder measured: every policy of when to talk on the test split, with
paired bootstrap intervals against the best single model, the vote and the first answers' pick
(`evaluation.recorded.selection.paired_bootstrap`), the give-in rates of each model, and the
learned rule fitted on the train split. Everything chosen (the stronger model, the rule) is
chosen on train."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from consortium.coord.debate.rule import DebateRule
from consortium.evaluation.debates.gate_fit import fit_gate
from consortium.evaluation.debates.play import Debated, debated_questions, play, turn_of
from consortium.evaluation.debates.policies import (
    Measured,
    disputed,
    measure,
    single,
    stronger_on_train,
)
from consortium.evaluation.recorded.selection import Interval, paired_bootstrap
from consortium.records.store import Records

RECORDED = "debate (recorded protocol)"
DEBATE = "debate, ties to the stronger (always talk)"
PICK = "pick the stronger: its first answer unless all agree (never talk)"
VOTE = "vote of the first answers, ties to the first stated"
GATE = "learned rule of when to talk"


@dataclass
class Row:
    name: str
    accuracy: float
    disputed_accuracy: float
    calls: float
    cost: float
    talked: float
    """Share of the test questions it went past the first answers on (%)."""
    versus: dict[str, Interval] = field(default_factory=dict)
    note: str = ""


@dataclass
class GiveIn:
    model: str
    right_first: int
    talked_out: int
    """Of its right first answers, those it no longer held at the end of the debate."""
    wrong_first: int
    talked_into: int
    """Of its wrong first answers, those it had changed to the right one by the end."""


@dataclass
class FolderFigures:
    folder: str
    dataset: str
    run: str
    speakers: list[str]
    max_rounds: int
    test: int
    test_disputed: int
    best_single: str
    rows: list[Row]
    give_in: list[GiveIn]
    gate_train: dict[str, float]
    train_accuracy: dict[str, float] = field(default_factory=dict)
    gate_versus: dict[str, Interval] = field(default_factory=dict)
    """The learned rule against always and never talking (test split)."""
    http: dict[str, int] = field(default_factory=dict)
    """The recorded debate over the HTTP replay: questions compared, equal, left out (their
    text asked twice); empty when not run (`consortium debates report --http`)."""

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.name == name)


def _row(measured: Measured, test: np.ndarray, asked: np.ndarray, refs: dict[str, Measured]) -> Row:
    correct = measured.correct[test]
    return Row(
        measured.name,
        100 * float(correct.mean()),
        100 * float(measured.correct[test & asked].mean()) if (test & asked).any() else 0.0,
        float(measured.calls[test].mean()),
        float(measured.cost[test].mean()),
        100 * float(measured.talked[test].mean()) if measured.talked.size else 0.0,
        {
            label: paired_bootstrap(correct, ref.correct[test])
            for label, ref in refs.items()
            if ref is not measured
        },
        measured.note,
    )


def _give_in(rule: DebateRule, questions: list[Debated]) -> list[GiveIn]:
    """Per model, over the debates of `questions`: its first answer against its last."""
    counts = {m: [0, 0, 0, 0] for m in rule.speakers}
    for q in questions:
        played = play(rule, q)
        turns = [turn_of(q, rule, i) for i in range(played.used)]
        for model in rule.speakers:
            mine = [t for t in turns if t.model == model]
            c = counts[model]
            if mine[0].correct:
                c[0] += 1
                c[1] += not mine[-1].correct
            else:
                c[2] += 1
                c[3] += mine[-1].correct
    return [GiveIn(m, *c) for m, c in counts.items()]


def _oracle(never: Measured, always: Measured) -> Measured:
    """Talk exactly where talking turns a wrong pick right (hindsight): the ceiling of a rule."""
    talk = always.correct & ~never.correct
    return Measured(
        "oracle: talk exactly where it pays (hindsight)",
        always.correct | never.correct,
        np.where(talk, always.calls, never.calls),
        np.where(talk, always.cost, never.cost),
        talked=talk,
    )


def measure_folder(loaded: Records) -> FolderFigures:
    """Every policy of when to talk on one folder (its protocol's speakers and cap)."""
    protocol = loaded.manifest.protocol
    assert protocol is not None
    questions = debated_questions(loaded)
    speakers = tuple(protocol.speakers)
    test = np.array([q.split == "test" for q in questions])
    asked = np.array([disputed(q, speakers) for q in questions])
    singles = {m: single(m, questions) for m in speakers}
    train_accuracy = {m: 100 * float(s.correct[~test].mean()) for m, s in singles.items()}
    stronger = stronger_on_train(speakers, questions)
    protocol_rule = DebateRule(speakers, protocol.max_rounds)
    rule = replace(protocol_rule, lead=stronger)
    train = [q for q, t in zip(questions, test, strict=True) if not t]
    gate, gate_train = fit_gate(rule, train)
    never = measure(PICK, replace(rule, stop_after=0, pick="lead"), questions)
    always = measure(DEBATE, rule, questions)
    gated = measure(GATE, rule, questions, gate, note=f"threshold {gate.threshold:g}, on train")
    policies = [
        *singles.values(),
        measure(VOTE, replace(protocol_rule, stop_after=0), questions),
        never,
        measure(RECORDED, protocol_rule, questions, note="the source's rule"),
        always,
        *(
            measure(f"stop after turn {k}", replace(rule, stop_after=k), questions)
            for k in range(1, protocol.max_rounds)
        ),
        gated,
        _oracle(never, always),
    ]
    refs = {"best single": singles[stronger], "vote": policies[len(speakers)], "pick": never}
    rows = [_row(m, test, asked, refs) for m in policies]
    versus = {
        "always": paired_bootstrap(gated.correct[test], always.correct[test]),
        "never": paired_bootstrap(gated.correct[test], never.correct[test]),
    }
    return FolderFigures(
        loaded.folder.name,
        loaded.manifest.dataset,
        protocol.run,
        list(speakers),
        protocol.max_rounds,
        int(test.sum()),
        int((test & asked).sum()),
        stronger,
        rows,
        _give_in(
            protocol_rule, [q for q, t, a in zip(questions, test, asked, strict=True) if t and a]
        ),
        gate_train,
        train_accuracy,
        versus,
    )
