"""OpenAI-compatible HTTP backend (OpenAI, vLLM, SGLang, llama.cpp server, Ollama, OpenRouter …).

Retries with exponential backoff and jitter on 408/409/429/5xx and connection errors, honouring
`Retry-After`, are the `openai` SDK's own (`max_retries`); this class adds the per-model concurrency
limit, the timeout from the pool file and the translation of failures into `AgentError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import openai

from consortium.config import ModelConfig
from consortium.errors import AgentError
from consortium.types import Completion, Message, Usage


class OpenAIAgent:
    def __init__(self, config: ModelConfig) -> None:
        self.name = config.name
        self.config = config
        self._limit = asyncio.Semaphore(config.max_concurrency)
        # The key is handed to the SDK and kept nowhere else in Consortium.
        self._client = openai.AsyncOpenAI(
            base_url=str(config.base_url),
            api_key=config.api_key(),
            timeout=config.timeout,
            max_retries=config.max_retries,
        )

    async def chat(self, messages: Sequence[Message], **params: Any) -> Completion:
        params.setdefault("max_tokens", self.config.max_tokens)
        async with self._limit:
            started = time.perf_counter()
            try:
                response = await self._client.chat.completions.create(
                    model=self.config.model,
                    messages=list(messages),  # type: ignore[arg-type]
                    **params,
                )
            except openai.APITimeoutError:
                raise AgentError(
                    self.name,
                    f"timed out after {self.config.timeout:g}s ({self.config.max_retries} retries)",
                ) from None
            except openai.APIConnectionError as error:
                raise AgentError(
                    self.name, f"cannot reach {self.config.base_url}: {error.message}"
                ) from None
            except openai.APIStatusError as error:
                raise AgentError(
                    self.name,
                    f"HTTP {error.status_code}: {_status_detail(error)}",
                    status=error.status_code,
                ) from None
            latency = time.perf_counter() - started
        if not response.choices:
            raise AgentError(self.name, "the endpoint returned no choices")
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            text=choice.message.content or "",
            model=self.name,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
            latency=latency,
            finish_reason=choice.finish_reason,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _status_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
    return error.message
