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
the direct rows at 1 and 2 drivers show whether the driver limits the measurement. At 1, 16 and
64 clients each target is measured twice, in alternating order; a row gives rps and p50 / p95
latency, and the added latency over direct (p50) of serve divided by LiteLLM's.
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
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool, short_name
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
                report(targets, questions, args.drivers, model)
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


def report(
    targets: dict[str, tuple[str, str]], questions: list[str], drivers: int, model: str
) -> None:
    url, name = targets["direct"]
    one = measure(url, name, questions, 16, 1)
    two = measure(url, name, questions, 16, drivers)
    print(f"pool: replay of recorded outcomes ({model}), {len(questions)} requests a measurement")
    print(
        f"driver check, direct at 16 clients: 1 driver {one.rps:.0f} rps, {drivers} drivers "
        f"{two.rps:.0f} rps\n"
    )
    print("| clients | target | rps | p50 ms | p95 ms |\n|---|---|---|---|---|")
    summary = []
    for clients in (1, 16, 64):
        results: dict[str, list[Measured]] = {t: [] for t in targets}
        for round_ in range(2):
            order = list(targets) if round_ == 0 else list(reversed(targets))
            for target in order:
                url, name = targets[target]
                results[target].append(measure(url, name, questions, clients, drivers))
        for target, runs in results.items():
            rps = statistics.mean(r.rps for r in runs)
            p50 = statistics.mean(r.p50_ms for r in runs)
            p95 = statistics.mean(r.p95_ms for r in runs)
            print(f"| {clients} | {target} | {rps:.0f} | {p50:.1f} | {p95:.1f} |")
        direct = statistics.mean(r.p50_ms for r in results["direct"])
        added = {
            t: statistics.mean(r.p50_ms for r in results[t]) - direct for t in ("litellm", "serve")
        }
        summary.append((clients, added["serve"], added["litellm"]))
    print("\n| clients | serve adds (p50 ms) | LiteLLM adds (p50 ms) | ratio serve / LiteLLM |")
    print("|---|---|---|---|")
    for clients, serve_added, litellm_added in summary:
        ratio = serve_added / litellm_added if litellm_added > 0 else float("nan")
        print(f"| {clients} | {serve_added:.1f} | {litellm_added:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
