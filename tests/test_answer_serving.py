"""Answer-aware policies served like one model: a budget that ends the policy early answers with
what it has and says so (a 402 only when nothing was answered), `--substitute` runs a policy
with a pool model in place of one it names, and the trace store and viewer show every stage.
All over the HTTP replay server of a DATE records folder (the recorded texts, verbatim)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from consortium.coord.answers.folder import write_policy
from consortium.coord.answers.kinds import renamed
from consortium.coord.answers.rules import (
    ModelSwitch,
    MotCascade,
    Seen,
    SingleAnswer,
    WeightedVote,
)
from consortium.coord.answers.stages import budget_stop, played_out
from consortium.core.errors import ConfigError
from consortium.core.tokens import estimate_tokens
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.pool.config import dump_pool, load_pool, parse_pool
from consortium.records import load_records
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import StageRecord
from consortium.serve.headers import ANSWER_HEADERS as HEADERS
from consortium.train.answers.policy import fit_answer_policy
from consortium.viewer.app import TraceViewer
from tests.helpers import SharedRecords
from tests.test_cli import cli, one_line_error
from tests.test_serve import serve_process, serving

QUESTIONS = 60
FIRST = "gpt-3.5-turbo"
"""The vote's first model: the one call a cap of one call admits."""


@pytest.fixture(scope="module")
def records(shared_records: SharedRecords) -> Path:
    return shared_records("date", QUESTIONS)  # the session's import


@pytest.fixture(scope="module")
def replay(records: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The replay server of the records; yields its pool file."""
    pool_file = tmp_path_factory.mktemp("pool") / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[records]):
        yield pool_file


@pytest.fixture(scope="module")
def vote(records: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("policies") / "vote"
    policy = fit_answer_policy("vote", records).policy
    assert policy.params["models"][0] == FIRST
    write_policy(folder, policy)
    return folder


def _question_and_texts(records: Path) -> tuple[str, dict[tuple[str, int], str]]:
    table = load_records(records).table
    question = table.column("question")[0].as_py()
    recorded = {
        (row["model"], row["sample"]): row["response"]
        for row in table.to_pylist()
        if row["question"] == question
    }
    return question, recorded


def _ask_body(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "consortium", "messages": [{"role": "user", "content": question}], **extra}


def _streamed(url: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The text of a streamed answer and the `consortium` field of its last chunk."""
    text, account = "", {}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line.removeprefix("data: "))
            assert "error" not in chunk, chunk
            for choice in chunk.get("choices", []):
                text += choice["delta"].get("content") or ""
            account = chunk.get("consortium", account)
    return text, account


def test_a_vote_capped_at_one_call_answers_with_the_flag_and_the_trace_shows_its_stages(
    records: Path, replay: Path, vote: Path, tmp_path: Path
) -> None:
    question, recorded = _question_and_texts(records)
    traces = tmp_path / "t.db"
    with serving(replay, traces, "--policy", str(vote), "--max-calls", "1") as url:
        reply = httpx.post(f"{url}/chat/completions", json=_ask_body(question), timeout=60)
        streamed, account = _streamed(url, _ask_body(question, stream=True))
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-consortium-stop"] == "budget hit after 1 call"
    assert reply.headers["x-consortium-calls"] == "1"
    assert reply.headers["x-consortium-answered-by"] == FIRST
    text = reply.json()["choices"][0]["message"]["content"]
    assert text == recorded[(FIRST, 0)]
    decided = reply.json()["consortium"]
    assert decided["stop"] == ["budget hit after 1 call"]
    refused = [n for n in decided["notes"] if "refused by the budget" in n]
    assert [n.split(" sample")[0] for n in refused] == ["gpt-4", "Llama-2-13B"]
    # streamed: the chosen answer in chunks, the flag in the last chunk
    assert streamed == text
    assert account["stop"] == ["budget hit after 1 call"] and account["calls"] == 1

    store = TraceStore(f"sqlite:///{traces}")
    run_id, task_id = reply.headers["x-consortium-run"], reply.headers["x-consortium-task"]
    stages = store.task_stages(run_id, task_id)
    assert [(s["stage"], s["model"], s["status"]) for s in stages] == [
        (1, FIRST, "answered"),
        (1, "gpt-4", "refused"),
        (1, "Llama-2-13B", "refused"),
    ]
    first = stages[0]
    assert first["chosen"] and first["answer"] and first["answer"] in text
    assert {s["decision"] for s in stages} == {"stop: budget hit after 1 call"}
    assert [c["model"] for c in store.task_calls(run_id, task_id)] == [FIRST]
    page = TestClient(TraceViewer(store).app).get(f"/runs/{run_id}/tasks/{task_id}")
    assert page.status_code == 200
    assert "class='stages'" in page.text and "budget hit after 1 call" in page.text
    assert page.text.count(">refused<") == 2 and ">submitted<" in page.text
    shown = cli("traces", "show", run_id, "--traces", store.url)
    assert shown.returncode == 0, shown.stderr
    assert f"stages of {task_id} · vote:date" in shown.stdout
    assert "answered (submitted)" in shown.stdout and "stop: budget" in shown.stdout


