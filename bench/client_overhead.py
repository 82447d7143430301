"""Calls per second through Consortium's client (`OpenAIAgent`) against the replay server with zero
latency, beside the `openai` SDK called directly, in one run; prints the ratio (target >= 0.9).

    python bench/client_overhead.py --data ../shared/data/routerdc --calls 2000 --concurrency 32

Pool: replay of recorded outcomes (split2_model7 GSM8K test questions), no declared latency.
Both clients run in alternating rounds against the same server so drift hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import openai

from consortium.core.types import Message, user
from consortium.pool.openai import OpenAIAgent
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool


async def drive(call: object, prompts: list[list[Message]], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(messages: list[Message]) -> None:
        async with gate:
            await call(messages)  # type: ignore[operator]

    started = time.perf_counter()
    await asyncio.gather(*(one(m) for m in prompts))
    return len(prompts) / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True, help="routerdc data folder")
    parser.add_argument("--calls", type=int, default=2000, help="calls per client per round")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    data = load_replay(args.data, sources=["split2"])
    questions = [r.question for r in data.select(datasets=["gsm8k"], split="test")]
    prompts = [[user(questions[i % len(questions)])] for i in range(args.calls)]
    with ReplayServerProcess(args.data) as server:
        config = replay_pool(
            data, server.base_url, [data.models["split2"][0]], max_concurrency=args.concurrency
        ).models[0]
        agent = OpenAIAgent(config)
        sdk = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="none", max_retries=3, timeout=config.timeout
        )

        async def sdk_call(messages: list[Message]) -> None:
            await sdk.chat.completions.create(
                model=config.model,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=config.max_tokens,
            )

        async def ours(messages: list[Message]) -> None:
            await agent.chat(messages)

        await drive(sdk_call, prompts[:200], args.concurrency)  # warm both connection pools
        await drive(ours, prompts[:200], args.concurrency)
        sdk_rates, our_rates = [], []
        for _ in range(args.rounds):
            sdk_rates.append(await drive(sdk_call, prompts, args.concurrency))
            our_rates.append(await drive(ours, prompts, args.concurrency))
        await agent.aclose()
        await sdk.close()
    sdk_rate, our_rate = statistics.median(sdk_rates), statistics.median(our_rates)
    print("pool: replay of recorded outcomes (split2_model7/gsm8k-test.json), zero latency")
    print(f"openai SDK directly : {sdk_rate:8.1f} calls/s (median of {args.rounds} rounds)")
    print(f"consortium client   : {our_rate:8.1f} calls/s")
    print(f"ratio               : {our_rate / sdk_rate:8.3f}  (target >= 0.9)")


if __name__ == "__main__":
    asyncio.run(main())
