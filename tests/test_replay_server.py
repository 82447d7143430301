"""The real OpenAIAgent against the real replay server on loopback; no mocks."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from consortium.core.errors import AgentError
from consortium.core.tokens import estimate_tokens
from consortium.core.types import user
from consortium.pool.config import DEFAULT_MAX_TOKENS
from consortium.pool.openai import OpenAIAgent
from consortium.replay.behaviour import replay_answer
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool

MODEL = "meta-math/MetaMath-Mistral-7B"


def agent_for(data: ReplayData, base_url: str, model: str = MODEL, **kwargs: object) -> OpenAIAgent:
    return OpenAIAgent(replay_pool(data, base_url, [model], **kwargs).models[0])  # type: ignore[arg-type]


async def test_models_are_listed(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    client = openai.AsyncOpenAI(base_url=replay_server.base_url, api_key="none")
    ids = [m.id async for m in await client.models.list()]
    await client.close()
    assert ids == replay_data.all_models
    assert len(ids) == 18


async def test_recorded_question_is_answered_as_drawn(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    agent = agent_for(replay_data, replay_server.base_url)
    records = replay_data.select(datasets=["gsm8k"], split="test")[:40]
    for record in records:
        for sample in (0, 1):
            completion = await agent.chat([user(record.question)], seed=sample)
            expected = replay_answer(record, MODEL, sample=sample)
            assert completion.text == expected.text
            assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
            assert completion.finish_reason == "stop"
            assert completion.model == "MetaMath-Mistral-7B"
    await agent.aclose()


async def test_question_inside_a_longer_prompt_is_found(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    record = replay_data.select(datasets=["mmlu"], split="test")[5]
    agent = agent_for(replay_data, replay_server.base_url)
    wrapped = [
        {"role": "system", "content": "You are a careful verifier."},
        user(f"Earlier work follows.\n\nQuestion:\n{record.question}\n\nCheck it step by step."),
    ]
    completion = await agent.chat(wrapped)  # type: ignore[arg-type]
    assert completion.text == replay_answer(record, MODEL).text
    await agent.aclose()


async def test_unrecorded_question_and_unknown_model_are_clear_errors(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    agent = agent_for(replay_data, replay_server.base_url)
    with pytest.raises(AgentError, match="no recorded outcome") as caught:
        await agent.chat([user("What is the airspeed velocity of an unladen swallow?")])
    assert caught.value.status == 404
    await agent.aclose()
    stranger = agent_for(replay_data, replay_server.base_url)
    object.__setattr__(stranger.config, "model", "gpt-7")
    with pytest.raises(AgentError, match="not a recorded model"):
        await stranger.chat([user("hi")])
    await stranger.aclose()


def test_malformed_bodies_get_http_400(replay_server: ReplayServerProcess) -> None:
    url = f"{replay_server.base_url}/chat/completions"
    response = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    response = httpx.post(url, json={"model": MODEL, "messages": []})
    assert response.status_code == 400
    response = httpx.post(url, json=["a", "list"])
    assert response.status_code == 400


async def test_streaming_and_length_limit(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    record = replay_data.select(datasets=["gsm8k"], split="test")[0]
    client = openai.AsyncOpenAI(base_url=replay_server.base_url, api_key="none")
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": record.question}], stream=True
    )
    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    assert "".join(parts) == replay_answer(record, MODEL).text
    short = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": record.question}], max_tokens=2
    )
    assert short.choices[0].finish_reason == "length"
    assert short.choices[0].message.content == replay_answer(record, MODEL).text[:8]
    await client.close()


async def test_the_longest_recorded_response_comes_back_whole_through_the_replay_pool(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    """RouterBench's mistral-7b wrote answers past the default max_tokens: the pool lets them
    through, so the HTTP path reads the text the recorded verdict graded."""
    model = "mistralai/mistral-7b-chat"
    recorded = [r for r in replay_data.select(source="routerbench") if r.responses]
    longest = max(recorded, key=lambda r: len(r.responses[model]))  # type: ignore[index]
    text = replay_answer(longest, model).text
    assert estimate_tokens(text) > DEFAULT_MAX_TOKENS
    agent = agent_for(replay_data, replay_server.base_url, model)
    assert agent.config.max_tokens >= estimate_tokens(text)
    completion = await agent.chat([user(longest.question)])
    await agent.aclose()
    assert (completion.text, completion.finish_reason) == (text, "stop")


def test_a_launched_server_dies_with_its_parent(replay_dir: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from consortium.replay.launch import ReplayServerProcess\n"
        f"server = ReplayServerProcess({str(replay_dir)!r}, '--sources', 'split2').start()\n"
        "print(server.port, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    port = int(parent.stdout.readline())
    assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=0.5)
        except httpx.HTTPError:
            return  # gone
        time.sleep(0.2)
    raise AssertionError("the replay server outlived the process that started it")
