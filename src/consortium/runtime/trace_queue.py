"""Trace rows written off the event loop, in batches, and never lost for an answered request.

`consortium serve` used to insert each call's row on the event loop (one SQLite transaction per
call, every other request waiting meanwhile). Here a writer thread takes whatever rows are queued,
inserts them in one transaction, and then wakes the coroutines that queued them: a call returns
only once its row is committed (group commit). So an answer a client received always has its
trace rows on disk, whether the server is later stopped (`close` drains the queue) or killed; a
kill loses only the rows of requests that were never answered.
"""

from __future__ import annotations

import asyncio
import queue

from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord, StageRecord
from consortium.runtime.writer_thread import WriterThread, wake

_Item = tuple[CallRecord | StageRecord, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class TraceQueue(WriterThread[_Item]):
    def __init__(self, store: TraceStore, max_batch: int = 512) -> None:
        self.store = store
        self.max_batch = max_batch
        self.batches = 0
        """Transactions committed so far (each holds one or more rows)."""
        self.rows = 0
        super().__init__("trace-writer")

    async def record(self, record: CallRecord | StageRecord) -> None:
        """Queue `record`; returns once it is committed (raises what the insert raised)."""
        if self._closed:
            raise RuntimeError("trace queue is closed")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.put((record, loop, done))
        await asyncio.shield(done)

    def _drain(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [item for item in batch if item is not None]
            if items:
                error: BaseException | None = None
                try:
                    self.store.record_rows([record for record, _, _ in items])
                    self.batches += 1
                    self.rows += len(items)
                except Exception as failure:  # handed to every waiting request
                    error = failure
                for _, loop, done in items:
                    wake(loop, done, error)
            if len(items) < len(batch):  # the stop mark: everything queued before it is written
                return
