"""What `serve --learn` adds to a request: p50 / p95 client latency of `serve` and of
`serve --learn` (no exploration, no refit: what every request pays to be recorded), both over the
HTTP replay of one records set, asked in turn question by question (so both see the same load;
which of the two is asked first alternates, so neither always follows the other's writes), with
the difference and the ratio in one run, and the median of the per-question differences (steadier
than the difference of two medians on a loaded machine). Pool: replay of recorded outputs of real
models.

    python bench/serve_learn_overhead.py --records records/date --requests 300
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from consortium.coord.answers.folder import write_policy
from consortium.demo.serve_learns.singles import single_policy
from consortium.records.store import load_records
from consortium.replay.launch import ReplayServerProcess
from consortium.runtime.launch import ChildServer


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(100 * q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=Path, default=Path("records/date"))
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    questions = list(dict.fromkeys(load_records(args.records).table.column("question").to_pylist()))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write_policy(work / "policy", single_policy(args.records, "cheapest"))
        pool = work / "replay.toml"
        common = ("--pool", str(pool), "--policy", str(work / "policy"))
        env = {"CONSORTIUM_SERVE_TOKEN": ""}
        with (
            ReplayServerProcess(None, "--write-pool", str(pool), records=[args.records]),
            ChildServer("serve", *common, "--traces", f"sqlite:///{work / 'a.db'}",
                        ready_path="/health", env=env) as plain,
            ChildServer("serve", *common, "--traces", f"sqlite:///{work / 'b.db'}",
                        "--learn", str(work / "learn"), ready_path="/health", env=env) as learning,
        ):  # fmt: skip
            seconds: dict[str, list[float]] = {"serve": [], "serve --learn": []}
            with httpx.Client(timeout=60) as client:
                for index in range(args.requests + 20):
                    question = questions[index % len(questions)]
                    body = {"model": "consortium",
                            "messages": [{"role": "user", "content": question}]}  # fmt: skip
                    servers = [("serve", plain), ("serve --learn", learning)]
                    # in turn first: what one server does after answering (its writer threads)
                    # falls on the other's next request, so neither always bears the other's
                    for name, server in servers if index % 2 else servers[::-1]:
                        began = time.perf_counter()
                        client.post(
                            f"{server.root}/v1/chat/completions", json=body
                        ).raise_for_status()
                        if index >= 20:  # warm-up left out
                            seconds[name].append(time.perf_counter() - began)
    p50 = {name: 1000 * statistics.median(values) for name, values in seconds.items()}
    print(f"{args.requests} requests each, {args.records.name}, the cheapest single model")
    for name, values in seconds.items():
        print(f"{name:>14}: p50 {p50[name]:.2f} ms, p95 {1000 * _quantile(values, 0.95):.2f} ms")
    added = p50["serve --learn"] - p50["serve"]
    print(f"added p50: {added:+.2f} ms (ratio {p50['serve --learn'] / p50['serve']:.3f})")
    paired = [b - a for a, b in zip(seconds["serve"], seconds["serve --learn"], strict=True)]
    print(f"median of the paired differences (same question, in turn): "
          f"{1000 * statistics.median(paired):+.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
