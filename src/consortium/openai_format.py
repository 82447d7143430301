"""The OpenAI chat-completions wire format, shared by the servers (replay, serve): bodies,
streamed chunks and errors."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response


def error_response(
    status: int,
    message: str,
    code: str,
    kind: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> Response:
    body = {"error": {"message": message, "type": kind, "code": code, "param": param}}
    return JSONResponse(body, status_code=status, headers=headers)


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def completion_body(
    completion_id: str, model: str, text: str | list[str], finish: str, usage: dict[str, int]
) -> dict[str, Any]:
    """A chat completion; a list of texts gives one choice each (a request's `n`)."""
    texts = [text] if isinstance(text, str) else text
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": finish,
            }
            for index, answer in enumerate(texts)
        ],
        "usage": usage,
    }


async def stream_chunks(
    completion_id: str,
    model: str,
    text: str,
    finish: str,
    usage: dict[str, int],
    pieces: int = 1,
) -> AsyncIterator[str]:
    """Server-sent events of a finished answer: the role, `text` in `pieces` parts, the finish
    reason with the usage, then [DONE]."""
    created = int(time.time())

    def chunk(delta: dict[str, str], reason: str | None, with_usage: bool = False) -> str:
        payload: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        if with_usage:
            payload["usage"] = usage
        return f"data: {json.dumps(payload)}\n\n"

    size = max(1, -(-len(text) // max(1, pieces)))
    parts = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    yield chunk({"role": "assistant", "content": parts[0]}, None)
    for part in parts[1:]:
        yield chunk({"content": part}, None)
    yield chunk({}, finish, with_usage=True)
    yield "data: [DONE]\n\n"
