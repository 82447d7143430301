"""The one way a coordinator calls a model: budget check, cache, the call, the trace row."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

from consortium.core.errors import AgentError, reason
from consortium.core.tokens import estimate_tokens
from consortium.core.types import Completion, Message
from consortium.pool import Pool
from consortium.runtime.budget import Budget, Limits
from consortium.runtime.cache import ResponseCache, cache_key
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord, StageRecord
from consortium.runtime.telemetry import Telemetry
from consortium.runtime.trace_queue import TraceQueue


class Caller:
    """Shared by all tasks of a run: the pool, the store, the run budget and the cache.

    `store=None` keeps no trace rows: for training rollouts, which are summarised per generation.
    With `traces` (a queue over `store`), rows are written by its thread in batches and a call
    returns once its row is committed (`serve`); else each row is written as the call ends.
    """

    def __init__(
        self,
        pool: Pool,
        store: TraceStore | None,
        run_id: str,
        *,
        budget: Budget | None = None,
        cache: ResponseCache | None = None,
        telemetry: Telemetry | None = None,
        traces: TraceQueue | None = None,
    ) -> None:
        self.pool = pool
        self.store = store
        self.run_id = run_id
        self.budget = budget or Budget(label="run")
        self.cache = cache
        self.telemetry = telemetry
        self.traces = traces

    async def trace(self, record: CallRecord) -> None:
        if self.traces is not None:
            await self.traces.record(record)
        elif self.store is not None:
            self.store.record_call(record)

    async def trace_stages(self, records: Sequence[StageRecord]) -> None:
        if self.traces is not None:
            queue = self.traces
            await asyncio.gather(*(queue.record(record) for record in records))
        elif self.store is not None:
            self.store.record_rows(records)

    def for_task(
        self,
        task_id: str,
        policy: str,
        limits: Limits | None = None,
        overrides: dict[str, Any] | None = None,
    ) -> TaskCaller:
        """A caller for one task; `overrides` (e.g. a served request's `temperature`) replace
        the coordinator's own parameters in every call of the task."""
        budget = self.budget.child(limits, f"task {task_id}")
        return TaskCaller(self, task_id, policy, budget, overrides)


@dataclass(frozen=True, slots=True)
class CallSummary:
    """One call of a task, finished or failed, for whoever answers on the task's behalf (e.g.
    `serve`, whose accounting counts failed calls too)."""

    model: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    failed: bool = False
    error_kind: str | None = None
    """Why a failed call failed, in a few words (`AgentError.kind`: `HTTP 503`, `unreachable` …)."""
    text: str = ""
    finish_reason: str | None = None
    """The endpoint's: "length" where it cut the text at `max_tokens`."""
    latency: float = 0.0
    sample: int | None = None
    """The `seed` the call was sent with: an answer-aware policy's sample index."""


class TaskCaller:
    def __init__(
        self,
        run: Caller,
        task_id: str,
        policy: str,
        budget: Budget,
        overrides: dict[str, Any] | None = None,
    ) -> None:
        self.run = run
        self.task_id = task_id
        self.policy = policy
        self.budget = budget
        self.overrides = dict(overrides or {})
        self.made: list[CallSummary] = []
        self.stream_to: Callable[[str], None] | None = None
        """Receives the text of the task's final call as the model produces it (`serve`)."""

    async def trace_stages(self, stages: Sequence[StageRecord]) -> None:
        """Store what an answer-aware policy made of each sample it asked for, beside its
        calls (`StageRecord`: the task and policy are filled in here)."""
        filled = [
            replace(s, run_id=self.run.run_id, policy=self.policy, task_id=self.task_id)
            for s in stages
        ]
        await self.run.trace_stages(filled)

    async def call(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        role: str = "worker",
        turn: int = 0,
        verdict_of: Callable[[str], str | None] | None = None,
        final: bool = False,
        **params: Any,
    ) -> Completion:
        """Call `model`; raises BudgetExceeded before the call, AgentError after a failed one.
        A coordinator marks the call whose text is its answer `final`: that one streams to
        `stream_to` when someone listens.

        A model with a `fallback` in the pool file that fails (after its own retries, or with
        its circuit open) is replaced by the fallback for this call, traced as standing in for
        it (`fallback_from`); a chain of fallbacks never revisits a model. Not once a streamed
        call has sent text: the listener already holds part of this model's answer, so the
        failure is raised instead of appending another model's text to it."""
        params = {**params, **self.overrides}
        streamed = False
        if final and self.stream_to is not None:
            listener = self.stream_to

            def relay(delta: str) -> None:
                nonlocal streamed
                streamed = True
                listener(delta)

            params["on_delta"] = relay
        tried: list[str] = []
        current, stands_in_for = model, None
        while True:
            try:
                return await self._call_once(
                    current, messages, role, turn, verdict_of, stands_in_for, dict(params)
                )
            except AgentError:
                tried.append(current)
                substitute = self.run.pool.model(current).fallback
                if substitute is None or substitute in tried or streamed:
                    raise
                current, stands_in_for = substitute, current

    async def _call_once(
        self,
        model: str,
        messages: Sequence[Message],
        role: str,
        turn: int,
        verdict_of: Callable[[str], str | None] | None,
        fallback_from: str | None,
        params: dict[str, Any],
    ) -> Completion:
        pool = self.run.pool
        agent = pool.agent(model)
        config = pool.model(model)
        params.setdefault("max_tokens", config.max_tokens)
        prompt_estimate = sum(estimate_tokens(m["content"]) for m in messages)
        reservation = self.budget.reserve(
            prompt_estimate + params["max_tokens"],
            config.cost(prompt_estimate, params["max_tokens"]),
        )
        record = CallRecord(
            run_id=self.run.run_id,
            model=model,
            messages=messages,
            response=None,
            policy=self.policy,
            task_id=self.task_id,
            turn=turn,
            role=role,
            fallback_from=fallback_from,
        )
        # The endpoint is part of the key: two servers may serve different weights under one id.
        endpoint = f"{config.base_url}|{config.model}"
        cacheable = {k: v for k, v in params.items() if k != "on_delta"}
        key = cache_key(endpoint, messages, cacheable) if self.run.cache else None
        telemetry = self.run.telemetry
        with (
            telemetry.call(
                config, messages, params, role=role, task_id=self.task_id, policy=self.policy
            )
            if telemetry is not None
            else nullcontext()
        ) as span:
            completion = self.run.cache.get(key) if self.run.cache and key else None
            if completion is not None and "on_delta" in params:
                params["on_delta"](completion.text)  # a cached answer arrives whole
            if completion is None:
                try:
                    completion = await agent.chat(messages, **params)
                except AgentError as error:
                    self.budget.settle(reservation, 0, 0.0, made=True)
                    await self._record_failure(record, role, error, params.get("seed"))
                    raise
                if self.run.cache and key:
                    self.run.cache.put(key, completion)
            usage = completion.usage
            cost = (
                0.0
                if completion.cached
                else config.cost(usage.prompt_tokens, usage.completion_tokens)
            )
            if span is not None:
                span.finish(completion, cost)
        self.budget.settle(
            reservation,
            0 if completion.cached else usage.total_tokens,
            cost,
            made=not completion.cached,
        )
        await self._record_answer(record, role, completion, cost, verdict_of, params.get("seed"))
        return completion

    async def _record_answer(
        self,
        record: CallRecord,
        role: str,
        completion: Completion,
        cost: float,
        verdict_of: Callable[[str], str | None] | None,
        sample: int | None,
    ) -> None:
        """The answered call into its trace record and this task's calls made, then stored."""
        usage = completion.usage
        record.response = completion.text
        record.prompt_tokens = usage.prompt_tokens
        record.completion_tokens = usage.completion_tokens
        record.cost = cost
        record.latency = completion.latency
        record.cached = completion.cached
        record.verdict = verdict_of(completion.text) if verdict_of else None
        self.made.append(
            CallSummary(
                record.model,
                role,
                usage.prompt_tokens,
                usage.completion_tokens,
                cost,
                text=completion.text,
                finish_reason=completion.finish_reason,
                latency=completion.latency,
                sample=sample,
            )
        )
        await self.run.trace(record)

    async def _record_failure(
        self, record: CallRecord, role: str, error: AgentError, sample: int | None
    ) -> None:
        """The failed call into its trace record and this task's calls made, then stored."""
        record.error = reason(error)
        self.made.append(
            CallSummary(
                record.model, role, 0, 0, 0.0, failed=True, error_kind=error.kind, sample=sample
            )
        )
        await self.run.trace(record)
