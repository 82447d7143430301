"""OpenTelemetry spans of model calls, read back from an in-memory exporter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from consortium.coord.baselines import SingleModel
from consortium.core.errors import AgentError
from consortium.core.types import user
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.runtime.telemetry import Telemetry


def telemetry(capture_content: bool) -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(provider.get_tracer("test"), capture_content=capture_content), exporter


@pytest.mark.parametrize("capture_content", [False, True])
async def test_every_call_is_a_genai_span(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    tmp_path: Path,
    capture_content: bool,
) -> None:
    model = replay_data.models["split2"][0]
    tracing, exporter = telemetry(capture_content)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=3).tasks
    async with Pool(replay_pool(replay_data, replay_server.base_url, [model])) as pool:
        run_id = store.start_run("test")
        caller = Caller(pool, store, run_id, telemetry=tracing)
        name = pool.names[0]
        await run_policy(SingleModel(name), tasks, ReplayGrader(), caller)
        with pytest.raises(AgentError):
            await caller.for_task("unrecorded", "test").call(
                name, [user("not a recorded question")]
            )
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    rows = {row["task_id"]: row for row in store.iter_calls(run_id)}
    for span in spans[:3]:
        attributes = dict(span.attributes or {})
        assert span.name == f"chat {model}"
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == model
        assert attributes["consortium.model"] == name
        row = rows[str(attributes["consortium.task_id"])]
        assert attributes["gen_ai.usage.input_tokens"] == row["prompt_tokens"]
        assert attributes["gen_ai.usage.output_tokens"] == row["completion_tokens"]
        assert attributes["consortium.cost_usd"] == pytest.approx(row["cost"])
        assert attributes["server.address"] == "127.0.0.1"
        assert span.status.status_code != StatusCode.ERROR
        if capture_content:
            sent = json.loads(str(attributes["gen_ai.input.messages"]))
            assert sent[0]["parts"][0]["content"] in {t.question for t in tasks}
            answer = json.loads(str(attributes["gen_ai.output.messages"]))
            assert answer[0]["parts"][0]["content"] == row["response"]
        else:
            assert not any("messages" in key for key in attributes)
    failed = spans[3]
    assert failed.status.status_code == StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "AgentError"


def test_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONSORTIUM_OTEL", raising=False)
    assert Telemetry.from_env() is None
    monkeypatch.setenv("CONSORTIUM_OTEL", "1")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    configured = Telemetry.from_env()
    assert configured is not None and configured.capture_content
