"""`pool check`: is every endpoint of a pool reachable, does it serve its model, how fast."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import openai

from consortium.core.errors import ConfigError, ConsortiumError
from consortium.pool.config import ModelConfig, PoolConfig, load_pool


@dataclass(frozen=True)
class EndpointStatus:
    model: str
    latency_ms: float | None
    status: str
    ok: bool
    reachable: bool = True


async def check_model(entry: ModelConfig) -> EndpointStatus:
    if entry.backend == "local":
        found = Path(entry.model).is_dir()
        return EndpointStatus(
            entry.name, None, "local model" if found else f"not a folder: {entry.model}", found
        )
    try:
        client = openai.AsyncOpenAI(
            base_url=str(entry.base_url),
            api_key=entry.api_key(),
            timeout=min(entry.timeout, 10.0),
            max_retries=0,
        )
    except ConsortiumError as error:
        return EndpointStatus(entry.name, None, str(error), False)
    started = time.perf_counter()
    try:
        listed = await client.models.list()
        ids = {m.id async for m in listed}
        latency = 1000 * (time.perf_counter() - started)
        if entry.model not in ids:
            status = f"endpoint answers but does not serve {entry.model!r}"
            return EndpointStatus(entry.name, latency, status, False)
        return EndpointStatus(entry.name, latency, "ok", True)
    except openai.APIConnectionError:
        return EndpointStatus(
            entry.name, None, f"unreachable: {entry.base_url}", False, reachable=False
        )
    except openai.APIStatusError as error:
        return EndpointStatus(entry.name, None, f"HTTP {error.status_code}", False)
    finally:
        await client.close()


async def check_pool(config: PoolConfig) -> list[EndpointStatus]:
    return list(await asyncio.gather(*(check_model(config.get(n)) for n in config.names)))


async def wait_and_check(path: Path, wait: float, poll: float = 0.5) -> list[EndpointStatus]:
    """Check the pool in `path`; for up to `wait` seconds, wait for the file to appear and for
    unreachable endpoints to come up (a server just started in the background)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            statuses = await check_pool(load_pool(path))
        except ConfigError:
            if path.exists() or time.monotonic() >= deadline:
                raise
        else:
            if all(s.reachable for s in statuses) or time.monotonic() >= deadline:
                return statuses
        await asyncio.sleep(poll)
