"""Retries, timeouts and unreachable endpoints, with faults injected by the real replay server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.core.errors import AgentError
from consortium.core.types import Completion, user
from consortium.pool.openai import OpenAIAgent
from consortium.replay.behaviour import replay_answer
from consortium.replay.data import ReplayData, ReplayRecord
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool

MODEL = "cognitivecomputations/dolphin-2.9-llama3-8b"


def serve(replay_dir: Path, *faults: str) -> Iterator[ReplayServerProcess]:
    with ReplayServerProcess(replay_dir, "--sources", "split2", *faults) as server:
        yield server


@pytest.fixture(scope="module")
def faulty_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    yield from serve(replay_dir, "--error-rate", "0.2", "--error-codes", "500,503,429")


@pytest.fixture(scope="module")
def hanging_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    yield from serve(replay_dir, "--timeout-rate", "1.0", "--hang-seconds", "20")


async def ask_all(
    server: ReplayServerProcess, data: ReplayData, *, max_retries: int, split: str, count: int
) -> tuple[list[ReplayRecord], list[Completion | BaseException]]:
    """`count` recorded GSM8K questions at once through one agent; failures returned, not raised."""
    agent = OpenAIAgent(
        replay_pool(data, server.base_url, [MODEL], max_retries=max_retries).models[0]
    )
    records = data.select(datasets=["gsm8k"], split=split)[:count]
    results = await asyncio.gather(
        *(agent.chat([user(r.question)]) for r in records), return_exceptions=True
    )
    await agent.aclose()
    return records, list(results)


async def test_injected_errors_are_retried_and_change_no_answer(
    faulty_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    records, completions = await ask_all(
        faulty_server, replay_data, max_retries=8, split="test", count=100
    )
    for record, completion in zip(records, completions, strict=True):
        assert isinstance(completion, Completion)
        assert completion.text == replay_answer(record, MODEL).text
    faults = faulty_server.stats()["faults"]
    assert isinstance(faults, dict)
    assert {"500", "503", "429"} <= set(faults)
    assert sum(faults.values()) > 12  # about 0.2/(1-0.2) x 100 = 25 injected


async def test_retries_run_out_with_a_clear_error(
    faulty_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    _, results = await ask_all(faulty_server, replay_data, max_retries=0, split="train", count=60)
    failures = [r for r in results if isinstance(r, AgentError)]
    assert failures, "with no retries some calls must fail"
    assert all(f.status in (500, 503, 429) for f in failures)
    assert all(
        str(f).startswith(f"model 'dolphin-2.9-llama3-8b': HTTP {f.status}") for f in failures
    )


async def test_a_hanging_endpoint_times_out_within_its_deadline(
    hanging_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    config = replay_pool(
        replay_data, hanging_server.base_url, [MODEL], timeout=0.5, max_retries=1
    ).models[0]
    agent = OpenAIAgent(config)
    record = replay_data.select(datasets=["gsm8k"], split="test")[0]
    started = time.monotonic()
    with pytest.raises(AgentError, match=r"timed out after 0\.5s"):
        await agent.chat([user(record.question)])
    # 2 attempts x 0.5 s plus the SDK's backoff, not the 20 s hang (slack for a busy machine)
    assert time.monotonic() - started < 10.0
    await agent.aclose()


async def test_an_unreachable_endpoint_is_named(replay_data: ReplayData) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    agent = OpenAIAgent(replay_pool(replay_data, url, [MODEL], max_retries=1).models[0])
    with pytest.raises(AgentError, match=r"cannot reach http://127\.0\.0\.1"):
        await agent.chat([user("hello")])
    await agent.aclose()


@pytest.fixture(scope="module")
def garbage_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    yield from serve(replay_dir, "--garbage-rate", "0.3")


async def test_broken_bodies_are_retried_and_change_no_answer(
    garbage_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    records, completions = await ask_all(
        garbage_server, replay_data, max_retries=6, split="test", count=100
    )
    for record, completion in zip(records, completions, strict=True):
        assert isinstance(completion, Completion)
        assert completion.text == replay_answer(record, MODEL).text
    faults = garbage_server.stats()["faults"]
    assert isinstance(faults, dict)
    assert faults.get("malformed", 0) > 0 and faults.get("empty", 0) > 0


async def test_broken_bodies_without_retries_are_agent_errors(
    garbage_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    _, results = await ask_all(garbage_server, replay_data, max_retries=0, split="train", count=60)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert failures and all(isinstance(f, AgentError) for f in failures)  # never a raw JSON error
    assert {("malformed body" in str(f)) or ("no choices" in str(f)) for f in failures} == {True}


async def test_the_circuit_opens_after_failures_in_a_row(replay_data: ReplayData) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    base = replay_pool(replay_data, url, [MODEL], max_retries=0).models[0]
    agent = OpenAIAgent(base.model_copy(update={"circuit_failures": 2, "circuit_cooldown": 60}))
    for _ in range(2):
        with pytest.raises(AgentError, match="cannot reach"):
            await agent.chat([user("hello")])
    started = time.monotonic()
    with pytest.raises(AgentError, match="circuit open after 2 failures in a row"):
        await agent.chat([user("hello")])
    # refused at once (the message names the breaker); a bound a loaded machine keeps
    assert time.monotonic() - started < 1.0
    agent.breaker.cooldown = 0.0
    with pytest.raises(AgentError, match="cannot reach"):
        await agent.chat([user("hello")])  # after the cooldown it tries again
    await agent.aclose()


async def test_a_failing_model_falls_back_and_the_trace_says_so(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    from consortium.coord.baselines import SingleModel
    from consortium.evaluation.runner import run_policy
    from consortium.pool import Pool
    from consortium.pool.config import parse_pool
    from consortium.replay.tasks import ReplayGrader, load_replay_tasks
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore

    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    working = replay_pool(replay_data, replay_server.base_url, [MODEL]).models[0]
    config = parse_pool(
        {
            "models": [
                {"name": "down", "base_url": down, "model": MODEL, "max_retries": 0,
                 "fallback": working.name},
                working.model_dump(exclude_none=True),
            ]
        }
    )  # fmt: skip
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=5).tasks
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    run_id = store.start_run("test")
    async with Pool(config) as pool:
        results = await run_policy(
            SingleModel("down"), tasks, ReplayGrader(), Caller(pool, store, run_id)
        )
    expected = {
        r.id: replay_answer(r, MODEL).text
        for r in replay_data.select(datasets=["gsm8k"], split="test")
        if r.id in {t.id for t in tasks}
    }
    assert all(r.error is None and r.answer == expected[r.task.id] for r in results)
    rows = list(store.iter_calls(run_id))
    failed = [r for r in rows if r["model"] == "down"]
    stood_in = [r for r in rows if r["model"] == working.name]
    assert len(failed) == len(stood_in) == 5
    assert all("cannot reach" in (r["error"] or "") for r in failed)
    assert all(r["fallback_from"] == "down" and r["error"] is None for r in stood_in)


async def test_fallbacks_never_loop(replay_data: ReplayData) -> None:
    from consortium.pool import Pool
    from consortium.pool.config import parse_pool
    from consortium.runtime.caller import Caller

    entries = [
        {"name": name, "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": MODEL,
         "max_retries": 0, "fallback": other}
        for name, other in (("a", "b"), ("b", "a"))
    ]  # fmt: skip
    async with Pool(parse_pool({"models": entries})) as pool:
        caller = Caller(pool, None, "test").for_task("t", "test")
        with pytest.raises(AgentError, match="cannot reach"):
            await caller.call("a", [user("hello")])
    # two failed attempts (each counted), no answer, no third try
    assert [(c.model, c.failed) for c in caller.made] == [("a", True), ("b", True)]


def test_a_fallback_must_be_in_the_pool() -> None:
    from consortium.core.errors import ConfigError
    from consortium.pool.config import parse_pool

    entry = {"name": "a", "base_url": "http://127.0.0.1:1/v1", "model": MODEL, "fallback": "z"}
    with pytest.raises(ConfigError, match="fallback 'z' is not a model of this pool"):
        parse_pool({"models": [entry]})


async def test_a_task_never_outlives_its_deadline(
    hanging_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    from consortium.coord.baselines import SingleModel
    from consortium.evaluation.runner import run_policy
    from consortium.pool import Pool
    from consortium.replay.tasks import ReplayGrader, load_replay_tasks
    from consortium.runtime.caller import Caller

    # The endpoint hangs for 20 s and the model's own timeout is 60 s: only the deadline acts.
    config = replay_pool(replay_data, hanging_server.base_url, [MODEL], timeout=60, max_retries=0)
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=4).tasks
    started = time.monotonic()
    async with Pool(config) as pool:
        results = await run_policy(
            SingleModel(config.names[0]),
            tasks,
            ReplayGrader(),
            Caller(pool, None, "test"),
            deadline=0.5,
        )
    assert time.monotonic() - started < 10.0  # the 0.5 s deadline, not the 20 s hang
    assert all(
        r.error == "TimeoutError: task deadline of 0.5s passed" and not r.grade.correct
        for r in results
    )


@pytest.mark.parametrize(
    ("faults", "max_retries", "kind"),
    [
        (("--drop-rate", "0.3"), 6, "dropped"),  # retried
        (("--slow-rate", "0.5", "--slow-seconds", "0.1"), 0, "slow"),  # waited for, whole
    ],
)
async def test_dropped_and_slow_bodies_change_no_answer(
    replay_dir: Path,
    replay_data: ReplayData,
    faults: tuple[str, ...],
    max_retries: int,
    kind: str,
) -> None:
    for server in serve(replay_dir, *faults):
        records, completions = await ask_all(
            server, replay_data, max_retries=max_retries, split="test", count=50
        )
        assert [c.text for c in completions if isinstance(c, Completion)] == [
            replay_answer(r, MODEL).text for r in records
        ]
        injected = server.stats()["faults"]
        assert isinstance(injected, dict) and injected.get(kind, 0) > 5


async def test_a_call_sends_the_key_the_model_and_the_params_as_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What reaches the endpoint: the bearer key from the environment, the configured model id,
    the messages unchanged, and the call's parameters."""
    from consortium.pool.config import parse_pool
    from tests.scripted_server import scripted_server

    monkeypatch.setenv("CONSORTIUM_TEST_KEY", "sk-test-123")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": [{"type": "text", "text": "And 3 + 3?"}]},
    ]
    with scripted_server({"remote-id": lambda _messages: "The answer is 6."}) as server:
        pool = parse_pool(
            {
                "models": [
                    {
                        "name": "m",
                        "base_url": server.base_url,
                        "model": "remote-id",
                        "api_key_env": "CONSORTIUM_TEST_KEY",
                    }
                ]
            }
        )
        agent = OpenAIAgent(pool.get("m"))
        completion = await agent.chat(messages, max_tokens=7, temperature=0.0, seed=3)
    assert completion.text == "The answer is 6."
    (body,) = server.requests
    assert body["model"] == "remote-id" and body["messages"] == messages
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (7, 0.0, 3)
    assert server.headers[0]["authorization"] == "Bearer sk-test-123"


