"""The OpenAI chat-completions wire format, shared by the servers (replay, serve): bodies,
streamed chunks and errors."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.responses import JSONResponse, Response

SAMPLE_HEADER = "x-consortium-sample"
"""The header a caller names a recorded sample with (0-based): a replay server of recorded outputs
answers with that sample (else by the request's `seed`, else by the transcript)."""


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
    completion_id: str,
    model: str,
    text: str | list[str],
    finish: str | list[str],
    usage: dict[str, int],
) -> dict[str, Any]:
    """A chat completion; a list of texts gives one choice each (a request's `n`), with the
    finish reason of each in `finish` (one for all where a string)."""
    texts = [text] if isinstance(text, str) else text
    finishes = [finish] * len(texts) if isinstance(finish, str) else finish
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": reason,
            }
            for index, (answer, reason) in enumerate(zip(texts, finishes, strict=True))
        ],
        "usage": usage,
    }


class ChunkWriter:
    """The server-sent events of one streamed chat completion."""

    def __init__(self, completion_id: str, model: str) -> None:
        self.completion_id = completion_id
        self.model = model
        self.created = int(time.time())

    def chunk(
        self,
        delta: dict[str, str],
        finish: str | None = None,
        usage: dict[str, int] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        payload: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            payload["usage"] = usage
        return f"data: {json.dumps(payload | (extra or {}))}\n\n"

    @staticmethod
    def error(message: str, code: str) -> str:
        """An error after the stream began (its status line is already sent); the OpenAI SDK
        raises it as an APIError."""
        body = {"error": {"message": message, "type": "consortium_error", "code": code}}
        return f"data: {json.dumps(body)}\n\n"

    @staticmethod
    def done() -> str:
        return "data: [DONE]\n\n"


def split_text(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def question_of(messages: list[Any]) -> str:
    """The text a coordinator answers: the last user message, after the earlier turns."""
    turns = [
        (str(m.get("role", "user")), content_text(m.get("content")))
        for m in messages
        if isinstance(m, dict)
    ]
    last_user = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=None)
    if last_user is None:
        return ""
    earlier = [f"{role}: {text}" for role, text in turns[:last_user] if text.strip()]
    question = turns[last_user][1]
    return "\n\n".join([*earlier, question]) if earlier else question
