"""The debate and the rule of when to talk on real language models (SmolLM2-135M-Instruct and Gemma
3 270M behind llama.cpp's server, as in tests/test_real_models.py): `consortium record
--protocol debate:…` keeps every turn as the rule played it, the replay of that recording answers
the same turns over HTTP, and a rule of when to talk decides live. The models are weak: these
tests assert behaviour (who spoke when, what each turn saw, what the rule decided), never
accuracy."""

from __future__ import annotations

from pathlib import Path

import pytest

from consortium.coord.debate.gate import TalkGate, feature_names, write_gate
from consortium.coord.debate.rule import DebateRule
from consortium.coord.debate.spec import debate_from_spec
from consortium.evaluation.debates.gate_fit import ALWAYS, NEVER, fit_gate
from consortium.evaluation.debates.play import debated_questions, play, turn_of
from consortium.evaluation.debates.policies import disputed
from consortium.evaluation.debates.record import DebateRecording, record_debates
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.records.schema import turn_ref
from consortium.records.store import load_records
from consortium.records.tasks import RecordsGrader
from consortium.replay.launch import ReplayServerProcess
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.smallmodels.files import GEMMA3, SMOLLM2
from consortium.smallmodels.llamacpp import LlamaCppServers
from consortium.tasks.base import Task, TaskSet

pytestmark = [pytest.mark.real, pytest.mark.e2e]  # a live debate: minutes on 2 cores

SPEAKERS = (SMOLLM2.name, GEMMA3.name)
QUESTIONS = [
    ("Which is bigger?", "(A) an elephant (B) a mouse", "A"),
    ("Which is colder?", "(A) ice (B) fire", "A"),
    ("Which do you drink?", "(A) a stone (B) water", "B"),
    ("Which can fly?", "(A) a bird (B) a rock", "A"),
    ("Which is a number?", "(A) seven (B) blue", "A"),
    ("Which is wet?", "(A) sand in the sun (B) rain", "B"),
    ("Which is a fruit?", "(A) an apple (B) a chair", "A"),
    ("Which is loud?", "(A) a whisper (B) thunder", "B"),
]
SPEC = f"debate:models={','.join(SPEAKERS)}:rounds=2:answers=choice"


def tasks() -> TaskSet:
    made = [
        Task(f"mc-{i}", f"Question: {q}\nChoices: {options}", "mc", "test", gold)
        for i, (q, options, gold) in enumerate(QUESTIONS)
    ]
    return TaskSet(made, RecordsGrader("choice"), "invented two-option questions")


@pytest.fixture(scope="module")
def pool(llama_servers: LlamaCppServers) -> PoolConfig:
    """The session's llama.cpp pool (tests/conftest.py), each answer allowed 48 tokens: a debate
    turn gives its reason before its letter."""
    running = llama_servers.pool()
    longer = [model.model_copy(update={"max_tokens": 48}) for model in running.models]
    return running.model_copy(update={"models": longer})


@pytest.fixture(scope="module")
def recorded(pool: PoolConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recorded") / "debates"
    record_debates(DebateRecording(pool, tasks(), debate_from_spec(SPEC, pool), out))
    return out


def test_a_recorded_debate_keeps_every_turn_as_the_rule_played_it(recorded: Path) -> None:
    loaded = load_records(recorded)
    protocol = loaded.manifest.protocol
    assert protocol is not None and tuple(protocol.speakers) == SPEAKERS
    assert protocol.max_rounds == 2
    rule = DebateRule(SPEAKERS, 2)
    rows = loaded.rows()
    for debated in debated_questions(loaded):
        mine = sorted(
            (r for r in rows if r.question_id == debated.question_id),
            key=lambda r: (r.turn, SPEAKERS.index(r.model)),
        )
        assert [r.turn for r in mine[:2]] == [0, 0] and all(r.seen == () for r in mine[:2])
        for index, row in enumerate(mine[2:], start=2):  # one speaker a turn, after all before
            assert row.model == SPEAKERS[(index - 2) % 2] and row.turn == index - 1
            assert row.seen == tuple(turn_ref(r.model, r.sample) for r in mine[:index])
        played = play(rule, debated)  # the rule asks for exactly the turns recorded
        assert not played.refused and played.used == len(mine)
        assert (len(mine) > 2) == disputed(debated, SPEAKERS)
        assert all(r.error is None and r.tokens_out > 0 for r in mine)


def test_the_replay_of_a_live_recording_answers_the_same_turns(
    recorded: Path, tmp_path: Path
) -> None:
    loaded = load_records(recorded)
    rule = DebateRule(SPEAKERS, 2)
    questions = {q.question_id: q for q in debated_questions(loaded)}
    pool_file = tmp_path / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[recorded]):
        result = run_evaluation(
            EvalConfig(
                pool_file,
                f"records:path={recorded}:split=all",
                (SPEC,),
                baselines=False,
                traces=f"sqlite:///{tmp_path / 'traces.db'}",
            )
        )
    (results,) = result.per_policy.values()
    for done in results:
        debated = questions[done.task.id]
        played = play(rule, debated)
        submitted = None if played.final is None else turn_of(debated, rule, played.final)
        assert done.calls == played.calls
        answered = (done.outcome.answer if done.outcome else "") or None  # "": no answer read
        assert answered == (submitted.text if submitted else None)


def _gate(threshold: float) -> TalkGate:
    width = len(feature_names(SPEAKERS))
    return TalkGate(
        SPEAKERS, GEMMA3.name, "choice", (0.0,) * width, (0.0,) * width, (1.0,) * width, threshold
    )


async def test_the_rule_of_when_to_talk_decides_live(
    pool: PoolConfig, recorded: Path, tmp_path: Path
) -> None:
    loaded = load_records(recorded)
    questions = debated_questions(loaded)
    if any(disputed(q, SPEAKERS) for q in questions):  # a rule fitted on the live recording
        fitted, _ = fit_gate(DebateRule(SPEAKERS, 2, lead=GEMMA3.name), questions)
        gates = {"fitted": fitted, "never": _gate(NEVER), "always": _gate(ALWAYS)}
    else:
        gates = {"never": _gate(NEVER), "always": _gate(ALWAYS)}
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    caller = Caller(Pool(pool), store, store.start_run("real"))
    for name, gate in gates.items():
        write_gate(tmp_path / name, gate, "test", {})
        coordinator = debate_from_spec(f"{SPEC}:gate={tmp_path / name}", pool)
        results = await run_policy(
            coordinator, tasks().tasks, RecordsGrader("choice"), caller, concurrency=2
        )
        for done in results:
            notes = done.outcome.notes if done.outcome else ()
            held = any("the learned rule: no talk" in note for note in notes)
            if name == "never":
                assert done.calls == 2  # the first answers only, whatever they say
            if name == "always":
                assert not held
            if held:  # the lead's first answer, unless it gave none (then the one stated)
                assert done.calls == 2 and done.outcome is not None
                lead_answered = notes[0].endswith(f"{GEMMA3.name}'s answer")
                assert lead_answered == (done.outcome.model == GEMMA3.name)
    store.close()
