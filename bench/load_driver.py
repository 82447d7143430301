"""The load driver of the serving benches: `clients` concurrent httpx clients asking a list of
questions of an OpenAI-compatible endpoint, spread over driver processes so that the driver is
not what limits the measurement."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass

import httpx
import numpy as np


@dataclass
class Measured:
    rps: float
    p50_ms: float
    p95_ms: float


async def _drive(
    base_url: str, model: str, questions: list[str], clients: int
) -> tuple[list[float], float, float]:
    """Latencies of `clients` concurrent clients asking all `questions`, and the wall-clock
    start and end of the load (`time.time()`: comparable across driver processes)."""
    latencies: list[float] = []
    queue = list(questions)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"authorization": "Bearer sk-bench"}
    async with httpx.AsyncClient(
        base_url=base_url, timeout=120, limits=limits, headers=headers
    ) as http:

        async def client() -> None:
            while queue:
                question = queue.pop()
                started = time.perf_counter()
                response = await http.post(
                    "/chat/completions",
                    json={"model": model, "messages": [{"role": "user", "content": question}]},
                )
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)

        began = time.time()
        await asyncio.gather(*(client() for _ in range(clients)))
        ended = time.time()
    return latencies, began, ended


def _driver(args: tuple[str, str, list[str], int]) -> tuple[list[float], float, float]:
    return asyncio.run(_drive(*args))


def measure(
    base_url: str, model: str, questions: list[str], clients: int, drivers: int
) -> Measured:
    drivers = max(1, min(drivers, clients))
    shares = [questions[i::drivers] for i in range(drivers)]
    per_driver = [clients // drivers + (i < clients % drivers) for i in range(drivers)]
    jobs = [(base_url, model, s, c) for s, c in zip(shares, per_driver, strict=True)]
    with multiprocessing.get_context("spawn").Pool(drivers) as pool:
        parts = pool.map(_driver, jobs)
    latencies = [x for part, _, _ in parts for x in part]
    # From the first driver's first request to the last one's end: process start-up excluded.
    wall = max(end for _, _, end in parts) - min(start for _, start, _ in parts)
    return Measured(
        len(questions) / wall,
        float(np.percentile(latencies, 50)) * 1000,
        float(np.percentile(latencies, 95)) * 1000,
    )
