"""OpenAI-compatible HTTP backend (OpenAI, vLLM, SGLang, llama.cpp server, Ollama, OpenRouter …).

Retries with exponential backoff and jitter on 408/409/429/5xx and connection errors, honouring
`Retry-After`, are the `openai` SDK's own (`max_retries`); this class adds the per-model concurrency
limit, the timeout from the pool file and the translation of failures into `AgentError`.
`chat(…, on_delta=f)` streams: `f` receives each piece of text as the endpoint sends it.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from consortium.core.errors import AgentError
from consortium.core.tokens import estimate_tokens
from consortium.core.types import Completion, Message, Usage
from consortium.pool.breaker import CircuitBreaker
from consortium.pool.config import ModelConfig


class _BrokenResponse(Exception):
    """A 200 answer that cannot be used: malformed JSON or no choices. Retried like a 5xx."""


class OpenAIAgent:
    def __init__(self, config: ModelConfig) -> None:
        self.name = config.name
        self.config = config
        self._limit = asyncio.Semaphore(config.max_concurrency)
        self.breaker = CircuitBreaker(config.circuit_failures, config.circuit_cooldown)
        # The key is handed to the SDK and kept nowhere else in Consortium.
        self._client = openai.AsyncOpenAI(
            base_url=str(config.base_url),
            api_key=config.api_key(),
            timeout=config.timeout,
            max_retries=config.max_retries,
        )

    async def chat(self, messages: Sequence[Message], **params: Any) -> Completion:
        if not self.breaker.allow():
            raise AgentError(
                self.name,
                f"circuit open after {self.breaker.failures} failures in a row; "
                f"next try in {self.breaker.retry_in():.0f}s",
                kind="circuit open",
            )
        try:
            completion = await self._chat_retrying_broken(messages, **params)
        except AgentError as error:
            # A 4xx other than 408/409/429 is the request's fault, not the endpoint's.
            self.breaker.record(
                ok=error.status is not None
                and 400 <= error.status < 500
                and error.status not in (408, 409, 429)
            )
            raise
        self.breaker.record(ok=True)
        return completion

    async def _chat_retrying_broken(self, messages: Sequence[Message], **params: Any) -> Completion:
        """The SDK retries HTTP errors; broken 200 answers are retried here, with the same
        budget of attempts and a short jittered backoff."""
        for attempt in range(self.config.max_retries + 1):
            try:
                return await self._chat_once(messages, **params)
            except _BrokenResponse as broken:
                if attempt == self.config.max_retries:
                    raise AgentError(
                        self.name, f"{broken} ({attempt + 1} attempts)", kind="malformed answer"
                    ) from None
                await asyncio.sleep(0.05 * 2**attempt * (0.5 + random.random()))
        raise AssertionError("unreachable")

    async def _chat_once(self, messages: Sequence[Message], **params: Any) -> Completion:
        params.setdefault("max_tokens", self.config.max_tokens)
        on_delta: Callable[[str], None] | None = params.pop("on_delta", None)
        async with self._limit:
            started = time.perf_counter()
            try:
                if on_delta is None:
                    text, usage, finish = await self._complete(messages, params)
                else:
                    text, usage, finish = await self._stream(messages, params, on_delta)
            except openai.APITimeoutError:
                raise AgentError(
                    self.name,
                    f"timed out after {self.config.timeout:g}s ({self.config.max_retries} retries)",
                    kind="timeout",
                ) from None
            except openai.APIConnectionError as error:
                raise AgentError(
                    self.name,
                    f"cannot reach {self.config.base_url}: {error.message}",
                    kind="unreachable",
                ) from None
            except (json.JSONDecodeError, openai.APIResponseValidationError):
                raise _BrokenResponse("the endpoint returned a malformed body") from None
            except openai.APIStatusError as error:
                raise AgentError(
                    self.name,
                    f"HTTP {error.status_code}: {_status_detail(error)}",
                    status=error.status_code,
                ) from None
            latency = time.perf_counter() - started
        return Completion(text, self.name, usage, latency, finish)

    async def _complete(
        self, messages: Sequence[Message], params: dict[str, Any]
    ) -> tuple[str, Usage, str | None]:
        # The SDK's typed `create` rewrites every message through its TypedDict transform: a third
        # of the client's CPU on a long workflow transcript. The messages are plain JSON already,
        # so they go through the client's generic `post`: the same retries, timeout and bearer key.
        response = await self._client.post(
            "/chat/completions",
            cast_to=ChatCompletion,
            body={"model": self.config.model, "messages": list(messages), **params},
            options={"security": {"bearer_auth": True}},
        )
        if not response.choices:
            raise _BrokenResponse("the endpoint returned no choices")
        choice = response.choices[0]
        usage = response.usage
        reported = Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage()
        return choice.message.content or "", reported, choice.finish_reason

    async def _stream(
        self, messages: Sequence[Message], params: dict[str, Any], on_delta: Callable[[str], None]
    ) -> tuple[str, Usage, str | None]:
        """Tokens reach `on_delta` as the endpoint sends them; the usage comes from the final
        chunk where the endpoint sends one (`include_usage`), else it is estimated."""
        stream = await self._client.chat.completions.create(  # type: ignore[call-overload]
            model=self.config.model,
            messages=list(messages),
            stream=True,
            stream_options={"include_usage": True},
            **params,
        )
        pieces: list[str] = []
        chunks_with_text = 0
        usage: Usage | None = None
        finish: str | None = None
        async for chunk in stream:
            if chunk.usage is not None:
                usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
            for choice in chunk.choices[:1]:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                    chunks_with_text += 1
                    on_delta(choice.delta.content)
                finish = choice.finish_reason or finish
        if usage is None:
            prompt = sum(estimate_tokens(str(m["content"])) for m in messages)
            usage = Usage(prompt, chunks_with_text, estimated=True)
        return "".join(pieces), usage, finish

    async def aclose(self) -> None:
        await self._client.close()


def _status_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
    return error.message
