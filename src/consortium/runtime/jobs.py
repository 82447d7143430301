"""The one kind of remote job: a picklable function of one item that, in the worker, opens its
own pool from the pool configuration (and the trace store from its URL) and runs a body on the
item through a `Caller` on them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class RemoteJob(Generic[Item, Result]):
    pool: PoolConfig
    body: Callable[[Item, Caller], Awaitable[Result]]
    """What the job does with its item through a caller on the worker's pool (picklable)."""
    run_id: str
    store_url: str | None = None
    """Where the calls are traced (reachable from the worker); None: not traced."""

    @classmethod
    def like(
        cls, caller: Caller, body: Callable[[Item, Caller], Awaitable[Result]]
    ) -> RemoteJob[Item, Result]:
        """A job calling the models of `caller`'s pool, traced like `caller` (same store and
        run; not its budget or cache, which live in this process)."""
        store_url = caller.store.url if caller.store is not None else None
        return cls(caller.pool.config, body, caller.run_id, store_url)

    def __call__(self, item: Item) -> Result:
        return asyncio.run(self._run(item))

    async def _run(self, item: Item) -> Result:
        store = TraceStore(self.store_url) if self.store_url else None
        try:
            async with Pool(self.pool) as pool:
                return await self.body(item, Caller(pool, store, self.run_id))
        finally:
            if store is not None:
                store.close()
