"""Time of the trace viewer's pages on a run of 100,000 calls, beside the same pages on a run of
1,000 calls in the same store and the same process (the ratio is the figure: the machine is shared
and noisy).

    python bench/viewer_pages.py --calls 100000 --small 1000 --repeat 21

Pool: none. The trace rows are SYNTHETIC, generated here and declared as such: 5 datasets, 8
"single" models with made-up prices and accuracies, and per task 8 single-model calls, a random
router (1 call), a TRINITY-shaped policy (thinker, worker, verifier), a vote workflow (3 voters
and a judge, with access lists in their prompts) and a Conductor-shaped policy (the conductor and
3 workers): 20 calls and 12 results per task. Only the rows' shape matters to the pages' queries.
Each page is fetched through Starlette's TestClient (in process: the server's time, no network):
the first fetch (a run's aggregates computed) and the median of `--repeat` more (aggregates kept
while the run's rows are unchanged), the two runs' pages fetched in turn.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert
from starlette.testclient import TestClient

from consortium.runtime.store import TraceStore
from consortium.runtime.store_tables import calls, results
from consortium.viewer.app import TraceViewer

DATASETS = ("gsm8k", "mmlu", "arc_challenge", "humaneval", "math")
MODELS = tuple(f"model-{i}" for i in range(8))
PRICE = {m: 2e-7 * (i + 1) ** 2 for i, m in enumerate(MODELS)}  # USD per token, made up
CALLS_PER_TASK = 20
VOTE = "workflow:judge-vote:models=model-0,model-1,model-2"
CONDUCTOR = "conductor:model-7"


def _call(run: str, policy: str, task: str, turn: int, model: str, role: str, saw: list[Any],
          answer: str, at: float) -> dict[str, Any]:  # fmt: skip
    text = json.dumps(saw)
    prompt, completion = 40 + len(text) // 4, 60
    return {
        "run_id": run, "policy": policy, "task_id": task, "turn": turn, "model": model,
        "role": role, "messages_hash": hashlib.sha256(text.encode()).hexdigest(),
        "messages": text, "response": answer, "prompt_tokens": prompt,
        "completion_tokens": completion, "cost": PRICE[model] * (prompt + completion),
        "latency": 0.5, "verdict": "ACCEPT" if role == "verifier" else None, "error": None,
        "cached": False, "fallback_from": None, "created_at": at,
    }  # fmt: skip


def task_rows(
    run: str, index: int, rng: np.random.Generator
) -> Iterator[tuple[str, dict[str, Any]]]:
    """One synthetic task: its calls and its results, as ("call" | "result", row)."""
    dataset = DATASETS[index % len(DATASETS)]
    task = f"{dataset}/{index}"
    question = [{"role": "user", "content": f"Synthetic question {index} of {dataset}?"}]
    at = 1e9 + index

    def answer(model: str) -> str:
        return f"Working on {task} as {model}. The answer is {rng.integers(0, 4)}."

    plans: list[tuple[str, list[tuple[str, str]]]] = [
        *((f"single:{m}", [(m, "worker")]) for m in MODELS),
        ("random", [(MODELS[index % 8], "worker")]),
        ("trinity", [("model-3", "thinker"), ("model-5", "worker"), ("model-6", "verifier")]),
        (VOTE, [("model-0", "worker"), ("model-1", "worker"), ("model-2", "worker"),
                ("model-0", "worker")]),
        (CONDUCTOR, [("model-7", "conductor"), ("model-1", "worker"), ("model-4", "worker"),
                     ("model-6", "worker")]),
    ]  # fmt: skip
    for policy, turns in plans:
        outputs: list[str] = []
        tokens, cost = 0, 0.0
        for turn, (model, role) in enumerate(turns, 1):
            earlier = [
                m for o in outputs for m in ({"role": "user", "content": "Answer."},
                                             {"role": "assistant", "content": o})
            ]  # fmt: skip
            text = answer(model)
            row = _call(run, policy, task, turn, model, role, [*earlier, *question], text, at)
            outputs.append(text)
            tokens += row["prompt_tokens"] + row["completion_tokens"]
            cost += row["cost"]
            yield "call", row
        right = rng.random() < 0.3 + 0.05 * len(turns) + 0.04 * (index % 3)
        yield "result", {
            "run_id": run, "policy": policy, "task_id": task, "dataset": dataset,
            "answer": outputs[-1], "correct": bool(right), "score": float(right),
            "detail": "synthetic", "calls": len(turns), "tokens": tokens, "cost": cost,
            "error": None, "created_at": at,
        }  # fmt: skip


def fill(store: TraceStore, total_calls: int, seed: int) -> str:
    """A run of about `total_calls` synthetic calls, written in batches."""
    run = store.start_run("eval", pool="SYNTHETIC rows (bench/viewer_pages.py)")
    rng = np.random.default_rng(seed)
    tasks = max(1, total_calls // CALLS_PER_TASK)
    batch: dict[str, list[dict[str, Any]]] = {"call": [], "result": []}
    with store.engine.begin() as db:
        for index in range(tasks):
            for kind, row in task_rows(run, index, rng):
                batch[kind].append(row)
            if len(batch["call"]) >= 20_000 or index == tasks - 1:
                db.execute(insert(calls), batch["call"])
                db.execute(insert(results), batch["result"])
                batch = {"call": [], "result": []}
    store.finish_run(run, "finished")
    return run


def pages(run: str, tasks: int) -> dict[str, str]:
    task = f"{DATASETS[(tasks // 2) % 5]}/{tasks // 2 - (tasks // 2) % 5}"
    return {
        "runs list": "/",
        "run page (default policy)": f"/runs/{run}",
        "run page, trinity, page 3": f"/runs/{run}?policy=trinity&page=3",
        "frontier": f"/runs/{run}/frontier",
        "task page, every policy": f"/runs/{run}/tasks/{task}",
        "task page, conductor": f"/runs/{run}/tasks/{task}?policy={CONDUCTOR}",
    }


def once(client: TestClient, path: str) -> float:
    start = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return time.perf_counter() - start


def timed(client: TestClient, paths: list[str], repeat: int) -> list[tuple[float, float]]:
    """Per path: its first fetch (a run's aggregates computed) and the median of `repeat` more
    (aggregates kept while the run's rows do not change), the paths fetched in turn so that the
    machine's load falls on all of them alike."""
    first = [once(client, path) for path in paths]
    again: list[list[float]] = [[] for _ in paths]
    for _ in range(repeat):
        for index, path in enumerate(paths):
            again[index].append(once(client, path))
    return [(f, statistics.median(a)) for f, a in zip(first, again, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--store", help="sqlite file to write (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.store or Path(folder) / "traces.db")
        store = TraceStore(f"sqlite:///{path}")
        started = time.perf_counter()
        small = fill(store, args.small, seed=1)
        large = fill(store, args.calls, seed=2)
        took = time.perf_counter() - started
        size = path.stat().st_size / 1e6
        print(f"wrote {args.small + args.calls:,} synthetic calls in {took:.1f} s ({size:.0f} MB)")
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        print(f"machine: {cpu}, {platform.system()} {platform.release()}, SQLite store")
        with TestClient(TraceViewer(store).app) as client:
            print(
                f"| page | {args.small:,} calls: first / again (ms) | "
                f"{args.calls:,} calls: first / again (ms) | ratio again |"
            )
            print("|---|---|---|---|")
            small_pages = pages(small, args.small // CALLS_PER_TASK)
            large_pages = pages(large, args.calls // CALLS_PER_TASK)
            for name in small_pages:
                if name == "runs list":  # one page for both runs: its times, once
                    ((first, again),) = timed(client, ["/"], args.repeat)
                    print(
                        f"| runs list (both runs) | | {1000 * first:.0f} / {1000 * again:.0f} | |"
                    )
                    continue
                a, b = timed(client, [small_pages[name], large_pages[name]], args.repeat)
                print(
                    f"| {name} | {1000 * a[0]:.0f} / {1000 * a[1]:.0f} | "
                    f"{1000 * b[0]:.0f} / {1000 * b[1]:.0f} | {b[1] / a[1]:.1f} |"
                )
        store.close()


if __name__ == "__main__":
    main()
