"""A daemon thread that drains a queue of writes, for writers that keep I/O off the event loop
(the trace queue, `serve --learn`'s traffic writer): `None` on the queue is the stop mark, and a
coroutine waiting on a write is woken on its own loop with the write's outcome."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Generic, TypeVar

Item = TypeVar("Item")


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # the waiter was cancelled meanwhile; the write happened all the same
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def wake(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[None], error: BaseException | None
) -> None:
    """From the writer thread: finish `done` on `loop` (raising `error` in its waiter, if any)."""
    if not loop.is_closed():
        loop.call_soon_threadsafe(_settle, done, error)


class WriterThread(Generic[Item]):
    """Subclasses drain `self._queue` in `_drain` and return on the stop mark (`None`)."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._drain, name=name, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Write everything queued before it, then stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
