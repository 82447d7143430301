"""Requests per second and p95 latency of `consortium serve` over the replay pool at 1, 16 and 128
concurrent clients, beside the replay server called directly, as ratios.

    python bench/serve_load.py --data ../shared/data/routerdc

Pool: replay of recorded outcomes (split2_model7, GSM8K test questions), no declared latency.
`serve` runs the policy single:MODEL, so each request is one model call plus the ensemble's work
(parsing, budget, trace row in SQLite, accounting); the direct run asks the same model the same
questions. Both are driven by the same driver (bench/load_driver.py, one process, rps from its
own clock), the direct run first at each level.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from consortium.pool.config import dump_pool
from consortium.records.names import short_name
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer
from load_driver import measure


def ensemble_server(pool: Path, policy: str, traces: Path) -> ChildServer:
    return ChildServer(
        "serve", "--pool", str(pool), "--policy", policy, "--traces", f"sqlite:///{traces}",
        ready_path="/health", label="serve", env={"CONSORTIUM_SERVE_TOKEN": ""},
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--requests", type=int, default=600, help="requests per level and side")
    args = parser.parse_args()
    data = load_replay(args.data, sources=["split2"])
    model = data.models["split2"][0]
    records = data.select(source="split2", datasets=["gsm8k"], split="test")
    questions = [records[i % len(records)].question for i in range(args.requests)]
    with (
        tempfile.TemporaryDirectory() as folder,
        ReplayServerProcess(args.data, "--sources", "split2") as replay,
    ):
        pool = Path(folder) / "pool.toml"
        pool.write_text(dump_pool(replay_pool(data, replay.base_url, [model])))
        policy = f"single:{short_name(model)}"
        with ensemble_server(pool, policy, Path(folder) / "traces.db") as server:
            serve_url = f"{server.root}/v1"
            print(f"pool: replay of recorded outcomes ({model}), {args.requests} requests a level")
            print(f"{'clients':>7} | {'direct rps':>10} {'p95 ms':>7} | {'serve rps':>9} "
                  f"{'p95 ms':>7} | {'rps ratio':>9} {'p95 ratio':>9}")  # fmt: skip
            for clients in (1, 16, 128):
                direct = measure(replay.base_url, model, questions, clients, drivers=1)
                served = measure(serve_url, "consortium", questions, clients, drivers=1)
                rps_ratio, p95_ratio = served.rps / direct.rps, served.p95_ms / direct.p95_ms
                print(
                    f"{clients:>7} | {direct.rps:>10.1f} {direct.p95_ms:>7.1f} | "
                    f"{served.rps:>9.1f} {served.p95_ms:>7.1f} | "
                    f"{rps_ratio:>9.2f} {p95_ratio:>9.2f}"
                )


if __name__ == "__main__":
    main()
