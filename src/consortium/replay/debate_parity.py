"""The recorded debate over HTTP against the recorded debate in process: the `debate` policy, run
through `eval` against the replay server of a records folder, must give per question the outcome
the rule gives on the recorded turns (`evaluation.debates.play`): the submitted text, its
verdict, the calls. Questions whose text the folder holds twice are left out (the server finds a
question by its text, so it serves one of them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.debate.rule import DebateRule
from consortium.coord.debate.spec import rule_spec
from consortium.evaluation.debates.play import debated_questions, play, turn_of
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.records.errors import RecordsError
from consortium.records.store import load_records
from consortium.replay.launch import ReplayServerProcess


@dataclass(frozen=True)
class Parity:
    folder: str
    compared: int
    equal: int
    repeated: int
    """Questions left out: their text is asked twice in the folder."""
    differ: tuple[tuple[str, object, object], ...]
    """The first few that differ: (question id, over HTTP, in process)."""


def debate_parity(folder: Path, work: Path, rule: DebateRule | None = None) -> Parity:
    """Run `rule` (default: the folder's own protocol) as a `debate:` policy over the HTTP replay
    of `folder` (its pool file and trace store in `work`) and compare, question by question."""
    loaded = load_records(folder)
    protocol = loaded.manifest.protocol
    if protocol is None:
        raise RecordsError(f"{folder}: not a recorded debate (its manifest names no protocol)")
    rule = rule or DebateRule(tuple(protocol.speakers), protocol.max_rounds)
    spec = rule_spec(rule)
    questions = {q.question_id: q for q in debated_questions(loaded)}
    texts = Counter(q.question for q in questions.values())
    pool = work / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool), records=[folder]):
        result = run_evaluation(
            EvalConfig(
                pool,
                f"records:path={folder}:split=all",
                (spec,),
                baselines=False,
                traces=f"sqlite:///{work / 'traces.db'}",
                concurrency=8,
            )
        )
    (results,) = result.per_policy.values()
    differ = []
    compared = 0
    for done in results:
        recorded = questions[done.task.id]
        if texts[recorded.question] > 1:
            continue
        played = play(rule, recorded)
        submitted = None if played.final is None else turn_of(recorded, rule, played.final)
        want = (bool(submitted and submitted.correct), submitted and submitted.text, played.calls)
        answered = (done.outcome.answer if done.outcome else "") or None  # "": no answer read
        got = (done.grade.correct, answered, done.calls)
        compared += 1
        if got != want:
            differ.append((done.task.id, got, want))
    repeated = sum(count for count in texts.values() if count > 1)
    return Parity(folder.name, compared, compared - len(differ), repeated, tuple(differ[:3]))
