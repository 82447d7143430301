"""Served traffic written off the request path: what a request served is queued as it is (no
wait, no rows built on the event loop), and a writer thread builds the rows and commits whatever
is queued in one transaction; feedback goes through the same queue, so it is checked after the
rows of every request answered before it, and its caller waits for the commit (an acknowledged
label is on disk)."""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable
from typing import Any

from consortium.runtime.caller import CallSummary
from consortium.runtime.writer_thread import WriterThread, wake
from consortium.serve.learn.rows import Served, call_rows
from consortium.serve.learn.store import Label, TrafficStore

_Settle = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]
_Item = Served | tuple[str, Any, _Settle | None]


class TrafficWriter(WriterThread[_Item]):
    def __init__(self, store: TrafficStore, log: Callable[[str], None], max_batch: int = 256):
        self.store = store
        self.log = log
        self.max_batch = max_batch
        super().__init__("traffic-writer")

    def served(self, request: Served) -> None:
        """Queue what a request served; returns at once."""
        if not self._closed:
            self._queue.put(request)

    def shadow(self, response_id: str, calls: list[CallSummary]) -> None:
        """Queue an explored request's shadow calls."""
        if not self._closed and calls:
            self._queue.put(("shadow", (response_id, calls), None))

    async def label(self, label: Label) -> None:
        """Write `label` after every request queued before it; raises FeedbackError."""
        await self._awaited("label", label)

    async def flush(self) -> None:
        """Returns once every row queued before it is written."""
        await self._awaited("flush", None)

    async def _awaited(self, what: str, payload: Any) -> None:
        if self._closed:
            raise RuntimeError("traffic writer is closed")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.put((what, payload, (loop, done)))
        await asyncio.shield(done)

    def _drain(self) -> None:
        while True:
            batch: list[Served] = []
            item = self._queue.get()
            while True:
                if item is None:
                    self._write(batch)
                    return
                if isinstance(item, Served):
                    batch.append(item)
                else:
                    self._write(batch)
                    batch = []
                    self._apply(item)
                if len(batch) >= self.max_batch:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            self._write(batch)

    def _write(self, batch: list[Served]) -> None:
        try:
            self.store.write_requests([served.rows() for served in batch])
        except Exception as error:  # a lost row must not stop the server: say so
            self.log(f"learn: {len(batch)} served requests not recorded: {error}")

    def _apply(self, item: tuple[str, Any, _Settle | None]) -> None:
        what, payload, settle = item
        error: BaseException | None = None
        try:
            if what == "label":
                self.store.add_label(payload)
            elif what == "shadow":
                response_id, calls = payload
                self.store.add_shadow_calls(call_rows(response_id, calls, shadow=True))
        except Exception as failure:
            error = failure
            if settle is None:
                self.log(f"learn: shadow calls not recorded: {failure}")
        if settle is not None:
            wake(*settle, error)
