"""Time to first token through `consortium serve`, beside the replay server called directly.

    python bench/serve_streaming.py --data ../shared/data/routerdc

Pool: replay of recorded outcomes (split2_model7, GSM8K test questions) with a declared latency:
the first token after --base seconds, then one 4-character token every --per-token seconds.
`serve` runs single:MODEL, whose one call is the final one, so its tokens are relayed as the
replay server sends them. Each question is asked streamed, one at a time, directly and through
serve, alternating; the table gives the medians of time to first token and to the last token,
and their ratios (serve / direct). Before live streaming, serve's first token came with its last.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from consortium.pool.config import dump_pool
from consortium.records.names import short_name
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer


def timed_stream(base_url: str, model: str, question: str) -> tuple[float, float]:
    """(seconds to the first content, seconds to the end) of one streamed answer."""
    body = {"model": model, "messages": [{"role": "user", "content": question}], "stream": True}
    started = time.perf_counter()
    first = None
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=120) as answer:
        answer.raise_for_status()
        for line in answer.iter_lines():
            if first is None and '"content": "' in line and '"content": ""' not in line:
                first = time.perf_counter() - started
    total = time.perf_counter() - started
    return (first if first is not None else total), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--base", type=float, default=0.05, help="seconds to the first token")
    parser.add_argument("--per-token", type=float, default=0.01, help="seconds per later token")
    args = parser.parse_args()
    data = load_replay(args.data)
    model = data.models["split2"][0]
    questions = [
        r.question for r in data.select(source="split2", datasets=["gsm8k"], split="test")
    ][: args.questions]
    latency = ["--latency-base", str(args.base), "--latency-per-token", str(args.per_token)]
    with (
        tempfile.TemporaryDirectory() as scratch,
        ReplayServerProcess(args.data, "--sources", "split2", *latency) as upstream,
    ):
        pool = Path(scratch) / "pool.toml"
        pool.write_text(dump_pool(replay_pool(data, upstream.base_url, [model])))
        name = short_name(model)
        with ChildServer(
            "serve", "--pool", str(pool), "--policy", f"single:{name}",
            "--traces", f"sqlite:///{Path(scratch) / 't.db'}",
            ready_path="/health", label="serve", env={"CONSORTIUM_SERVE_TOKEN": ""},
        ) as served:  # fmt: skip
            direct: list[tuple[float, float]] = []
            through: list[tuple[float, float]] = []
            for question in questions:
                direct.append(timed_stream(upstream.base_url, model, question))
                through.append(timed_stream(f"{served.root}/v1", "consortium", question))
    rows = []
    for label, index in (("first token", 0), ("last token", 1)):
        a = statistics.median(t[index] for t in direct) * 1000
        b = statistics.median(t[index] for t in through) * 1000
        rows.append(f"| {label} | {a:.0f} | {b:.0f} | {b / a:.2f} |")
    share = statistics.median(t[0] / t[1] for t in through)
    print(
        f"Streamed answers, {len(questions)} GSM8K questions, pool: replay of recorded outcomes "
        f"({model}), declared latency {args.base:g} s + {args.per_token:g} s per token\n"
    )
    print("| median ms | direct | through serve | ratio |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nThrough serve the first token arrives at {share:.0%} of the answer's time (median).")


if __name__ == "__main__":
    main()
