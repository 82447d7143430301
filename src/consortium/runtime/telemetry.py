"""Optional OpenTelemetry export: one span per model call, named and attributed as the GenAI
semantic conventions say (`chat {model}`, `gen_ai.*` attributes), so Jaeger, Langfuse or Phoenix
read them. Prompts and answers are attached only when asked (`capture_content`), as the
conventions' `gen_ai.input.messages` / `gen_ai.output.messages`.

`Telemetry.from_env()` turns it on when `CONSORTIUM_OTEL=1`: spans go to the OTLP/HTTP endpoint
of the standard `OTEL_EXPORTER_OTLP_*` variables; content is captured when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Needs the `otel` extra.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from consortium.core.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from consortium.core.types import Completion, Message
    from consortium.pool.config import ModelConfig

SCOPE = "consortium"


class CallSpan:
    """What a finished call adds to its span."""

    def __init__(self, span: Span, capture_content: bool) -> None:
        self.span = span
        self.capture_content = capture_content

    def finish(self, completion: Completion, cost: float) -> None:
        usage = completion.usage
        self.span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        if completion.finish_reason:
            self.span.set_attribute("gen_ai.response.finish_reasons", [completion.finish_reason])
        self.span.set_attribute("consortium.cost_usd", cost)
        self.span.set_attribute("consortium.cached", completion.cached)
        if self.capture_content:
            output = [
                {"role": "assistant", "parts": [{"type": "text", "content": completion.text}]}
            ]
            self.span.set_attribute("gen_ai.output.messages", json.dumps(output))


class Telemetry:
    def __init__(self, tracer: Tracer, *, capture_content: bool = False) -> None:
        self.tracer = tracer
        self.capture_content = capture_content

    @classmethod
    def from_env(cls) -> Telemetry | None:
        if os.environ.get("CONSORTIUM_OTEL", "") not in ("1", "true"):
            return None
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise ConfigError(
                "CONSORTIUM_OTEL=1 needs the otel extra: pip install 'consortium[otel]'"
            ) from None
        provider = TracerProvider(resource=Resource.create({"service.name": "consortium"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        capture = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
        return cls(provider.get_tracer(SCOPE), capture_content=capture.lower() == "true")

    @contextmanager
    def call(
        self,
        config: ModelConfig,
        messages: Sequence[Message],
        params: dict[str, Any],
        *,
        role: str,
        task_id: str,
        policy: str,
    ) -> Iterator[CallSpan]:
        """A span around one call; an exception leaves it with status ERROR and `error.type`."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": config.model,
            "consortium.model": config.name,
            "consortium.role": role,
            "consortium.task_id": task_id,
            "consortium.policy": policy,
        }
        if config.base_url:
            url = urlparse(str(config.base_url))
            attributes["server.address"] = url.hostname or ""
            if url.port:
                attributes["server.port"] = url.port
        for key in ("max_tokens", "temperature", "seed"):
            if params.get(key) is not None:
                attributes[f"gen_ai.request.{key}"] = params[key]
        if self.capture_content:
            attributes["gen_ai.input.messages"] = json.dumps(
                [
                    {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
                    for m in messages
                ]
            )
        with self.tracer.start_as_current_span(
            f"chat {config.model}", kind=SpanKind.CLIENT, attributes=attributes,
            record_exception=False, set_status_on_exception=False,
        ) as span:  # fmt: skip
            try:
                yield CallSpan(span, self.capture_content)
            except Exception as error:
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
                raise
