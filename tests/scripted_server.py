"""A real OpenAI-compatible HTTP server whose answers a test scripts: a stand-in for a conductor
LM, which the replay data cannot provide. It runs uvicorn in a thread on a free loopback port."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from consortium.replay.launch import free_port

Script = Callable[[list[dict[str, Any]]], str]


class ScriptedServer:
    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.port = free_port()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _models(self, request: Request) -> JSONResponse:
        data = [{"id": name, "object": "model", "owned_by": "test"} for name in self.scripts]
        return JSONResponse({"object": "list", "data": data})

    async def _chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        text = self.scripts[body["model"]](body["messages"])
        return JSONResponse(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )


@contextmanager
def app_in_thread(app: Any, port: int) -> Iterator[None]:
    """Serve an ASGI app with uvicorn in a thread on `port` for the duration of the block."""
    config = uvicorn.Config(app, port=port, log_level="warning", access_log=False)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield
    finally:
        running.should_exit = True
        thread.join(timeout=5)


@contextmanager
def scripted_server(scripts: dict[str, Script]) -> Iterator[ScriptedServer]:
    server = ScriptedServer(scripts)
    with app_in_thread(server.app(), server.port):
        yield server
