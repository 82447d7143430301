"""`consortium serve`: the whole ensemble as one OpenAI-compatible model.

`/v1/models` lists it; `/v1/chat/completions` runs the coordinator on the conversation (its last
user message is the question; earlier turns come before it as context) and answers, whole or as
server-sent events. Every answer says what it took in the headers of `serve.headers`
(ANSWER_HEADERS: calls, models, roles, cost in USD, task and run of the trace rows, who answered
and why the policy stopped, and the models whose calls failed: the answer was made without
them), and the same under the body's `consortium` field; each failed call is one line of the
server's log (model and kind of error, never the endpoint's message). Each request has its own
budget and deadline; calls are traced as they complete. With a bearer token configured every
request must carry it. With a `PoolFileWatch`, a pool file rewritten while the server runs is
read again before the next request. With a `Learner` (`serve --learn`), each answer names the
policy version that gave it, is queued as traffic (`/v1/feedback` labels it, `/v1/policy` names
the version serving), an explored request's shadow calls run after its answer is sent, and an
adopted version is swapped in between requests.
"""

from __future__ import annotations

import asyncio
import hmac
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from consortium.coord.base import Coordinator, Outcome
from consortium.coord.conductor.workflow import WorkflowError
from consortium.core.errors import AgentError, BudgetExceeded, CoordinatorError
from consortium.core.wire import (
    ChunkWriter,
    completion_body,
    error_response,
    question_of,
    split_text,
)
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller, TaskCaller
from consortium.serve import headers as names
from consortium.serve.answer_account import (
    answer_headers,
    decided,
    finish_reason,
    learning,
    learning_headers,
    named,
    usage,
)
from consortium.serve.fastjson import FastJSONResponse, loads
from consortium.serve.learn.labels import label_of
from consortium.serve.learn.learner import Learner
from consortium.serve.learn.store import FeedbackError
from consortium.serve.params import RequestFieldError, request_options
from consortium.serve.pool_reload import PoolFileWatch
from consortium.tasks.base import Task

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class Served:
    """One whole answer as `--learn` records it: the id the client saw, the request, what the
    policy answered, the version that answered and whether the request is explored."""

    id: str
    task: Task
    outcome: Outcome
    version: str | None
    explored: bool


