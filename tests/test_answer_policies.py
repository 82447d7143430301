"""Answer-aware policies trained into folders and run live: `eval` of each folder against the HTTP
replay server of the same records gives, question by question, the answer, the model that gave
it, the calls, the tokens and the $ that the records runner (the report's path) gives, on every
records set `make records` imports that holds texts, an answer past the default max_tokens
included. On HumanEval the live policy runs each program on its docstring examples in the
sandbox, as the records table did."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from consortium.coord.answers.folder import load_answer_policy, read_policy, write_policy
from consortium.coord.answers.kinds import CHECKED_KINDS, RULE_KINDS
from consortium.coord.answers.rules import Submit
from consortium.coord.spec_values import pool_name
from consortium.core.errors import ConfigError
from consortium.core.tokens import estimate_tokens
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.evaluation.recorded.rule_runs import answer_of, play
from consortium.evaluation.recorded.tables import outcome_table
from consortium.pool.config import DEFAULT_MAX_TOKENS
from consortium.records import load_records
from consortium.records.corpora import BY_DEFAULT, RECIPES
from consortium.records.split import split_of
from consortium.replay.launch import ReplayServerProcess
from consortium.train.answers.policy import fit_answer_policy
from tests.helpers import ReplayServers, SharedRecords
from tests.test_cli import cli

QUESTIONS = 60
CODE_QUESTIONS = 40
"""HumanEval questions (their programs run in the sandbox, live as in the records table)."""
MBPP_QUESTIONS = 41
"""RouterBench MBPP's first 41 questions by id reach mbpp.dev.134, a test question whose
mistral-7b answer is past the default max_tokens (RouterBench's 11 models' programs run in the
sandbox at import)."""
LIVE_SETS = (
    "gsm8k", "math", "date", "rb_arc_challenge", "rb_winogrande", "humaneval", "rb_mbpp",
)  # fmt: skip
"""Every records set of `make records` but RouterDC's split2 ones, which hold scores and no texts:
no policy folder is fitted there."""
CODE_SETS = ("humaneval", "rb_mbpp")
"""The sets whose answers are programs, checked in the sandbox (the e2e tier runs them)."""


@pytest.fixture(scope="module")
def folders(shared_records: SharedRecords) -> dict[str, Path]:
    """The records of each data set (GSM8K's six chat models: Llama-2-13B's samples are programs
    the import ran in the sandbox, and a live policy reads answers from text)."""
    made = {"gsm8k": shared_records("gsm8k", QUESTIONS, leave_out=("Llama-2-13B",))}
    for name in ("math", "date", "rb_arc_challenge", "rb_winogrande"):
        made[name] = shared_records(name, QUESTIONS)
    made["humaneval"] = shared_records("humaneval", CODE_QUESTIONS)
    made["rb_mbpp"] = shared_records("rb_mbpp", MBPP_QUESTIONS)
    return made


def test_the_live_sets_are_every_records_set_with_texts_one_answer_past_max_tokens(
    folders: dict[str, Path],
) -> None:
    scores_only = {name for name, recipe in RECIPES.items() if "scores only" in str(recipe.notes)}
    assert scores_only == {name for name in RECIPES if name.startswith("split2_")}
    assert set(LIVE_SETS) == set(folders) == set(BY_DEFAULT) - scores_only
    long = []  # answers past the default max_tokens, on test questions the records runner grades
    for name, folder in folders.items():
        rows = load_records(folder).table.select(["question_id", "model", "response", "correct"])
        listed = rows.to_pylist()
        unjudged = {row["question_id"] for row in listed if row["correct"] is None}
        long += [
            (name, row["question_id"], row["model"])
            for row in listed
            if estimate_tokens(row["response"] or "") > DEFAULT_MAX_TOKENS
            and split_of(RECIPES[name].dataset, row["question_id"]) == "test"
            and row["question_id"] not in unjudged
        ]
    assert long == [("rb_mbpp", "mbpp.dev.134", "mistralai/mistral-7b-chat")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "dataset",
    # the code sets run every answer's checks in the sandbox (a minute each): the e2e tier
    [
        pytest.param(name, marks=pytest.mark.e2e) if name in CODE_SETS else name
        for name in LIVE_SETS
    ],
)
def test_every_kind_live_over_http_equals_the_records_runner_per_question(
    folders: dict[str, Path], dataset: str, replay_servers: ReplayServers, tmp_path: Path
) -> None:
    records = folders[dataset]
    checks = tmp_path / "checks"  # the code checks, run once for the table and every fit
    loaded = load_records(records)
    table = outcome_table(loaded, checks)
    index = {q: i for i, q in enumerate(table.question_ids)}
    code = loaded.manifest.answer_kind == "code"
    columns = ["question_id", "model", "sample", "response"]
    recorded = {(r["question_id"], r["model"], r["sample"]): r["response"] or ""
                for r in loaded.table.select(columns).to_pylist()}  # fmt: skip
    # RouterBench declares no prices: its records hold the source's own $ per sample, which a
    # pool's per-token rate cannot reproduce; where every model has a price, $ must agree too
    priced = set(loaded.manifest.prices) >= set(table.models)
    kinds = [kind for kind in RULE_KINDS if code or kind not in CHECKED_KINDS]
    policies = []
    for kind in kinds:
        policy = fit_answer_policy(kind, records, cache_dir=checks).policy
        write_policy(tmp_path / kind, policy)
        policies.append(str(tmp_path / kind))
    pool_file = tmp_path / "replay.toml"
    with replay_servers(None, "--write-pool", str(pool_file), records=[records]):
        result = run_evaluation(
            EvalConfig(
                pool_file,
                f"records:path={records}:split=test",
                tuple(policies),
                baselines=False,
                traces=f"sqlite:///{tmp_path / 'traces.db'}",
            )
        )
    assert len(result.per_policy) == len(kinds)
    pool = result.pool
    as_pooled = {m: pool_name(pool, m) for m in table.models}  # meta/llama-2-70b-chat ...
    misgraded = []
    for kind, every in zip(kinds, result.per_policy.values(), strict=True):
        # the records runner leaves out a question not every sample of which has our verdict
        # (RouterBench MBPP's prompts that no MBPP task's tests were joined to); so does `eval`
        results = list(every)
        assert {done.task.id for done in results} <= set(index)
        rule = read_policy(tmp_path / kind).rule()
        mismatches = []
        for done in results:
            q = index[done.task.id]
            played = play(rule, table, q)
            expected = answer_of(table, q, played)
            answered = [s for s in played.seen if s.available]
            picked = None if played.chosen is None else played.seen[played.chosen]
            chosen = None if picked is None else as_pooled[picked.model]
            text = None if picked is None else recorded[(done.task.id, picked.model, picked.sample)]
            paid = [table.samples[q][table.models.index(s.model)][s.sample] for s in answered]
            outcome = done.outcome
            got = (
                outcome and outcome.model,
                outcome and outcome.answer,
                done.calls,
                done.tokens,
                round(done.cost, 9) if priced else None,
            )
            want = (
                chosen,
                text,
                len(played.seen),
                sum(s.tokens for s in paid),
                round(sum(s.cost_usd for s in paid), 9) if priced else None,
            )
            if got != want:
                mismatches.append((done.task.id, got, want))
            if done.grade.correct != bool(expected and expected.correct):
                misgraded.append((kind, done.task.id))
        assert not mismatches, f"{dataset} {kind}: {len(mismatches)} differ, e.g. {mismatches[:3]}"
        figures = read_policy(tmp_path / kind).test
        live = 100 * sum(r.grade.correct for r in results) / len(results)
        assert live == pytest.approx(figures.accuracy, abs=1e-3)
        assert len(results) == figures.questions
    assert not misgraded, f"{dataset}: the live verdict differs from the records' on {misgraded}"


def test_a_live_rule_asks_no_more_samples_than_the_records_held(
    folders: dict[str, Path],
) -> None:
    """RouterBench recorded one sample per model: a cascade fitted there asks each model once,
    live too; DATE recorded 3 of gpt-4's and 20 of the others': at most 3 and 5."""
    for kind in ("model-switch", "mot-cascade"):
        arc = fit_answer_policy(kind, folders["rb_arc_challenge"]).policy.params["samples"]
        assert set(arc.values()) == {1}, (kind, arc)
    date = fit_answer_policy("model-switch", folders["date"]).policy.params["samples"]
    assert date == {"gpt-4": 3, "gpt-3.5-turbo": 5, "Llama-2-13B": 5}


def test_a_failed_escalation_keeps_the_cheap_vote_and_refused_calls_are_a_budget_error() -> None:
    import asyncio

    from consortium.coord.answers.live import AnswerAwareCoordinator
    from consortium.coord.answers.rules import MotCascade
    from consortium.core.errors import AgentError, BudgetExceeded
    from consortium.core.types import Completion
    from consortium.tasks.base import Task

    class Caller:
        def __init__(self, fail: str | None, refuse: bool = False) -> None:
            self.fail, self.refuse = fail, refuse

        async def call(self, model: str, messages: object, **params: object) -> Completion:
            if self.refuse:
                raise BudgetExceeded("the run's cap is reached")
            if model == self.fail:
                raise AgentError(model, "HTTP 503")
            answer = {"cheap": f"The answer is {params['seed']}", "strong": "The answer is 7"}
            return Completion(answer[model], model)

        async def trace_stages(self, stages: object) -> None:
            pass

    rule = MotCascade(("cheap",), "strong", 1.0, {"cheap": 0.5, "strong": 0.9}, {"cheap": 2})
    team = AnswerAwareCoordinator(rule, "number", "mot")
    task = Task("q", "What is 3 + 4?", "t", "test")
    escalated = asyncio.run(team.run(task, Caller(None)))  # type: ignore[arg-type]
    assert (escalated.model, escalated.answer) == ("strong", "The answer is 7")
    kept = asyncio.run(team.run(task, Caller("strong")))  # type: ignore[arg-type]
    assert kept.model == "cheap" and kept.answer == "The answer is 0"
    assert "stop: escalation failed: cheap vote" in kept.notes
    assert any(note.startswith("strong sample 0: ") for note in kept.notes)
    with pytest.raises(BudgetExceeded, match="every call refused"):
        asyncio.run(team.run(task, Caller(None, refuse=True)))  # type: ignore[arg-type]


class _TracingCaller:
    """A task caller whose every model answers "The answer is 7"; it keeps each call's turn and
    the stages the policy traces."""

    def __init__(self) -> None:
        self.turns: list[int] = []
        self.stages: list[Any] = []

    async def call(self, model: str, messages: object, **params: Any) -> Any:
        from consortium.core.types import Completion

        self.turns.append(params["turn"])
        return Completion("The answer is 7", model)

    async def trace_stages(self, stages: list[Any]) -> None:
        self.stages += stages


@pytest.mark.parametrize(
    ("threshold", "stop"),
    [
        (0.8, "stop: accepted at stage 2: scorer p 0.95 >= tau 0.80"),
        (0.99, "stop: every stage asked: scorer p 0.95 < tau 0.99"),
    ],
)
def test_a_cascade_numbers_its_stages_from_one_where_its_stop_reason_names_the_scorer_p(
    threshold: float, stop: str
) -> None:
    """The stages table, the calls' turns and the stop reason count the same stages (from 1),
    and the stop reason names the figure of the table's `scorer p` column it compared."""
    import asyncio

    from consortium.coord.answers.live import AnswerAwareCoordinator
    from consortium.coord.answers.scored import ScorerCascade
    from consortium.tasks.base import Task

    unsure, sure = [0.0] * 11, [0.0] * 10 + [3.0]  # the constant's weight: p 0.50, then 0.95
    rule = ScorerCascade(("a", "b"), ("a", "b"), threshold, (tuple(unsure), tuple(sure)))
    caller = _TracingCaller()
    team = AnswerAwareCoordinator(rule, "number", "cascade")
    outcome = asyncio.run(team.run(Task("q", "What is 3 + 4?", "t", "test"), caller))  # type: ignore[arg-type]
    assert [row.stage for row in caller.stages] == caller.turns == [1, 2]
    assert stop in outcome.notes and caller.stages[-1].decision == stop
    assert f"scorer p {caller.stages[-1].score:.2f} " in stop  # the column's figure
    # served, the reason is the x-consortium-stop header: an HTTP header is latin-1 (a 'τ' in
    # it made `serve` answer 500 to every question a cascade answered)
    from consortium.serve.answer_account import answer_headers as _headers
    from consortium.serve.answer_account import decided as _decided

    account = {"calls": 2, "models": ["a", "b"], "roles": [], "cost": 0.0, "task_id": "t"}
    headers = _headers(account | {"run_id": "r"} | _decided([outcome]))
    assert headers["x-consortium-stop"] == stop.removeprefix("stop: ")
    assert all(value.isascii() for value in headers.values())


