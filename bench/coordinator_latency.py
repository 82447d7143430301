"""Decision latency of the TRINITY coordinator per turn on CPU (encoder forward pass + head),
p50/p95, for each all-MiniLM-L6-v2 backend side by side, beside the per-call latency of the
replay server, as ratios.

    python bench/coordinator_latency.py --data ../shared/data/routerdc --questions 100 --rounds 5

Pool: replay of recorded outcomes (split2_model7 test questions of MMLU and GSM8K), no declared
latency, so the server side is the HTTP round trip alone. Each question makes a 3-turn transcript
as TRINITY's protocol writes it: the question, then the question with the replay server's first
answer, then with its first two (the texts the server sends). Every backend decides every turn of
every transcript in each round, interleaved (turn by turn, the backends' order rotating), so a
busy machine slows them alike; a round gives p50/p95 per backend, the figures are medians over
rounds. Wall time and the thread's CPU time are both reported: on a shared machine the wall time
includes waiting for a core.

Backends: torch (sentence-transformers, float32: the features the committed policy was trained
on), onnx (ONNX Runtime, float32, one thread: the default), onnx-int8 (int8 products: faster,
features moved; declared option) and static (all-MiniLM-L6-v2-static, model2vec's distillation of
the same weights: a lookup, no forward pass; a different feature, so a policy is trained on it).
No feature cache (every transcript is new); the head is a random 10 x 384 matrix (latency does
not depend on its values).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

import numpy as np

from consortium.coord.trinity.encoder import Encoder, SentenceEncoder
from consortium.coord.trinity.head import LinearHead
from consortium.coord.trinity.onnx_encoder import OnnxSentenceEncoder
from consortium.coord.trinity.protocol import transcript_text
from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder
from consortium.coord.trinity.turns import TurnRecord
from consortium.core.types import user
from consortium.pool.openai import OpenAIAgent
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool

BACKENDS: dict[str, Callable[[], Encoder]] = {
    "torch": SentenceEncoder,
    "onnx": OnnxSentenceEncoder,
    "onnx-int8": lambda: OnnxSentenceEncoder(quantize=True),
    "static": StaticMiniLMEncoder,
}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


async def transcripts(
    base_url: str, data_dir: str, questions: list[str]
) -> tuple[list[float], list[list[str]]]:
    """Call latencies, and per question the 3 transcripts its turns read."""
    data = load_replay(data_dir, sources=["split2"])
    model = data.models["split2"][0]
    agent = OpenAIAgent(replay_pool(data, base_url, [model]).models[0])
    await agent.chat([user(questions[0])])  # warm the connection
    latencies, texts = [], []
    for question in questions:
        turns: list[TurnRecord] = []
        texts.append([transcript_text(question, [])])
        for index in (1, 2):
            started = time.perf_counter()
            answer = await agent.chat([user(question)])
            latencies.append(time.perf_counter() - started)
            turns.append(
                TurnRecord(index, model, "worker", answer.text, None, 1.0, 0, 0, np.zeros(0))
            )
            texts[-1].append(transcript_text(question, turns))
    await agent.aclose()
    return latencies, texts


def decide(encoder: Encoder, head: LinearHead) -> Callable[[str], None]:
    def run(text: str) -> None:
        head.choose(encoder.encode([text])[0].astype(np.float64))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--backends",
        default="torch,onnx,onnx-int8,static",
        help="Comma-separated subset. Run one backend per process to keep the thread pools of the "
        "others (torch's OpenMP, ONNX Runtime's spinning workers) off its cores.",
    )
    args = parser.parse_args()
    chosen = [name for name in args.backends.split(",") if name]
    unknown = sorted(set(chosen) - set(BACKENDS))
    if unknown or not chosen:
        parser.error(
            f"--backends: unknown {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(BACKENDS)}"
        )

    data = load_replay(args.data, sources=["split2"])
    questions = [r.question for r in data.select(datasets=["mmlu", "gsm8k"], split="test")]
    questions = questions[:: max(1, len(questions) // args.questions)][: args.questions]
    with ReplayServerProcess(args.data, "--sources", "split2") as server:
        calls, texts = asyncio.run(transcripts(server.base_url, args.data, questions))
    head = LinearHead(np.random.default_rng(0).normal(size=(10, 384)), 7)
    backends: dict[str, Encoder] = {name: BACKENDS[name]() for name in chosen}
    runs = {name: decide(encoder, head) for name, encoder in backends.items()}
    for run in runs.values():
        run("warm up")
    # stats[backend][turn or "all"][wall|cpu] = per-round (p50, p95)
    stats: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {
        n: {k: {"wall": [], "cpu": []} for k in ("1", "2", "3", "all")} for n in runs
    }
    names = list(runs)
    for round_ in range(args.rounds):
        wall: dict[str, dict[str, list[float]]] = {n: {"1": [], "2": [], "3": []} for n in runs}
        cpu: dict[str, dict[str, list[float]]] = {n: {"1": [], "2": [], "3": []} for n in runs}
        for position, turns in enumerate(texts):
            for turn, text in enumerate(turns, start=1):
                shift = (position + turn + round_) % len(names)
                for name in names[shift:] + names[:shift]:
                    started, started_cpu = time.perf_counter(), time.thread_time()
                    runs[name](text)
                    cpu[name][str(turn)].append(time.thread_time() - started_cpu)
                    wall[name][str(turn)].append(time.perf_counter() - started)
        for name in runs:
            for kind, values in (("wall", wall[name]), ("cpu", cpu[name])):
                values["all"] = [x for k in ("1", "2", "3") for x in values[k]]
                for key, series in values.items():
                    stats[name][key][kind].append(
                        (percentile(series, 50) * 1000, percentile(series, 95) * 1000)
                    )

    def median(name: str, key: str, kind: str, index: int) -> float:
        return statistics.median(pair[index] for pair in stats[name][key][kind])

    print(
        f"pool: replay of recorded outcomes (split2_model7 mmlu/gsm8k test), zero latency; "
        f"{len(texts)} questions x 3 turns, medians of {args.rounds} rounds"
    )
    print("| decision | turns | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms |")
    print("|---|---|---|---|---|---|")
    for name in runs:
        for key in ("all", "3"):
            row = [median(name, key, kind, i) for kind in ("wall", "cpu") for i in (0, 1)]
            label = "1-3" if key == "all" else "3rd only"
            print(f"| {name} | {label} | " + " | ".join(f"{x:.2f}" for x in row) + " |")
    call50, call95 = percentile(calls, 50) * 1000, percentile(calls, 95) * 1000
    print(f"| replay call (HTTP) | | {call50:.2f} | {call95:.2f} | | |")
    torch95 = median("torch", "all", "wall", 1) if "torch" in runs else None
    for name in runs:
        p50, p95 = median(name, "all", "wall", 0), median(name, "all", "wall", 1)
        versus = f"; p95 / torch's p95 {p95 / torch95:.2f}" if torch95 else ""
        print(f"{name:10s} decision / call: p50 {p50 / call50:.2f}, p95 {p95 / call95:.2f}{versus}")


if __name__ == "__main__":
    main()
