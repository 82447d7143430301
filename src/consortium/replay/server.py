"""A real OpenAI-compatible HTTP server whose models are the recorded ones.

`/v1/models` lists them; `/v1/chat/completions` finds the recorded question in the messages and
answers as `consortium.replay.behaviour` describes. A question that was not recorded for the model
gets HTTP 404 with code `question_not_recorded`, never an invented answer.

Declared test knobs: a latency model (base seconds + seconds per output token) and seeded fault
injection (HTTP errors and hangs), decided per request key and attempt so that retries can succeed.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from consortium.coord.debate.transcript import TurnRequest, read_turn_request
from consortium.core.draws import uniform
from consortium.core.tokens import estimate_tokens
from consortium.core.wire import (
    SAMPLE_HEADER,
    completion_body,
    content_text,
    error_response,
)
from consortium.records.errors import SamplesExhausted
from consortium.replay.behaviour import Coupling, replay_answer
from consortium.replay.bodies import dropped_halfway, generated, trickle
from consortium.replay.data import ReplayData, ReplayRecord
from consortium.replay.protocol_turns import REFUSED

PREFIX_LEN = 32


def sample_index(
    header: str | None, seed: object, record: ReplayRecord, model: str, messages: list[Any]
) -> int | str:
    """Which recorded sample answers: the request says so (header, else `seed`), or, for a
    records question, the number of this model's recorded samples already in the transcript as
    assistant turns (the k-th ask in a conversation gets the k-th sample). Never server state, so
    a retried or resumed request gets the same answer. A string is the reason it is refused."""
    if header is not None:
        try:
            index = int(header)
        except ValueError:
            return f"{SAMPLE_HEADER} must be an integer, got {header!r}"
        return index if index >= 0 else f"{SAMPLE_HEADER} must be 0 or more"
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            return "seed must be an integer"
        return seed
    if record.samples is None:
        return 0
    texts = {sample.text.strip() for sample in record.samples[model]}
    earlier = [
        content_text(m.get("content")).strip()
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    return sum(text in texts for text in earlier)


@dataclass(frozen=True)
class LatencyModel:
    base_seconds: float = 0.0
    seconds_per_token: float = 0.0

    def delay(self, completion_tokens: int) -> float:
        return self.base_seconds + self.seconds_per_token * completion_tokens


@dataclass(frozen=True)
class FaultConfig:
    error_rate: float = 0.0
    error_codes: tuple[int, ...] = (500, 503, 429)
    timeout_rate: float = 0.0
    hang_seconds: float = 30.0
    garbage_rate: float = 0.0
    """Fraction of requests answered 200 with a malformed JSON body or with no choices."""
    seed: int = 0
    drop_rate: float = 0.0
    """Fraction of requests whose connection is dropped halfway through the response body."""
    slow_rate: float = 0.0
    """Fraction of requests whose (correct) body trickles out in pieces `slow_seconds` apart."""
    slow_seconds: float = 0.2

    def bands(self) -> list[tuple[str, float]]:
        """Each fault kind with its rate, in the order a request's draw is matched against."""
        return [
            ("error", self.error_rate),
            ("hang", self.timeout_rate),
            ("garbage", self.garbage_rate),
            ("drop", self.drop_rate),
            ("slow", self.slow_rate),
        ]

    def band_of(self, draw: float) -> str | None:
        """The fault kind a uniform `draw` falls in (the bands are stacked from 0), or None."""
        edge = 0.0
        for band, rate in self.bands():
            edge += rate
            if draw < edge:
                return band
        return None

    @property
    def active(self) -> bool:
        return any(rate > 0 for _, rate in self.bands())


@dataclass
class ServerStats:
    requests: int = 0
    answered: int = 0
    faults: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "answered": self.answered, "faults": dict(self.faults)}


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> Response:
    return error_response(status, message, code, "replay_error", headers)