def test_a_cost_cap_answers_with_what_fits_and_is_a_402_only_when_nothing_was_answered(
    records: Path, replay: Path, vote: Path, tmp_path: Path
) -> None:
    question, recorded = _question_and_texts(records)
    entry = load_pool(replay).get(FIRST)
    first_call = entry.cost(estimate_tokens(question), entry.max_tokens)  # its worst case
    body = _ask_body(question)
    capped = ("--policy", str(vote), "--max-cost", repr(first_call))
    with serving(replay, tmp_path / "t.db", *capped) as url:
        fits = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
    assert fits.status_code == 200, fits.text
    assert fits.headers["x-consortium-stop"] == "budget hit after 1 call"
    assert fits.json()["choices"][0]["message"]["content"] == recorded[(FIRST, 0)]
    with serving(replay, tmp_path / "t.db", "--policy", str(vote), "--max-cost", "1e-12") as url:
        nothing = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
    assert nothing.status_code == 402, nothing.text
    assert "every call refused" in nothing.json()["error"]["message"]
    assert nothing.headers["x-consortium-calls"] == "0"


def test_an_answer_made_without_a_dead_endpoint_names_it_and_the_server_logs_the_call(
    records: Path, replay: Path, vote: Path, tmp_path: Path
) -> None:
    question, recorded = _question_and_texts(records)
    data = tomllib.loads(replay.read_text())
    key = "sk-planted-0123456789"  # what the dead model's endpoint is sent; never logged
    for entry in data["models"]:
        if entry["name"] == "gpt-4":  # its server is gone: nothing listens on the port
            entry.update(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
            entry["api_key_env"] = "CONSORTIUM_PLANTED_KEY"
    pool = tmp_path / "pool.toml"
    pool.write_text(dump_pool(parse_pool(data)))
    planted = {"CONSORTIUM_PLANTED_KEY": key}
    with serve_process(pool, tmp_path / "t.db", "--policy", str(vote), env=planted) as server:
        url = f"{server.root}/v1"
        reply = httpx.post(f"{url}/chat/completions", json=_ask_body(question), timeout=60)
        _, account = _streamed(url, _ask_body(question, stream=True))
        log = server.output()
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-consortium-failed"] == "gpt-4"
    sent = {name for name in reply.headers if name.startswith("x-consortium-")}
    learning = {"x-consortium-policy-version", "x-consortium-explored"}  # serve --learn only
    assert sent == set(HEADERS) - learning  # all others apply here; all listed
    assert reply.headers["x-consortium-calls"] == "3"  # the failed call is counted, and named
    answered = reply.headers["x-consortium-answered-by"]
    assert answered != "gpt-4"
    assert reply.json()["choices"][0]["message"]["content"] == recorded[(answered, 0)]
    assert reply.json()["consortium"]["failed"] == ["gpt-4"] == account["failed"]
    failures = [line for line in log.splitlines() if "failed" in line]
    tasks = [reply.headers["x-consortium-task"], "req-"]
    assert len(failures) == 2 and all(
        line.startswith(task) and line.endswith(": call to gpt-4 failed (unreachable)")
        for line, task in zip(failures, tasks, strict=True)
    ), failures
    assert key not in log


def _renamed_policy(vote: Path, out: Path, names: dict[str, str]) -> Path:
    """The vote's folder with its models renamed (a policy naming models the pool lacks)."""
    meta = json.loads((vote / "policy.json").read_text())
    meta["params"] = renamed(meta["params"], names)
    meta["models"] = [names.get(m, m) for m in meta["models"]]
    meta["prices"] = {names.get(m, m): p for m, p in meta["prices"].items()}
    out.mkdir()
    (out / "policy.json").write_text(json.dumps(meta))
    return out


def _ask(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("ask", *args, env={"COLUMNS": "200"}, timeout=120)


def test_a_substitute_runs_the_policy_with_a_pool_model_and_a_bad_one_is_one_line(
    records: Path, replay: Path, vote: Path, tmp_path: Path
) -> None:
    question, recorded = _question_and_texts(records)
    policy = _renamed_policy(vote, tmp_path / "vote-4o", {"gpt-4": "gpt-4o"})
    traces = f"sqlite:///{tmp_path / 't.db'}"
    common = ("--pool", str(replay), "--policy", str(policy), "--traces", traces, question)
    with serving(replay, tmp_path / "t.db", "--policy", str(vote)) as url:
        plain = httpx.post(f"{url}/chat/completions", json=_ask_body(question), timeout=60)
    with serving(
        replay, tmp_path / "t.db", "--policy", str(policy), "--substitute", "gpt-4o=gpt-4"
    ) as url:
        stood_in = httpx.post(f"{url}/chat/completions", json=_ask_body(question), timeout=60)
    assert stood_in.status_code == 200, stood_in.text
    assert "substituted: gpt-4o -> gpt-4" in stood_in.json()["consortium"]["notes"]
    models = [r.headers["x-consortium-models"].split(",") for r in (stood_in, plain)]
    assert sorted(models[0]) == sorted(models[1])  # in the order the calls finished
    for header in ("x-consortium-answered-by", "x-consortium-stop", "x-consortium-calls"):
        assert stood_in.headers[header] == plain.headers[header]
    answered = stood_in.headers["x-consortium-answered-by"]
    assert stood_in.json()["choices"][0]["message"]["content"] == recorded[(answered, 0)]

    asked = _ask(*common, "--substitute", "gpt-4o=gpt-4", "--max-calls", "1")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == recorded[(FIRST, 0)].strip()
    assert "budget hit after 1 call" in asked.stderr
    assert "substituted: gpt-4o -> gpt-4" in asked.stderr
    one_line_error(_ask(*common), "--substitute gpt-4o=POOL_MODEL")
    one_line_error(_ask(*common, "--substitute", "o1=gpt-4"), "names no model 'o1'")
    one_line_error(_ask(*common, "--substitute", "gpt-4o=o1"), "unknown model 'o1'")
    one_line_error(_ask(*common, "--substitute", "gpt-4o"), "expected OLD=NEW")
    random = ("--pool", str(replay), "--policy", "random", "--traces", traces, question)
    one_line_error(_ask(*random, "--substitute", "a=b"), "not an answer-aware policy folder")

    tasks = f"records:path={records}:split=test:limit=3"
    evaluated = run_evaluation(
        EvalConfig(
            replay, tasks, (str(policy),), baselines=False, traces=traces,
            substitutes={"gpt-4o": "gpt-4"},
        )
    )  # fmt: skip
    (results,) = evaluated.per_policy.values()
    assert len(results) == 3 and all(r.outcome is not None for r in results)
    with pytest.raises(ConfigError, match="no --policy is an answer-aware policy folder"):
        run_evaluation(EvalConfig(replay, tasks, ("random",), substitutes={"gpt-4o": "gpt-4"}))


def test_a_scorer_cascade_traces_each_stage_with_the_scorers_probability(
    records: Path, replay: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "cascade"
    write_policy(folder, fit_answer_policy("scorer-cascade", records).policy)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    result = run_evaluation(
        EvalConfig(
            replay, f"records:path={records}:split=test:limit=8", (str(folder),),
            baselines=False, traces=store.url,
        )
    )  # fmt: skip
    stages = list(store.iter_stages(result.run_id))
    tasks = {s["task_id"] for s in stages}
    assert len(tasks) == 8
    for task in tasks:
        rows = [s for s in stages if s["task_id"] == task]
        assert [s["stage"] for s in rows] == list(range(1, len(rows) + 1))  # one model a stage
        assert all(0 < s["score"] < 1 for s in rows if s["status"] == "answered")
        (chosen,) = [s for s in rows if s["chosen"]]
        stop = rows[-1]["decision"]
        # the stop reason's probability is the chosen answer's, as the stage stored it
        assert stop.startswith("stop: ") and f"{rows[-1]['score']:.2f}" in stop, (stop, rows)
        assert chosen["answer_class"] == rows[-1]["answer_class"] or rows[-1]["score"] is None
        assert all(s["decision"].startswith("asked ") for s in rows[:-1])


def test_each_rule_submits_on_what_it_has_when_nothing_more_may_be_asked() -> None:
    weights = {"a": 0.9, "b": 0.6, "c": 0.4}
    b_and_c_agree = [Seen("a", 0, 0), Seen("b", 0, 1), Seen("c", 0, 1)]
    assert played_out(WeightedVote(("a", "b", "c"), weights), b_and_c_agree).index == 1
    switch = ModelSwitch(("a", "b", "c"), weights, {"a": 2, "b": 1, "c": 1})
    assert played_out(switch, [Seen("a", 0, 0)]).index == 0  # not the missing models' answers
    cascade = MotCascade(("a", "b"), "c", 0.9, weights, {"a": 1, "b": 1})
    assert played_out(cascade, [Seen("a", 0, 0), Seen("b", 0, 1)]).index == 0  # a outweighs b
    assert played_out(SingleAnswer("a"), []).index is None
    stopped = budget_stop(cascade, [Seen("a", 0, 0), Seen("b", 0, 1, available=False)])
    assert (stopped.index, stopped.reason) == (0, "budget hit after 2 calls")


def test_a_store_written_before_stages_existed_opens_with_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = TraceStore(url)
    run_id = old.start_run("serve")
    with old.engine.begin() as db:
        db.exec_driver_sql("DROP TABLE stages")
    old.close()
    reopened = TraceStore(url)
    assert reopened.task_stages(run_id, "t") == []
    reopened.record_rows([StageRecord(0, "a", 0, "refused", run_id=run_id, task_id="t")])
    assert [s["status"] for s in reopened.task_stages(run_id, "t")] == ["refused"]
