"""A rule of `consortium.coord.answers.rules` played on recorded samples: the records runner.

The same rule object a live coordinator calls decides here, question by question, on the
recorded samples' agreement classes; a sample past the last recorded one is unavailable, as a
records replay server answers it (samples exhausted). So the report's figure for a rule is the
figure of the policy that `ask`, `eval` and `serve` run."""

from __future__ import annotations

from dataclasses import dataclass

from consortium.coord.answers.rules import NO_ANSWER, Ask, Rule, Seen
from consortium.coord.answers.stages import MAX_DECISIONS
from consortium.evaluation.recorded.outcomes import OutcomeTable, Sample
from consortium.evaluation.recorded.runs import Asked, PolicyRun, charge, new_run


@dataclass(frozen=True)
class Played:
    seen: list[Seen]
    chosen: int | None
    reason: str


def play(rule: Rule, table: OutcomeTable, q: int) -> Played:
    """The rule's decisions on question q's recorded samples, until it submits."""
    index = {name: m for m, name in enumerate(table.models)}
    seen: list[Seen] = []
    for _ in range(MAX_DECISIONS):
        decision = rule.decide(seen)
        if not isinstance(decision, Ask):
            return Played(seen, decision.index, decision.reason)
        for model, k in decision.calls:
            recorded = table.samples[q][index[model]]
            if k < len(recorded):
                seen.append(_seen(model, k, recorded[k]))
            else:
                seen.append(Seen(model, k, NO_ANSWER, available=False))
    raise RuntimeError(f"rule {rule.kind} asked {MAX_DECISIONS} times without submitting")


def seen_of(table: OutcomeTable, q: int, asked: Asked) -> list[Seen]:
    """Recorded samples already asked for, as a rule sees them."""
    return [_seen(table.models[m], k, table.samples[q][m][k]) for m, k in asked]


def _seen(model: str, k: int, sample: Sample) -> Seen:
    return Seen(model, k, sample.answer_class, checked=sample.checked)


def asked_of(table: OutcomeTable, played: Played) -> Asked:
    index = {name: m for m, name in enumerate(table.models)}
    return [(index[s.model], s.sample) for s in played.seen if s.available]


def answer_of(table: OutcomeTable, q: int, played: Played) -> Sample | None:
    if played.chosen is None:
        return None
    entry = played.seen[played.chosen]
    return table.samples[q][table.models.index(entry.model)][entry.sample]


def run_rule(table: OutcomeTable, rule: Rule, name: str, family: str = "baseline") -> PolicyRun:
    """The rule on every question of the table: verdict of the sample it submits, and every
    sample it was given paid for."""
    run = new_run(name, table, family)
    for q in range(table.n_questions):
        played = play(rule, table, q)
        asked = asked_of(table, played)
        charge(run, table, q, asked, answer_of(table, q, played), attempted=len(played.seen))
    return run