class ReplayApp:
    def __init__(
        self,
        data: ReplayData,
        *,
        seed: int = 0,
        coupling: Coupling = "shared",
        latency: LatencyModel | None = None,
        faults: FaultConfig | None = None,
    ) -> None:
        self.data = data
        self.seed = seed
        self.coupling: Coupling = coupling
        self.latency = latency or LatencyModel()
        self.faults = faults or FaultConfig()
        self.stats = ServerStats()
        self._attempts: Counter[tuple[str, str, int]] = Counter()
        self._models = set(data.all_models)
        self._by_prefix: dict[str, list[str]] = {}
        for question in data.by_question:
            if len(question) >= PREFIX_LEN:
                self._by_prefix.setdefault(question[:PREFIX_LEN], []).append(question)
        self.app = Starlette(
            routes=[
                Route("/v1/models", self.list_models, methods=["GET"]),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/replay/stats", self.get_stats, methods=["GET"]),
            ]
        )

    def find(self, messages: list[Any], model: str) -> ReplayRecord | None:
        """The recorded question in `messages`: a whole message first, then the end of a message
        after a line break (how workflow steps quote the question, short questions included),
        else one inside a message."""
        texts = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
        for text in texts:
            record = self.data.lookup(text, model)
            if record is not None:
                return record
        for text in texts:
            for start in (i + 1 for i, char in enumerate(text) if char == "\n"):
                record = self.data.lookup(text[start:], model)
                if record is not None:
                    return record
        for text in texts:
            for start in range(len(text) - PREFIX_LEN + 1):
                for question in self._by_prefix.get(text[start : start + PREFIX_LEN], ()):
                    if text.startswith(question, start):
                        record = self.data.lookup(question, model)
                        if record is not None:
                            return record
        return None

    async def list_models(self, request: Request) -> Response:
        created = int(time.time())
        data = [
            {"id": m, "object": "model", "created": created, "owned_by": "replay"}
            for m in self.data.all_models
        ]
        return JSONResponse({"object": "list", "data": data})

    async def get_stats(self, request: Request) -> Response:
        return JSONResponse(self.stats.as_dict())

    def _decide_fault(self, key: tuple[str, str, int]) -> int | str | None:
        """An HTTP status to fail with, "hang" to stall past the client's timeout, "malformed" or
        "empty" for a broken 200 answer, "drop" or "slow" for a body cut or trickled, or None."""
        if not self.faults.active:
            return None
        attempt = self._attempts[key]
        self._attempts[key] += 1
        draw = uniform("fault", self.faults.seed, *key, attempt)
        band = self.faults.band_of(draw)
        if band == "error":
            codes = self.faults.error_codes
            return codes[int(uniform("code", self.faults.seed, *key, attempt) * len(codes))]
        if band == "garbage":
            return (
                "malformed" if uniform("kind", self.faults.seed, *key, attempt) < 0.5 else "empty"
            )
        return band

    async def chat(self, request: Request) -> Response:
        self.stats.requests += 1
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "request body is not valid JSON", "invalid_json")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request")
        model = body.get("model")
        messages = body.get("messages")
        if not isinstance(model, str) or model not in self._models:
            return _error(404, f"model {model!r} is not a recorded model", "model_not_found")
        if not isinstance(messages, list) or not messages:
            return _error(400, "messages must be a non-empty list", "invalid_request")
        turn_request = read_turn_request(messages) if self.data.debates else None
        if turn_request is not None:
            return await self._debate_turn(turn_request, model, body)
        record = self.find(messages, model)
        if record is None:
            return _error(
                404,
                f"no recorded outcome of {model} for this question; the replay server answers "
                "only recorded questions",
                "question_not_recorded",
            )
        sample = sample_index(
            request.headers.get(SAMPLE_HEADER), body.get("seed"), record, model, messages
        )
        if isinstance(sample, str):
            return _error(400, sample, "invalid_request")
        key = (model, record.id, sample)
        fault = self._decide_fault(key)
        if isinstance(fault, int):
            self.stats.faults[str(fault)] += 1
            # Rate limits and overloads say when to come back, as real endpoints do.
            headers = {"retry-after-ms": "20"} if fault in (429, 503) else None
            return _error(fault, f"injected fault (HTTP {fault})", "injected_fault", headers)
        if fault == "hang":
            self.stats.faults["timeout"] += 1
            await asyncio.sleep(self.faults.hang_seconds)
        if fault == "malformed":
            self.stats.faults["malformed"] += 1
            return Response(
                b'{"id": "chatcmpl-broken", "choices": [', media_type="application/json"
            )
        if fault == "drop":
            self.stats.faults["dropped"] += 1
            return StreamingResponse(dropped_halfway(), media_type="application/json")
        if fault == "empty":
            self.stats.faults["empty"] += 1
            return JSONResponse(
                {
                    "id": "chatcmpl-empty",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                }
            )
        try:
            answer = replay_answer(
                record, model, sample=sample, seed=self.seed, coupling=self.coupling
            )
        except SamplesExhausted as exhausted:
            self.stats.faults["samples_exhausted"] += 1
            return _error(404, f"samples exhausted: {exhausted}", "samples_exhausted")
        text, finish = answer.text, "stop"
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(max_tokens, int) and estimate_tokens(text) > max_tokens:
            text, finish = text[: max_tokens * 4], "length"
        prompt_tokens = sum(
            estimate_tokens(content_text(m.get("content"))) for m in messages if isinstance(m, dict)
        )
        completion_tokens = estimate_tokens(text)
        if record.samples is not None and finish == "stop":
            completion_tokens = record.samples[model][sample].tokens_out  # 0 for an empty output
        asked_alone = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
        if record.samples is not None and asked_alone == [record.question]:
            prompt_tokens = record.samples[model][sample].tokens_in  # as counted when recorded
        return await self._reply(body, model, text, finish, prompt_tokens, completion_tokens, fault)

    async def _debate_turn(
        self, request: TurnRequest, model: str, body: dict[str, Any]
    ) -> Response:
        """A debate turn: the recorded one, or HTTP 404 `turn_not_recorded` saying why not."""
        debate = self.data.debates.get(request.question.strip())
        if debate is None:
            return _error(404, "no recorded debate of this question", REFUSED)
        turn = debate.next_turn(request, model)
        if isinstance(turn, str):
            self.stats.faults[REFUSED] += 1
            return _error(404, f"turn not recorded: {turn}", REFUSED)
        return await self._reply(
            body, model, turn.text, "stop", turn.tokens_in, turn.tokens_out, None
        )

    async def _reply(
        self,
        body: dict[str, Any],
        model: str,
        text: str,
        finish: str,
        prompt_tokens: int,
        completion_tokens: int,
        fault: int | str | None,
    ) -> Response:
        streaming = bool(body.get("stream"))
        # Streamed, the first token comes after the base latency and the rest as generated.
        delay = self.latency.base_seconds if streaming else self.latency.delay(completion_tokens)
        if delay > 0:
            await asyncio.sleep(delay)
        self.stats.answered += 1
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if streaming:
            return StreamingResponse(
                generated(
                    completion_id, model, text, finish, usage, self.latency.seconds_per_token
                ),
                media_type="text/event-stream",
            )
        reply = completion_body(completion_id, model, text, finish, usage)
        if fault == "slow":
            self.stats.faults["slow"] += 1
            payload = json.dumps(reply).encode()
            return StreamingResponse(
                trickle(payload, self.faults.slow_seconds), media_type="application/json"
            )
        return JSONResponse(reply)


def exit_with_parent() -> None:
    """Stop this process once the process that started it is gone (no orphaned servers)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def serve(app: ReplayApp, host: str = "127.0.0.1", port: int = 8765) -> None:
    import uvicorn

    uvicorn.run(
        app.app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
