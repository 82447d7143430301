"""Multi-turn TRINITY over answers: one decision function (`TrinityTurns.decide`) that the records
runner plays and a live policy folder runs. The trained folder, evaluated over the HTTP records
replay server, gives question by question the answer, the model that gave it, the calls and the
$ the records runner gives, on GSM8K and MATH, with both stop rules; a Verifier asked with the
TRINITY Verifier prompt reaches the same verdicts there (the replay serves recorded solutions)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coord.answers.folder import load_answer_policy, read_policy, write_policy
from consortium.coord.answers.rules import Submit
from consortium.coord.answers.trinity_live import TrinityTeam
from consortium.coord.answers.trinity_turns import (
    SUBMIT,
    THINKER,
    VERIFIER,
    WORKER,
    Call,
    TrinityTurns,
    Turn,
    current_index,
    trinity_from,
)
from consortium.coord.spec_values import pool_name
from consortium.core.errors import AgentError, ConfigError
from consortium.core.types import Completion
from consortium.evaluation.entry import EvalConfig, EvalResult, run_evaluation
from consortium.evaluation.recorded.episodes import Episodes
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records import load_records
from consortium.tasks.base import Task
from consortium.train.answers.policy import fit_answer_policy
from consortium.train.trinity.recorded_turns import Budget
from tests.helpers import ReplayServers, SharedRecords
from tests.test_cli import cli

SMALL = Budget(generations=4, popsize=8, minibatch=32)


def _head(models: tuple[str, ...], stop: str, rows: dict[str, dict[int, float]]) -> TrinityTurns:
    """A hand-set head: rows[action or model][feature] = weight, every other weight 0."""
    head = TrinityTurns(models, None, {m: 3 for m in models}, stop=stop)
    weights = head.weights.copy()
    names = [*models, *head.actions]
    for name, row in rows.items():
        for feature, value in row.items():
            weights[names.index(name), feature] = value
    return head.with_weights(weights)


def test_the_answer_rule_and_a_submit_after_one_call() -> None:
    models = ("a", "b")
    # the constant feature (0) favours model b and Worker; "has an answer" (2) favours submit
    rows = {"b": {0: 1.0}, WORKER: {0: 1.0}, SUBMIT: {2: 5.0}}
    submitting = _head(models, "submit", rows)
    first = submitting.decide([])
    assert first == Call("b", 0, WORKER)
    one = [Turn("b", 0, WORKER, 4, True)]
    decision = submitting.decide(one)
    assert isinstance(decision, Submit) and decision.index == 0
    # the paper's rule has no submit row: it goes on until max turns
    accepting = _head(models, "accept", {"b": {0: 1.0}, WORKER: {0: 1.0}})
    assert accepting.decide(one) == Call("b", 1, WORKER)
    three = [*one, Turn("b", 1, WORKER, 5, True), Turn("b", 2, WORKER, 5, True)]
    assert current_index(three) == 2  # the most common answer, its latest sample
    assert accepting.decide(three) == Call("a", 0, WORKER)  # b asked 3 times: its limit
    accepted = [*three, Turn("a", 0, VERIFIER, 5, True, verdict=True)]
    stop = accepting.decide(accepted)
    assert isinstance(stop, Submit) and stop.index == 2 and "accepted by a" in stop.reason
    # an answer that fails its check loses to one that passes, whatever the votes
    checked = [Turn("a", 0, WORKER, 1, False), Turn("a", 1, WORKER, 1, False)]
    assert current_index([*checked, Turn("b", 0, WORKER, 2, True)]) == 2
    assert current_index([Turn("a", 0, WORKER, NO_ANSWER, False)]) is None


def test_a_failed_call_is_no_turn_and_the_model_is_not_asked_again() -> None:
    head = _head(("a", "b"), "accept", {"a": {0: 1.0}, WORKER: {0: 1.0}})
    failed = [Turn("a", 0, WORKER, available=False)]
    assert head.decide(failed) == Call("b", 0, WORKER)
    assert list(head.available(failed)) == [False, True]
    x = head.features(failed)
    assert x[8] == 1.0  # still the first turn
    both = [*failed, Turn("b", 0, WORKER, available=False)]
    decision = head.decide(both)
    assert isinstance(decision, Submit) and decision.index is None


def test_a_folder_that_does_not_build_a_head_is_one_line(tmp_path: Path) -> None:
    params = _head(("a", "b"), "submit", {}).params()
    assert trinity_from(params).actions == (WORKER, VERIFIER, SUBMIT)
    for broken, expected in [
        ({**params, "weights": [[0.0]]}, "weights must be"),
        ({**params, "roles": ["verifier"]}, "must include worker"),
        ({**params, "stop": "never"}, "stop must be one of"),
        ({**params, "samples": {"a": 0}}, "at least 1"),
        ({**params, "features": "structured+text16"}, "structured features only"),
    ]:
        with pytest.raises((ValueError, KeyError, TypeError), match=expected):
            trinity_from(broken)


QUESTIONS = 120
"""Questions per data set: a train split larger than a minibatch of 32."""


@pytest.fixture(scope="module")
def folders(shared_records: SharedRecords) -> dict[str, Path]:
    """GSM8K's six chat models (a live policy reads answers from text, and Llama-2-13B's samples
    are programs) and MATH."""
    return {
        "gsm8k": shared_records("gsm8k", QUESTIONS, leave_out=("Llama-2-13B",)),
        "math": shared_records("math", QUESTIONS),
    }


def _evaluate(
    records: Path, policies: list[Path], replay_servers: ReplayServers, tmp_path: Path
) -> EvalResult:
    pool_file = tmp_path / "replay.toml"
    with replay_servers(None, "--write-pool", str(pool_file), records=[records]):
        result = run_evaluation(
            EvalConfig(
                pool_file,
                f"records:path={records}:split=test",
                tuple(str(p) for p in policies),
                baselines=False,
                traces=f"sqlite:///{tmp_path / 'traces.db'}",
            )
        )
    assert len(result.per_policy) == len(policies)
    return result


@pytest.mark.parametrize("dataset", ["gsm8k", "math"])
def test_the_trained_folder_live_over_http_equals_the_records_runner(
    folders: dict[str, Path], dataset: str, replay_servers: ReplayServers, tmp_path: Path
) -> None:
    records = folders[dataset]
    table = outcome_table(load_records(records))
    index = {q: i for i, q in enumerate(table.question_ids)}
    policies = []
    for stop, lam in (("accept", 0.0), ("submit", 0.5)):
        folder = tmp_path / f"trinity-{stop}"
        policy = fit_answer_policy("trinity", records, lam=lam, stop=stop, budget=SMALL).policy
        write_policy(folder, policy.model_copy(update={"name": f"{policy.name}:{stop}"}))
        policies.append(folder)
    # the accepting head, edited to verify once it has an answer (re-solving, then with the
    # TRINITY Verifier prompt): the Verifier's path over HTTP on every question
    meta = json.loads((policies[0] / "policy.json").read_text())
    verifier_row = len(meta["params"]["models"]) + 1
    meta["params"]["weights"][verifier_row][2] = 100.0  # feature 2: there is a current answer
    for verifier in ("re-solve", "prompt"):
        folder = tmp_path / f"trinity-verifying-{verifier}"
        folder.mkdir()
        edited = {**meta, "name": f"{meta['name']}:{verifier}"}
        edited["params"] = {**meta["params"], "verifier": verifier}
        (folder / "policy.json").write_text(json.dumps(edited))
        policies.append(folder)
    prompt_folder = policies[-1]
    result = _evaluate(records, policies, replay_servers, tmp_path)
    as_pooled = {m: pool_name(result.pool, m) for m in table.models}
    verifier_calls = 0
    for folder, results in zip(policies, result.per_policy.values(), strict=True):
        policy = read_policy(folder)
        head = policy.rule()
        assert isinstance(head, TrinityTurns)
        episodes = Episodes(table, stop=head.stop)
        mismatches = []
        for done in results:
            q = index[done.task.id]
            t = episodes.play(head, q)
            chosen = t.submitted.index if t.submitted is not None else None
            want_model = None if chosen is None else as_pooled[t.log[chosen].model]
            asked = sum(1 for turn in t.log if turn.sample is not None)
            verifier_calls += sum(1 for turn in t.log if turn.role == VERIFIER and turn.available)
            got_model = done.outcome.model if done.outcome is not None else None
            got = (done.grade.correct, got_model, done.calls)
            want = (episodes.correct(t), want_model, asked)
            if got != want:
                mismatches.append((done.task.id, got, want))
            if folder == prompt_folder:  # the Verifier's prompt holds the question and an answer
                verified = any(turn.role == VERIFIER and turn.available for turn in t.log)
                assert (done.cost > t.cost + 1e-12) == verified, done.task.id
            else:
                assert done.cost == pytest.approx(t.cost, rel=1e-9, abs=1e-12), done.task.id
        assert not mismatches, f"{folder.name}: {len(mismatches)} differ, e.g. {mismatches[:3]}"
        if "verifying" not in folder.name:  # the edited heads' folders keep the trained figures
            live = 100 * sum(r.grade.correct for r in results) / len(results)
            assert live == pytest.approx(policy.test.accuracy, abs=1e-3)
    assert verifier_calls >= len(result.per_policy[read_policy(prompt_folder).name])


class _Caller:
    """Answers from a script: model -> replies in order; records what it was sent."""

    def __init__(self, replies: dict[str, list[str]], fail: str | None = None) -> None:
        self.replies = {m: list(r) for m, r in replies.items()}
        self.fail = fail
        self.sent: list[tuple[str, str, list[dict[str, str]]]] = []

    async def call(
        self, model: str, messages: list[dict[str, str]], **params: object
    ) -> Completion:
        self.sent.append((model, str(params["role"]), list(messages)))
        if model == self.fail:
            raise AgentError(model, "HTTP 404 samples exhausted")
        return Completion(self.replies[model].pop(0), model)


def test_live_verifier_prompt_reads_the_stated_verdict_and_a_thinker_adds_no_answer() -> None:
    models = ("a", "b")
    # turn 0: Thinker (a); then a Worker (b); then a Verifier (a); the feature of turn k is 8 + k
    rows = {
        "a": {0: 1.0, 9: -2.0},
        THINKER: {8: 3.0},
        WORKER: {0: 1.0},
        VERIFIER: {10: 3.0},
        "b": {9: 3.0},
    }
    head = TrinityTurns(models, None, {"a": 3, "b": 3}, roles=(WORKER, VERIFIER, THINKER))
    weights = head.weights.copy()
    names = [*models, *head.actions]
    for name, row in rows.items():
        for feature, value in row.items():
            weights[names.index(name), feature] = value
    head = head.with_weights(weights)
    team = TrinityTeam(head, "number", "trinity-live", verifier="prompt")
    task = Task("q", "What is 3 + 4?", "7", "test")
    replies = {"a": ["Plan: add them.", "VERDICT: ACCEPT, it is right."], "b": ["The answer is 7"]}
    caller = _Caller(replies)
    outcome = asyncio.run(team.run(task, caller))  # type: ignore[arg-type]
    assert [(m, r) for m, r, _ in caller.sent] == [("a", THINKER), ("b", WORKER), ("a", VERIFIER)]
    assert outcome.answer == "The answer is 7" and outcome.model == "b" and outcome.accepted
    verifier_messages = caller.sent[2][2]
    assert "Verifier" in verifier_messages[0]["content"]
    assert "The answer is 7" in verifier_messages[-1]["content"]
    # the same head with a re-solving Verifier: it sends the question alone and compares answers
    resolving = TrinityTeam(head, "number", "trinity-live")
    answers = ["Plan: add them.", "The answer is 8", "The answer is 7"]  # a may be asked 3 times
    caller = _Caller({"a": answers, "b": ["The answer is 7", "So: the answer is 7"]})
    outcome = asyncio.run(resolving.run(task, caller))  # type: ignore[arg-type]
    assert caller.sent[2][2] == [{"role": "user", "content": task.question}]
    sent = [(m, r) for m, r, _ in caller.sent]
    assert sent == [("a", THINKER), ("b", WORKER), ("a", VERIFIER), ("a", WORKER), ("b", WORKER)]
    assert not outcome.accepted and outcome.notes[0] == "stop: 5 turns"
    assert (outcome.model, outcome.answer) == ("b", "So: the answer is 7")


def test_train_coordinator_trinity_on_the_command_line(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "math-trinity"
    trained = cli(
        "train", "coordinator", "--kind", "trinity", "--records", str(folders["math"]),
        "--out", str(out), "--stop", "submit", "--lam", "0.5", timeout=600,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert "trinity:math" in trained.stdout and "stop=submit" in trained.stdout
    policy = read_policy(out)
    assert policy.params["stop"] == "submit" and policy.params["roles"] == [WORKER, VERIFIER]
    assert np.asarray(policy.params["weights"]).shape == (3 + 3, 8 + 5 + 3 * 3)
    assert isinstance(load_answer_policy(out), TrinityTeam)
    wrong = cli(
        "train", "coordinator", "--kind", "vote", "--records", str(folders["math"]),
        "--out", str(tmp_path / "v"), "--stop", "submit",
    )  # fmt: skip
    assert wrong.returncode != 0 and "--stop applies to --kind trinity only" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_a_question_only_trinity_folder_is_not_read_as_an_answer_policy(tmp_path: Path) -> None:
    from consortium.coord.answers.folder import is_answer_policy

    (tmp_path / "policy.json").write_text(json.dumps({"kind": "trinity", "encoder": "x"}))
    assert not is_answer_policy(tmp_path)
    with pytest.raises(ConfigError, match="policy folder schema"):
        read_policy(tmp_path)
