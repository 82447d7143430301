"""Response bodies the replay server sends as a generating model would, or as a faulty endpoint
does: a stream token by token, a body trickled in pieces, a connection cut halfway."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from consortium.core.wire import ChunkWriter


async def generated(
    completion_id: str,
    model: str,
    text: str,
    finish: str,
    usage: dict[str, int],
    seconds_per_token: float,
) -> AsyncIterator[str]:
    """Server-sent events token by token (4 characters each, the declared token size), each
    after `seconds_per_token`, as a generating model sends them."""
    writer = ChunkWriter(completion_id, model)
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)] or [""]
    yield writer.chunk({"role": "assistant", "content": tokens[0]})
    for token in tokens[1:]:
        if seconds_per_token > 0:
            await asyncio.sleep(seconds_per_token)
        yield writer.chunk({"content": token})
    yield writer.chunk({}, finish, usage)
    yield writer.done()


async def trickle(payload: bytes, pause: float, pieces: int = 4) -> AsyncIterator[bytes]:
    """A whole, correct body, sent in `pieces` parts `pause` seconds apart (a slow stream)."""
    size = -(-len(payload) // pieces)
    for start in range(0, len(payload), size):
        if start:
            await asyncio.sleep(pause)
        yield payload[start : start + size]


async def dropped_halfway() -> AsyncIterator[bytes]:
    """The start of a body, then the connection goes: the server aborts the response."""
    yield b'{"id": "chatcmpl-dropped", "choices": [{"index": 0, "mess'
    raise ConnectionResetError("injected fault: connection dropped")
