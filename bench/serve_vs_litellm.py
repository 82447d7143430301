"""`consortium serve` beside LiteLLM's proxy, the gateway users compare it with: the same replay
server upstream, the same questions, the same load driver.

    make bench-litellm   # builds .bench/litellm (LiteLLM's proxy, pinned, own venv), runs this:
    python bench/serve_vs_litellm.py --data ../shared/data/routerdc \
        --litellm .bench/litellm/bin/litellm

Pool: replay of recorded outcomes (split2_model7, GSM8K test questions), no declared latency, so
what is measured is each gateway's own work per request. LiteLLM's proxy gets a one-model config
pointing at the replay server (`openai/` provider); `serve` runs `single:MODEL` (one call per
request, plus a trace row in SQLite and the accounting). LiteLLM pins packages that conflict with
ours (rich 13), so it lives in its own virtual environment and runs as its own process on
loopback, as users deploy it.

The driver is `--drivers` processes, each running its share of the clients on one asyncio loop;
the direct rows at 1 and 2 drivers show whether the driver limits the measurement. At each
concurrency (`--clients`, default 1, 16 and 64) each target is measured `--rounds` times (default
5), the order of the targets rotating each round; a row gives the median over rounds of rps and
p50 / p95 latency, serve's rps over direct's, and the added latency over direct (p50) of serve
divided by LiteLLM's (medians of the per-round figures).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from consortium.pool.config import dump_pool
from consortium.records.names import short_name
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer
from load_driver import Measured, measure


def litellm_proxy(
    litellm: str, model: str, upstream: str, folder: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = folder / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {short_name(model)}\n"
        "    litellm_params:\n"
        f"      model: openai/{model}\n"
        f"      api_base: {upstream}\n"
        "      api_key: unused\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )
    log = (folder / "litellm.log").open("wb")
    process = subprocess.Popen(
        [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
         "--num_workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "LITELLM_LOG": "ERROR"},
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"LiteLLM's proxy exited; see {folder / 'litellm.log'}")
        try:
            if httpx.get(f"{root}/health/liveliness", timeout=2).status_code == 200:
                return process, f"{root}/v1"
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.kill()
    raise SystemExit("LiteLLM's proxy did not start within 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--litellm", default=".bench/litellm/bin/litellm")
    parser.add_argument("--requests", type=int, default=400, help="requests per measurement")
    parser.add_argument("--drivers", type=int, default=2, help="driver processes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", default="1,16,64", help="concurrency levels, comma-separated")
    args = parser.parse_args()
    data = load_replay(args.data, sources=["split2"])
    model = data.models["split2"][0]
    records = data.select(source="split2", datasets=["gsm8k"], split="test")
    questions = [records[i % len(records)].question for i in range(args.requests)]
    with (
        tempfile.TemporaryDirectory() as scratch,
        ReplayServerProcess(args.data, "--sources", "split2") as replay,
    ):
        folder = Path(scratch)
        pool = folder / "pool.toml"
        pool.write_text(dump_pool(replay_pool(data, replay.base_url, [model])))
        proxy, litellm_url = litellm_proxy(args.litellm, model, replay.base_url, folder)
        try:
            with ChildServer(
                "serve", "--pool", str(pool), "--policy", f"single:{short_name(model)}",
                "--traces", f"sqlite:///{folder / 'traces.db'}",
                ready_path="/health", label="serve", env={"CONSORTIUM_SERVE_TOKEN": ""},
            ) as served:  # fmt: skip
                targets = {
                    "direct": (replay.base_url, model),
                    "litellm": (litellm_url, short_name(model)),
                    "serve": (f"{served.root}/v1", "consortium"),
                }
                levels = [int(c) for c in args.clients.split(",")]
                report(targets, questions, args.drivers, model, levels, args.rounds)
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


def report(
    targets: dict[str, tuple[str, str]],
    questions: list[str],
    drivers: int,
    model: str,
    levels: list[int],
    rounds: int,
) -> None:
    url, name = targets["direct"]
    one = measure(url, name, questions, 16, 1)
    two = measure(url, name, questions, 16, drivers)
    print(f"pool: replay of recorded outcomes ({model}), {len(questions)} requests a measurement")
    print(
        f"driver check, direct at 16 clients: 1 driver {one.rps:.0f} rps, {drivers} drivers "
        f"{two.rps:.0f} rps\n"
    )
    print(f"medians of {rounds} rounds, targets in rotating order")
    print("| clients | target | rps | p50 ms | p95 ms |\n|---|---|---|---|---|")
    summary = []
    median = statistics.median
    for clients in levels:
        results: dict[str, list[Measured]] = {t: [] for t in targets}
        names = list(targets)
        for round_ in range(rounds):
            shift = round_ % len(names)
            for target in names[shift:] + names[:shift]:
                url, name = targets[target]
                results[target].append(measure(url, name, questions, clients, drivers))
        for target, runs in results.items():
            rps = median(r.rps for r in runs)
            p50 = median(r.p50_ms for r in runs)
            p95 = median(r.p95_ms for r in runs)
            print(f"| {clients} | {target} | {rps:.0f} | {p50:.1f} | {p95:.1f} |")
        per_round = list(zip(results["direct"], results["serve"], results["litellm"], strict=True))
        rps_ratio = median(s.rps / d.rps for d, s, _ in per_round)
        serve_added = median(s.p50_ms - d.p50_ms for d, s, _ in per_round)
        litellm_added = median(x.p50_ms - d.p50_ms for d, _, x in per_round)
        added_ratio = median((s.p50_ms - d.p50_ms) / (x.p50_ms - d.p50_ms) for d, s, x in per_round)
        summary.append((clients, rps_ratio, serve_added, litellm_added, added_ratio))
    print(
        "\n| clients | serve rps / direct rps | serve adds (p50 ms) | LiteLLM adds (p50 ms) "
        "| ratio serve / LiteLLM |"
    )
    print("|---|---|---|---|---|")
    for clients, rps_ratio, serve_added, litellm_added, ratio in summary:
        print(
            f"| {clients} | {rps_ratio:.2f} | {serve_added:.1f} | {litellm_added:.1f} "
            f"| {ratio:.2f} |"
        )


if __name__ == "__main__":
    main()
