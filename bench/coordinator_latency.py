"""Decision latency of the TRINITY coordinator per turn on CPU (encoder forward pass + head),
p50/p95, beside the per-call latency of the replay server, as a ratio.

    python bench/coordinator_latency.py --data ../shared/data/routerdc --calls 200

Pool: replay of recorded outcomes (split2_model7 test questions of MMLU and GSM8K), no declared
latency, so the server side is the HTTP round trip alone. The encoder is all-MiniLM-L6-v2 with no
feature cache (every transcript is new); the head is a random 10 x 384 matrix (latency does not
depend on its values).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import numpy as np

from consortium.coord.trinity.encoder import SentenceEncoder
from consortium.coord.trinity.head import LinearHead
from consortium.core.types import user
from consortium.pool.openai import OpenAIAgent
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


async def call_latencies(base_url: str, data_dir: str, questions: list[str]) -> list[float]:
    data = load_replay(data_dir, sources=["split2"])
    agent = OpenAIAgent(replay_pool(data, base_url, [data.models["split2"][0]]).models[0])
    await agent.chat([user(questions[0])])  # warm the connection
    latencies = []
    for question in questions:
        started = time.perf_counter()
        await agent.chat([user(question)])
        latencies.append(time.perf_counter() - started)
    await agent.aclose()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    data = load_replay(args.data, sources=["split2"])
    questions = [r.question for r in data.select(datasets=["mmlu", "gsm8k"], split="test")]
    questions = questions[: args.calls]
    encoder = SentenceEncoder()
    head = LinearHead(np.random.default_rng(0).normal(size=(10, encoder.dim)), 7)
    encoder.encode(["warm up"])
    decisions = []
    for question in questions:
        started = time.perf_counter()
        feature = encoder.encode([question])[0]
        head.choose(feature)
        decisions.append(time.perf_counter() - started)
    with ReplayServerProcess(args.data, "--sources", "split2") as server:
        calls = asyncio.run(call_latencies(server.base_url, args.data, questions))
    print("pool: replay of recorded outcomes (split2_model7 mmlu/gsm8k test), zero latency")
    print(f"{'':28s} {'p50 ms':>9s} {'p95 ms':>9s}")
    for name, values in (("decision (encoder + head)", decisions), ("replay call (HTTP)", calls)):
        print(
            f"{name:28s} {1000 * percentile(values, 50):9.2f} {1000 * percentile(values, 95):9.2f}"
        )
    print(
        f"ratio decision / call: p50 {statistics.median(decisions) / statistics.median(calls):.2f}"
        f", p95 {percentile(decisions, 95) / percentile(calls, 95):.2f}  ({len(questions)} turns)"
    )


if __name__ == "__main__":
    main()