class EnsembleServer:
    def __init__(
        self,
        coordinator: Coordinator,
        caller: Caller,
        *,
        model_id: str = "consortium",
        token: str | None = None,
        request_timeout: float = 300.0,
        limits: Limits | None = None,
        stream_pieces: int = 8,
        on_close: Callable[[], Awaitable[None]] | None = None,
        log: Callable[[str], None] | None = None,
        pool_file: PoolFileWatch | None = None,
        learner: Learner | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.version = learner.version if learner is not None else None
        """The policy version serving (`serve --learn`); swapped with the coordinator."""
        self.caller = caller
        self.model_id = model_id
        self.token = token
        self.request_timeout = request_timeout
        self.limits = limits or Limits()
        self.stream_pieces = stream_pieces
        self.on_close = on_close
        self.log = log or _to_stderr
        self.pool_file = pool_file
        self.learner = learner
        if learner is not None:
            learner.on_adopt = self._swap
            learner.explorer = self._explorer
        self._reloading = asyncio.Lock()
        self.app = Starlette(
            lifespan=self._lifespan,
            routes=[
                Route("/v1/models", self.list_models, methods=["GET"]),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/feedback", self.feedback, methods=["POST"]),
                Route("/v1/policy", self.policy, methods=["GET"]),
                Route("/health", self.health, methods=["GET"]),
            ],
        )

    def _swap(self, coordinator: Coordinator, version: str) -> None:
        """Both at once, on the event loop: a request reads them together as it begins."""
        self.coordinator, self.version = coordinator, version

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        if self.learner is not None:
            await self.learner.aclose()
        if self.on_close is not None:
            await self.on_close()
        if self.pool_file is not None:
            await self.pool_file.aclose()

    def _refused(self, request: Request) -> Response | None:
        if self.token is None:
            return None
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), self.token):
            return None
        return error_response(
            401, "missing or wrong bearer token", "invalid_api_key", "authentication_error"
        )

    async def health(self, request: Request) -> Response:
        return FastJSONResponse({"status": "ok", "model": self.model_id})

    async def list_models(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        model = {"id": self.model_id, "object": "model", "created": 0, "owned_by": "consortium"}
        return FastJSONResponse({"object": "list", "data": [model]})

    async def feedback(self, request: Request) -> Response:
        """{id, correct} or {id, reference} for a response of this server; 4xx with one line
        when it changes nothing."""
        refused = self._refused(request) or self._not_learning()
        if refused is not None:
            return refused
        assert self.learner is not None
        try:
            label = label_of(loads(await request.body()))
            await self.learner.feedback(label)
        except FeedbackError as error:
            return error_response(error.status, str(error), error.code)
        except (ValueError, UnicodeDecodeError):
            return error_response(400, "request body is not valid JSON", "invalid_json")
        return FastJSONResponse({"id": label.response_id, "labelled": self.learner.labelled})

    async def policy(self, request: Request) -> Response:
        refused = self._refused(request) or self._not_learning()
        if refused is not None:
            return refused
        assert self.learner is not None
        self.learner.follow()
        return FastJSONResponse(self.learner.describe())

    def _not_learning(self) -> Response | None:
        if self.learner is not None:
            return None
        return error_response(404, "this server does not learn (start it with --learn DIR)",
                              "not_learning")  # fmt: skip

    async def chat(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return error_response(400, "request body is not valid JSON", "invalid_json")
        if not isinstance(body, dict):
            return error_response(400, "request body must be a JSON object", "invalid_request")
        if body.get("model") != self.model_id:
            return error_response(
                404,
                f"model {body.get('model')!r} is not served here; this server serves "
                f"{self.model_id!r}",
                "model_not_found",
            )
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error_response(400, "messages must be a non-empty list", "invalid_request")
        question = question_of(messages)
        if not question.strip():
            return error_response(400, "no user message with text to answer", "invalid_request")
        try:
            options = request_options(body)
        except RequestFieldError as error:
            return error_response(400, str(error), "unsupported_field", param=error.field)
        await self._follow_pool_file()
        if self.learner is not None:
            self.learner.follow()  # a version another replica adopted
        request_id = f"req-{uuid.uuid4().hex[:16]}"
        task = Task(id=request_id, question=question, dataset="serve", split="")
        callers = [
            self.caller.for_task(
                request_id if options.n == 1 else f"{request_id}-{index}",
                self.coordinator.name,
                self.limits,
                options.call_params,
            )
            for index in range(options.n)
        ]
        coordinator, version = self.coordinator, self.version  # whatever reloads meanwhile
        explored = self.learner is not None and self.learner.explores_answer()
        if options.stream:
            return self._stream(task, callers[0], coordinator, version, explored)
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(coordinator.run(task, caller) for caller in callers)),
                self.request_timeout,
            )
        except TimeoutError:
            return self._failure(504, "the ensemble did not answer in time", "timeout", callers)
        except BudgetExceeded as error:
            return self._failure(402, str(error), "budget_exceeded", callers)
        except (AgentError, CoordinatorError, WorkflowError) as error:
            return self._failure(502, str(error), "upstream_error", callers)
        finally:
            self._log_failed_calls(callers)
        used = usage(callers)
        account = self._account(callers) | decided(outcomes) | learning(version, explored)
        headers = answer_headers(account)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        answers = [outcome.answer for outcome in outcomes]
        finishes = [finish_reason(a, c) for a, c in zip(answers, callers, strict=True)]
        payload = completion_body(completion_id, self.model_id, answers, finishes, used)
        payload["consortium"] = account
        served = Served(completion_id, task, outcomes[0], version, explored)
        shadow = self._recorded(served, callers)
        background = BackgroundTask(shadow) if shadow is not None else None
        return FastJSONResponse(payload, headers=headers, background=background)

    def _explorer(self, request_id: str) -> TaskCaller:
        """The caller of a request's shadow calls (`--learn --explore`)."""
        return self.caller.for_task(f"{request_id}-explore", "explore", self.limits)

    def _recorded(
        self, served: Served, callers: list[TaskCaller]
    ) -> Callable[[], Awaitable[None]] | None:
        """Queue what an answer served (`--learn`; streamed or not, keyed by the id the client
        saw); the exploration to run once the answer is sent, when the request is explored."""
        if self.learner is None:
            return None
        made = [call for caller in callers for call in caller.made]
        question, answer = served.task.question, served.outcome.answer
        self.learner.served(served.id, question, answer, served.outcome.model,
                            served.version or "", served.explored, made)  # fmt: skip
        if not served.explored:
            return None
        asked = {call.model for call in made}
        explorer = self._explorer(served.task.id)
        return partial(self.learner.explore, served.id, question, asked, explorer)

    def _stream(
        self,
        task: Task,
        caller: TaskCaller,
        coordinator: Coordinator,
        version: str | None,
        explored: bool,
    ) -> StreamingResponse:
        """Server-sent events while the policy runs: the tokens of its final call as the model
        produces them (earlier steps run first; a policy with no single final call sends its
        answer when done), then the usage and the `consortium` accounting in the last chunk.
        A failure after the stream began is an `error` event. A whole answer is recorded as a
        non-streamed one is, and explored after its last event."""
        deltas: asyncio.Queue[str] = asyncio.Queue()
        caller.stream_to = deltas.put_nowait
        writer = ChunkWriter(f"chatcmpl-{uuid.uuid4().hex[:24]}", self.model_id)
        shadow: list[Callable[[], Awaitable[None]]] = []

        async def events() -> AsyncIterator[str]:
            run = asyncio.create_task(
                asyncio.wait_for(coordinator.run(task, caller), self.request_timeout)
            )
            try:
                yield writer.chunk({"role": "assistant"})
                streamed = False
                while not run.done() or not deltas.empty():
                    if deltas.empty():
                        waiting = asyncio.ensure_future(deltas.get())
                        await asyncio.wait({waiting, run}, return_when=asyncio.FIRST_COMPLETED)
                        if not waiting.done():
                            waiting.cancel()
                            continue
                        text = waiting.result()
                    else:
                        text = deltas.get_nowait()
                    streamed = True
                    yield writer.chunk({"content": text})
                try:
                    outcome = run.result()
                except TimeoutError:
                    yield writer.error("the ensemble did not answer in time", "timeout")
                    return
                except BudgetExceeded as error:
                    yield writer.error(str(error), "budget_exceeded")
                    return
                except (AgentError, CoordinatorError, WorkflowError) as error:
                    yield writer.error(str(error), "upstream_error")
                    return
                exploring = self._recorded(
                    Served(writer.completion_id, task, outcome, version, explored), [caller]
                )
                shadow.extend([exploring] if exploring is not None else [])
                if not streamed:
                    for piece in split_text(outcome.answer, self.stream_pieces):
                        yield writer.chunk({"content": piece})
                said = self._account([caller]) | decided([outcome]) | learning(version, explored)
                finish = finish_reason(outcome.answer, caller)
                yield writer.chunk({}, finish, usage([caller]), {"consortium": said})
                yield writer.done()
            finally:
                if not run.done():  # the client went away: stop spending on its answer
                    run.cancel()
                self._log_failed_calls([caller])

        async def explore() -> None:
            for exploring in shadow:
                await exploring()

        said = {names.TASK: caller.task_id, names.RUN: self.caller.run_id}
        headers = named(said | learning_headers(learning(version, explored)))
        return StreamingResponse(
            events(), media_type="text/event-stream", headers=headers,
            background=BackgroundTask(explore),
        )  # fmt: skip

    async def _follow_pool_file(self) -> None:
        """Swap in the pool file's policy and pool when the file changed since it was last read
        (`PoolFileWatch`); requests arriving meanwhile wait for the new pool."""
        watch = self.pool_file
        if watch is None or not watch.changed():
            return
        async with self._reloading:
            if not watch.changed():
                return  # reloaded while this request waited
            reloaded = await asyncio.to_thread(watch.reload, self.caller.pool)
            if reloaded is not None:
                self.coordinator, self.caller.pool = reloaded.coordinator, reloaded.pool

    def _log_failed_calls(self, callers: list[TaskCaller]) -> None:
        for caller in callers:
            for call in caller.made:
                if call.failed:
                    self.log(f"{caller.task_id}: call to {call.model} failed ({call.error_kind})")

    def _account(self, callers: list[TaskCaller]) -> dict[str, Any]:
        made = [call for caller in callers for call in caller.made]
        account: dict[str, Any] = {
            "calls": len(made),
            "models": list(dict.fromkeys(c.model for c in made)),
            "roles": list(dict.fromkeys(c.role for c in made)),
            "cost": sum(c.cost for c in made),
            "task_id": ",".join(caller.task_id for caller in callers),
            "run_id": self.caller.run_id,
        }
        failed = list(dict.fromkeys(c.model for c in made if c.failed))
        if failed:
            account["failed"] = failed
        return account

    def _failure(self, status: int, message: str, code: str, callers: list[TaskCaller]) -> Response:
        headers = answer_headers(self._account(callers))
        return error_response(status, message, code, "consortium_error", headers=headers)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