def test_the_mot_cascade_names_the_agreement_it_accepted_at() -> None:
    from consortium.coord.answers.rules import MotCascade, Seen

    rule = MotCascade(("a", "b"), "strong", 0.6, {}, {"a": 1, "b": 1})
    decision = rule.decide([Seen("a", 0, 1), Seen("b", 0, 1)])
    assert decision == Submit(0, "accepted: agreement 1.00 >= tau 0.60")


def test_a_policy_folder_of_another_schema_or_edited_badly_is_one_line(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "vote"
    write_policy(folder, fit_answer_policy("vote", folders["date"]).policy)
    meta = json.loads((folder / "policy.json").read_text())
    for broken, expected in [
        ({**meta, "schema_version": 9}, "policy folder schema 9"),
        ({**meta, "params": {"weights": {}}}, "params do not build a vote rule"),
        ({k: v for k, v in meta.items() if k != "answer_kind"}, "answer_kind: Field required"),
        ({**meta, "params": {**meta["params"], "samples": 0}}, "at least 1"),
        ({**meta, "params": {**meta["params"], "models": []}}, "asks no model"),
        (
            {**meta, "params": {**meta["params"], "models": ["gpt-4", "gpt-4"]}},
            "names a model twice",
        ),
    ]:
        (folder / "policy.json").write_text(json.dumps(broken))
        with pytest.raises(ConfigError, match=expected):
            load_answer_policy(folder)
    (folder / "policy.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_answer_policy(folder)


def test_train_then_ask_on_the_command_line_and_a_missing_model_is_one_line(
    folders: dict[str, Path], replay_servers: ReplayServers, tmp_path: Path
) -> None:
    records = folders["date"]
    out = tmp_path / "date-switch"
    trained = _consortium(
        "train", "coordinator", "--kind", "model-switch", "--records", str(records),
        "--out", str(out),
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert "model-switch:date" in trained.stdout and "test" in trained.stdout
    question = load_records(records).table.column("question")[0].as_py()
    pool_file = tmp_path / "replay.toml"
    with replay_servers(None, "--write-pool", str(pool_file), records=[records]):
        asked = _consortium(
            "ask", "--pool", str(pool_file), "--policy", str(out), question,
            "--traces", f"sqlite:///{tmp_path / 't.db'}",
        )  # fmt: skip
        assert asked.returncode == 0, asked.stderr
        assert "/" in asked.stdout  # a recorded date answer, verbatim
        pool = pool_file.read_text().replace('"gpt-4"', '"gpt-4-renamed"')  # name and id
        (tmp_path / "short.toml").write_text(pool)
        missing = _consortium(
            "ask", "--pool", str(tmp_path / "short.toml"), "--policy", str(out), question,
            "--traces", f"sqlite:///{tmp_path / 't.db'}",
        )  # fmt: skip
    assert missing.returncode != 0
    assert "gpt-4" in missing.stderr and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def _consortium(*args: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, env={"COLUMNS": "200"}, timeout=600)


def test_served_like_one_model_with_who_answered_and_a_dead_endpoint_skipped(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """`serve --policy FOLDER`: the answer is the chosen model's recorded text, verbatim; the
    headers name who answered and why the policy stopped; a model whose endpoint is down is
    skipped (the vote counts who answered); when every call fails, one 502 naming each."""
    import httpx

    from consortium.runtime.launch import free_port
    from tests.test_serve import serving

    records = folders["date"]
    policy = tmp_path / "vote"
    write_policy(policy, fit_answer_policy("vote", records).policy)
    loaded = load_records(records)
    question = loaded.table.column("question")[0].as_py()
    recorded = {
        (row["model"], row["sample"]): row["response"]
        for row in loaded.table.to_pylist()
        if row["question"] == question
    }
    pool_file = tmp_path / "replay.toml"
    body = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
    # its own server, not the session's: the test stops it to see every call fail
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[records]):
        with serving(pool_file, tmp_path / "t.db", "--policy", str(policy)) as url:
            reply = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
        assert reply.status_code == 200, reply.text
        answered = reply.headers["x-consortium-answered-by"]
        text = reply.json()["choices"][0]["message"]["content"]
        assert text == recorded[(answered, 0)]
        assert reply.headers["x-consortium-stop"] == "voted"
        assert reply.headers["x-consortium-calls"] == "3"
        dead = f"http://127.0.0.1:{free_port()}/v1"
        pooled = pool_file.read_text()
        first = pooled.index('base_url = "', pooled.index('name = "gpt-4"'))
        end = pooled.index('"', first + len('base_url = "'))
        (tmp_path / "one-dead.toml").write_text(
            pooled[:first] + f'base_url = "{dead}' + pooled[end:]
        )
        with serving(tmp_path / "one-dead.toml", tmp_path / "t.db", "--policy", str(policy)) as url:
            skipped = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
        assert skipped.status_code == 200, skipped.text
        notes = skipped.json()["consortium"]["notes"]
        assert len(notes) == 1 and notes[0].startswith("gpt-4 sample 0:")
        assert "gpt-4" not in skipped.headers["x-consortium-answered-by"]
    # the replay server is gone: every call fails
    with serving(pool_file, tmp_path / "t.db", "--policy", str(policy)) as url:
        failed = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
    assert failed.status_code == 502
    message = failed.json()["error"]["message"]
    assert "every call failed" in message and all(m in message for m in ("gpt-4", "Llama-2-13B"))
