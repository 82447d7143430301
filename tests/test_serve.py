"""`consortium serve` over the replay pool, driven by the unchanged openai SDK."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer, free_port
from consortium.runtime.store import TraceStore
from tests.test_cli import cli, one_line_error

TOKEN = "serve-token-for-tests"


@pytest.fixture(scope="module")
def pool_path(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    path = tmp_path_factory.mktemp("serve") / "pool.toml"
    models = replay_data.models["split2"][:3]
    path.write_text(dump_pool(replay_pool(replay_data, replay_server.base_url, models)))
    return path


def serve_process(
    pool: Path,
    traces: Path,
    *args: str,
    token: str | None = None,
    env: dict[str, str] | None = None,
) -> ChildServer:
    """`consortium serve` over `pool`, traced into `traces` (its log: `.output()`)."""
    return ChildServer(
        "serve", "--pool", str(pool), "--traces", f"sqlite:///{traces}", *args,
        ready_path="/health", label="serve",
        env={"CONSORTIUM_SERVE_TOKEN": token or "", **(env or {})},
    )  # fmt: skip


@contextmanager
def serving(pool: Path, traces: Path, *args: str, token: str | None = None) -> Iterator[str]:
    """`consortium serve` over `pool`, traced into `traces`; yields its base URL."""
    with serve_process(pool, traces, *args, token=token) as server:
        yield f"{server.root}/v1"


def recorded_question(data: ReplayData, index: int = 0) -> str:
    return data.select(source="split2", datasets=["gsm8k"], split="test")[index].question


VOTE_MODELS = ["Mistral-7B-v0.1", "MetaMath-Mistral-7B", "Chinese-Mistral-7B-v0.1"]
VOTE = "workflow:judge-vote:models=" + ",".join(VOTE_MODELS)


def test_an_unchanged_openai_client_gets_answers(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    question = recorded_question(replay_data)
    with serving(pool_path, tmp_path / "t.db", "--policy", VOTE) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused")
        assert [m.id for m in client.models.list()] == ["consortium"]
        raw = client.chat.completions.with_raw_response.create(
            model="consortium", messages=[{"role": "user", "content": question}]
        )
        answer = raw.parse()
        text = answer.choices[0].message.content or ""
        assert text.startswith("(replay of ") and "The answer is " in text
        assert raw.headers["x-consortium-calls"] == "4"
        assert raw.headers["x-consortium-models"].split(",") == [
            "Mistral-7B-v0.1",
            "MetaMath-Mistral-7B",
            "Chinese-Mistral-7B-v0.1",
        ] or set(raw.headers["x-consortium-models"].split(",")) == {
            "Mistral-7B-v0.1",
            "MetaMath-Mistral-7B",
            "Chinese-Mistral-7B-v0.1",
        }
        assert float(raw.headers["x-consortium-cost"]) > 0
        assert answer.usage is not None and answer.usage.total_tokens > 0
        streamed = client.chat.completions.create(
            model="consortium", messages=[{"role": "user", "content": question}], stream=True
        )
        pieces = [c.choices[0].delta.content or "" for c in streamed if c.choices]
        assert len([p for p in pieces if p]) > 1 and "".join(pieces) == text
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": question}]
            )
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="consortium", messages=[])
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    (run,) = store.list_runs()
    assert run["kind"] == "serve" and run["status"] == "finished"
    task_id = raw.headers["x-consortium-task"]
    calls = [c for c in store.iter_calls(run["run_id"]) if c["task_id"] == task_id]
    assert len(calls) == 4
    # The judge (turn 4) picks; the answer is the picked voter's own recorded text.
    assert text in [c["response"] for c in calls if c["turn"] < 4]


def test_two_hundred_concurrent_requests_no_error_no_lost_trace(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    questions = [recorded_question(replay_data, i) for i in range(50)]

    async def ask_all(base_url: str) -> list[int]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)

        async def one(i: int) -> int:
            raw = await client.chat.completions.with_raw_response.create(
                model="consortium",
                messages=[{"role": "user", "content": questions[i % len(questions)]}],
            )
            assert raw.parse().choices[0].message.content
            return int(raw.headers["x-consortium-calls"])

        try:
            return list(await asyncio.gather(*(one(i) for i in range(200))))
        finally:
            await client.close()

    with serving(pool_path, tmp_path / "t.db", "--policy", VOTE) as base_url:
        calls = asyncio.run(ask_all(base_url))
    assert calls == [4] * 200
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    (run,) = store.list_runs()
    rows = list(store.iter_calls(run["run_id"]))
    assert len(rows) == sum(calls) and len({r["task_id"] for r in rows}) == 200
    assert all(r["error"] is None and r["response"] for r in rows)


def test_bearer_token_and_budget_per_request(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    question = recorded_question(replay_data)
    messages = [{"role": "user", "content": question}]
    with serving(
        pool_path, tmp_path / "t.db", "--policy", VOTE, "--max-calls", "2", token=TOKEN
    ) as base_url:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=base_url, api_key="wrong").models.list()
        client = openai.OpenAI(base_url=base_url, api_key=TOKEN, max_retries=0)
        assert [m.id for m in client.models.list()] == ["consortium"]
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="consortium", messages=messages)
        assert refused.value.status_code == 402
        # The third voter's call is refused before it is made; the others never exceed the cap.
        assert int(refused.value.response.headers["x-consortium-calls"]) <= 2
        assert "budget" in refused.value.message or "cap" in refused.value.message


def test_serving_beyond_loopback_needs_a_token(pool_path: Path) -> None:
    args = ["serve", "--pool", str(pool_path), "--policy", "single:Mistral-7B-v0.1"]
    result = cli(*args, "--host", "0.0.0.0", env={"CONSORTIUM_SERVE_TOKEN": ""})
    one_line_error(result, "without a token")


def test_serving_an_evolve_folder_answers_with_its_final_strategy(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    from consortium.coord.strategy import Plan, Strategy

    folder = tmp_path / "evolve"
    folder.mkdir()
    final = Strategy(default=Plan(first="single:MetaMath-Mistral-7B"))
    (folder / "state.json").write_text(json.dumps({"incumbent": final.model_dump(mode="json")}))
    question = recorded_question(replay_data)
    with serving(pool_path, tmp_path / "t.db", "--policy", str(folder)) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused")
        raw = client.chat.completions.with_raw_response.create(
            model="consortium", messages=[{"role": "user", "content": question}]
        )
    assert raw.headers["x-consortium-models"] == "MetaMath-Mistral-7B"
    assert (raw.parse().choices[0].message.content or "").startswith(
        "(replay of meta-math/MetaMath-Mistral-7B)"
    )


def test_ask_takes_an_evolve_folder_as_serve_does(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    from consortium.coord.strategy import Plan, Strategy

    folder = tmp_path / "evolve"
    folder.mkdir()
    final = Strategy(default=Plan(first="single:MetaMath-Mistral-7B"))
    (folder / "state.json").write_text(json.dumps({"incumbent": final.model_dump(mode="json")}))
    args = ["--pool", str(pool_path), "--policy", str(folder)]
    traces = ["--traces", f"sqlite:///{tmp_path / 't.db'}"]
    asked = cli("ask", recorded_question(replay_data), *args, *traces)
    assert asked.returncode == 0, asked.stderr
    assert asked.stderr.startswith(f"strategy:{final.id} · 1 call(s)"), asked.stderr
    refused = cli("ask", "What is 2 + 2?", *args, *traces, "--substitute", "a=b")
    one_line_error(refused, f"--substitute: {folder} is an evolve folder")


def test_a_request_past_its_deadline_is_answered_504(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    messages = [{"role": "user", "content": recorded_question(replay_data)}]
    with serving(
        pool_path, tmp_path / "t.db", "--policy", VOTE, "--request-timeout", "0.001"
    ) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        with pytest.raises(openai.APIStatusError) as late:
            client.chat.completions.create(model="consortium", messages=messages)
    assert late.value.status_code == 504 and "in time" in late.value.message


def test_huge_and_undecodable_requests_get_clear_errors(
    pool_path: Path, replay_data: ReplayData, tmp_path: Path
) -> None:
    with serving(pool_path, tmp_path / "t.db", "--policy", "single:Mistral-7B-v0.1") as base_url:
        url = f"{base_url}/chat/completions"
        huge = {"model": "consortium", "messages": [{"role": "user", "content": "x" * 1_000_000}]}
        answer = httpx.post(url, json=huge, timeout=60)
        assert answer.status_code == 502  # the replay endpoint has no such question: said so
        assert "no recorded outcome" in answer.json()["error"]["message"]
        # The failed call was made, and the accounting says so.
        assert answer.headers["x-consortium-calls"] == "1"
        assert answer.headers["x-consortium-models"] == "Mistral-7B-v0.1"
        garbled = httpx.post(url, content=b"\xff\xfe{not json", timeout=10)
        assert garbled.status_code == 400 and "not valid JSON" in garbled.json()["error"]["message"]
        empty = {"model": "consortium", "messages": [{"role": "user", "content": "   "}]}
        assert httpx.post(url, json=empty, timeout=10).status_code == 400
        question = recorded_question(replay_data)
        ok = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
        assert httpx.post(url, json=ok, timeout=30).status_code == 200  # still serving


def test_every_request_field_is_honoured_or_refused_by_name(tmp_path: Path) -> None:
    from consortium.pool.config import parse_pool
    from tests.scripted_server import scripted_server

    with scripted_server({"echo": lambda messages: "The answer is 4."}) as upstream:
        pool = tmp_path / "pool.toml"
        entry = {"name": "echo", "base_url": upstream.base_url, "model": "echo"}
        pool.write_text(dump_pool(parse_pool({"models": [entry]})))
        with serving(pool, tmp_path / "t.db", "--policy", "single:echo") as base_url:
            client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
            messages = [{"role": "user", "content": "What is 2 + 2?"}]
            answer = client.chat.completions.create(
                model="consortium",
                messages=messages,  # type: ignore[arg-type]
                max_tokens=5,
                temperature=0.3,
                top_p=0.9,
                stop=["\n\n"],
                seed=7,
                n=3,
                user="someone",
            )
            # Honoured: each of the n runs made its call with the request's fields.
            assert [c.message.content for c in answer.choices] == ["The answer is 4."] * 3
            assert [c.index for c in answer.choices] == [0, 1, 2]
            assert len(upstream.requests) == 3
            for sent in upstream.requests:
                assert sent["max_tokens"] == 5 and sent["temperature"] == 0.3
                assert sent["top_p"] == 0.9 and sent["stop"] == ["\n\n"] and sent["seed"] == 7
            client.chat.completions.create(
                model="consortium",
                messages=messages,  # type: ignore[arg-type]
                max_completion_tokens=9,
            )
            assert upstream.requests[-1]["max_tokens"] == 9
            # Refused, by name, before any model is called.
            called = len(upstream.requests)
            refused = {
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                "response_format": {"type": "json_object"},
                "logprobs": True,
                "presence_penalty": 0.5,
                "temperature": 3.5,
                "n": 99,
                "stop": ["a", "b", "c", "d", "e"],
            }
            for name, value in refused.items():
                with pytest.raises(openai.BadRequestError) as caught:
                    client.chat.completions.create(
                        model="consortium",
                        messages=messages,  # type: ignore[arg-type]
                        **{name: value},  # type: ignore[arg-type]
                    )
                body = caught.value.body
                assert isinstance(body, dict) and body["param"] == name, name
                assert caught.value.message.startswith("Error code: 400 - ") and name in str(body)
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model="consortium",
                    messages=messages,  # type: ignore[arg-type]
                    n=2,
                    stream=True,
                )
            assert "cannot be streamed" in str(caught.value.body)
            assert len(upstream.requests) == called


def test_a_single_model_policy_streams_tokens_as_the_model_makes_them(
    replay_data: ReplayData, replay_dir: Path, tmp_path: Path
) -> None:
    import time

    per_token = 0.02  # declared: the replay server sends one 4-character token every 20 ms
    with ReplayServerProcess(
        replay_dir, "--sources", "split2", "--latency-per-token", str(per_token)
    ) as upstream:
        pool = tmp_path / "pool.toml"
        models = replay_data.models["split2"][:2]
        pool.write_text(dump_pool(replay_pool(replay_data, upstream.base_url, models)))
        question = recorded_question(replay_data, 1)
        with serving(pool, tmp_path / "t.db", "--policy", "single:Mistral-7B-v0.1") as base_url:
            client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
            messages = [{"role": "user", "content": question}]
            whole = client.chat.completions.create(
                model="consortium",
                messages=messages,  # type: ignore[arg-type]
            )
            started = time.perf_counter()
            arrivals: list[tuple[float, str]] = []
            last = None
            for chunk in client.chat.completions.create(
                model="consortium",
                messages=messages,  # type: ignore[arg-type]
                stream=True,
            ):
                last = chunk
                if chunk.choices and chunk.choices[0].delta.content:
                    arrivals.append((time.perf_counter() - started, chunk.choices[0].delta.content))
            total = time.perf_counter() - started
    text = whole.choices[0].message.content or ""
    assert "".join(piece for _, piece in arrivals) == text
    tokens = -(-len(text) // 4)
    assert tokens >= 10 and len(arrivals) == tokens  # one event per upstream token
    # Tokens arrive as the upstream makes them, not at once when the answer is complete: the
    # first and the last arrive at least half the upstream's pacing apart (a buffered answer
    # arrives in one burst, microseconds apart; scheduling delays may bunch a few tokens).
    assert arrivals[-1][0] - arrivals[0][0] >= 0.5 * per_token * (tokens - 1)
    assert total >= per_token * (tokens - 1)
    extra = last.model_extra if last is not None else None
    assert extra is not None and extra["consortium"]["calls"] == 1
    assert last is not None and last.usage is not None and last.usage.completion_tokens == tokens


def _rewrite(path: Path, text: str) -> None:
    """Replace the file at once, as a tool that writes a config file should."""
    written = path.with_suffix(".partial")
    written.write_text(text)
    os.replace(written, path)


def test_a_pool_file_rewritten_while_serving_is_followed_and_a_broken_one_is_one_line(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    """The pool's servers came back on new ports (`consortium local start` rewrote the file):
    the running server answers from them without a restart."""
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    pool = tmp_path / "pool.toml"
    moved = replay_pool(replay_data, dead, replay_data.models["split2"][:2], max_retries=0)
    pool.write_text(dump_pool(moved))
    models = moved.names
    ask = {
        "model": "consortium",
        "messages": [{"role": "user", "content": recorded_question(replay_data)}],
    }
    with serve_process(pool, tmp_path / "t.db", "--policy", f"single:{models[0]}") as server:
        url = f"{server.root}/v1/chat/completions"
        before = httpx.post(url, json=ask, timeout=60)
        assert before.status_code == 502 and "cannot reach" in before.text
        live = replay_pool(
            replay_data, replay_server.base_url, replay_data.models["split2"][:2], max_retries=0
        )
        _rewrite(pool, dump_pool(live))
        after = httpx.post(url, json=ask, timeout=60)
        assert after.status_code == 200, after.text
        assert "x-consortium-failed" not in after.headers
        _rewrite(pool, "[[models]]\nname = ")
        for _ in range(2):
            kept = httpx.post(url, json=ask, timeout=60)
            assert kept.status_code == 200, kept.text
        log = server.output().splitlines()
    assert f"{before.headers['x-consortium-task']}: call to {models[0]} failed (unreachable)" in log
    assert [line for line in log if "reloaded" in line] == [
        f"pool file {pool} reloaded: new or changed: {', '.join(models)}"
    ]
    (broken,) = [line for line in log if "cannot be used" in line]
    assert broken.startswith(f"{pool} changed but cannot be used; the pool read before stays: ")
    assert "invalid TOML" in broken


def test_a_reloaded_pool_keeps_the_agents_of_the_models_whose_entry_is_the_same() -> None:
    from consortium.pool import Pool
    from consortium.pool.config import parse_pool

    def entry(name: str, port: int) -> dict[str, object]:
        return {"name": name, "base_url": f"http://127.0.0.1:{port}/v1", "model": name}

    pool = Pool(parse_pool({"models": [entry("a", 8001), entry("b", 8002), entry("c", 8003)]}))
    moved, retired = pool.reloaded(parse_pool({"models": [entry("a", 8001), entry("b", 9002)]}))
    assert moved.names == ["a", "b"]
    assert moved.agents["a"] is pool.agents["a"]  # its connections and circuit carry on
    assert moved.agents["b"] is not pool.agents["b"]
    assert moved.model("b").base_url is not None and moved.model("b").base_url.port == 9002
    assert retired == [pool.agents["b"], pool.agents["c"]]

    async def close() -> None:
        await moved.aclose()
        for agent in retired:
            await agent.aclose()

    asyncio.run(close())