class _Scripted:
    """An in-process backend: streams `pieces`, then fails if told to."""

    def __init__(self, name: str, pieces: list[str], fail: bool) -> None:
        self.name, self.pieces, self.fail = name, pieces, fail
        self.calls = 0

    async def chat(self, messages: object, **params: object) -> Completion:
        self.calls += 1
        on_delta = params.get("on_delta")
        for piece in self.pieces:
            if callable(on_delta):
                on_delta(piece)
        if self.fail:
            raise AgentError(self.name, "connection dropped")
        return Completion("".join(self.pieces), self.name)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("sent_before_failing", [[], ["The answer is 1"]])
async def test_a_fallback_never_continues_a_stream_another_model_began(
    sent_before_failing: list[str],
) -> None:
    """Fails before any text: the fallback answers and streams its own text. Fails after some
    text reached the listener: the error is raised, and no other model's text is appended."""
    from consortium.pool import Pool
    from consortium.pool.config import parse_pool
    from consortium.runtime.caller import Caller

    config = parse_pool(
        {
            "models": [
                {"name": "a", "base_url": "http://a/v1", "model": "a", "fallback": "b"},
                {"name": "b", "base_url": "http://b/v1", "model": "b"},
            ]
        }
    )
    first = _Scripted("a", sent_before_failing, fail=True)
    second = _Scripted("b", ["The answer ", "is 2"], fail=False)
    heard: list[str] = []
    async with Pool(config, agents={"a": first, "b": second}) as pool:
        caller = Caller(pool, None, "test").for_task("t", "test")
        caller.stream_to = heard.append
        if sent_before_failing:
            with pytest.raises(AgentError, match="connection dropped"):
                await caller.call("a", [user("1 + 1?")], final=True)
            assert heard == sent_before_failing and second.calls == 0
        else:
            completion = await caller.call("a", [user("1 + 1?")], final=True)
            assert completion.text == "The answer is 2" and heard == ["The answer ", "is 2"]
