"""The reliability figures: model calls under injected faults, compared answer by answer with the
same calls on a fault-free server, plus kill-and-resume cycles of `consortium eval`.

    python bench/reliability.py --data ../shared/data/routerdc --calls 10000

Pool: replay of recorded outcomes (split2_model7, 7 open models), a declared simulation of
faults by the replay server (seeded per request and attempt): HTTP 500/503/429, hangs past the
client's timeout, malformed bodies, empty choices, connections dropped halfway through the body
and bodies trickling out slowly, `--fault-rate` of requests in all. Each task
is one model answering one recorded question, run once against a clean server and once against
the faulty one. A fault may cost a retry or end a task with a visible error; it must never change
an answer silently ("wrong answers caused by faults", must be 0), and every finished task must
have its result and call rows in the trace store ("traces lost", must be 0). `--resumes` eval
runs are killed with SIGKILL at random points and resumed, and `--conductor-resumes` GRPO
trainings (tiny model) after their second checkpoint; each must end with the uninterrupted
result. Prints the figures, and JSON with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from consortium.coord.baselines import SingleModel
from consortium.evaluation.results import TaskResult
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import dump_pool
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore


async def answer_all(
    base_url: str, data: Any, per_model: int, store: TraceStore | None, timeout: float
) -> tuple[dict[tuple[str, str], TaskResult], str]:
    """Every split2 model on `per_model` GSM8K and MMLU questions; results by (model, task)."""
    config = replay_pool(
        data, base_url, data.models["split2"], timeout=timeout, max_retries=6, max_concurrency=16
    )
    tasks = load_replay_tasks(data, datasets=["gsm8k", "mmlu"], limit=per_model // 2).tasks
    run_id = store.start_run("reliability") if store else "clean"
    results: dict[tuple[str, str], TaskResult] = {}
    async with Pool(config) as pool:
        caller = Caller(pool, store, run_id)
        # the models run side by side: a task's retries wait only on its own model's queue
        per_model = await asyncio.gather(
            *(
                run_policy(SingleModel(name), tasks, ReplayGrader(), caller, concurrency=64)
                for name in config.names
            )
        )
        for name, finished in zip(config.names, per_model, strict=True):
            for result in finished:
                results[(name, result.task.id)] = result
    return results, run_id


UNREPEATED = {"cost", "seconds"}


def stored_results(db: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(db)) as connection:
            return int(connection.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def kill_and_resume(data_dir: str, base_url: str, data: Any, folder: Path, cycle: int) -> bool:
    """One `consortium eval` killed at a random point of its run and resumed; True when the
    resumed run's report equals an uninterrupted run's."""
    pool = folder / f"pool-{cycle}.toml"
    pool.write_text(dump_pool(replay_pool(data, base_url, data.models["split2"][:2])))
    base = [sys.executable, "-m", "consortium", "eval", "--pool", str(pool), "--concurrency", "8",
            "--tasks", f"replay:data={data_dir}:datasets=gsm8k:limit=120"]  # fmt: skip
    db = folder / f"killed-{cycle}.db"
    process = subprocess.Popen(
        [*base, "--traces", f"sqlite:///{db}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # killed once a random number of its 240 results are stored: mid-run, whatever the start-up
    target = random.Random(cycle).randint(20, 200)
    while process.poll() is None and stored_results(db) < target:
        time.sleep(0.02)
    if process.poll() is not None:
        return False  # it ended before the kill: nothing was resumed
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    (run_id,) = sqlite3.connect(db).execute("SELECT run_id FROM runs").fetchone()
    outputs = []
    for traces, extra in (
        (f"sqlite:///{db}", ["--resume", run_id]),
        (f"sqlite:///{folder}/straight-{cycle}.db", []),
    ):
        out = folder / f"report-{cycle}-{len(outputs)}.json"
        subprocess.run([*base, "--traces", traces, *extra, "--json", str(out)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        report = json.loads(out.read_text())["policies"]
        # Costs are sums in another order after a resume, and wall seconds are never repeated;
        # everything else must match exactly.
        outputs.append(
            {p: {k: v for k, v in e.items() if k not in UNREPEATED} for p, e in report.items()}
        )
    return bool(outputs[0] == outputs[1])


def conductor_kill_and_resume(data_dir: str, base_url: str, data: Any, folder: Path) -> bool:
    """`consortium train conductor` (tiny model, 4 GRPO steps, a checkpoint per step) killed
    after its second checkpoint and resumed; True when the resumed model and reward log equal
    an uninterrupted run's."""
    from safetensors.numpy import load_file

    folder.mkdir(parents=True, exist_ok=True)
    pool = folder / "conductor-pool.toml"
    pool.write_text(dump_pool(replay_pool(data, base_url, data.models["split2"][:3])))
    base = [sys.executable, "-m", "consortium", "train", "conductor", "--pool", str(pool),
            "--tasks", f"replay:data={data_dir}:split=train:datasets=mmlu:limit=8",
            "--base-model", "tiny", "--steps", "4", "--questions-per-step", "1",
            "--group-size", "2", "--max-completion", "16", "--save-steps", "1",
            "--lr", "1e-3"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def start(*extra: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*base, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )

    killed = folder / "killed"
    if start("--out", str(folder / "straight")).wait() != 0:
        return False
    process = start("--out", str(killed))
    while not (killed / "checkpoints" / "checkpoint-2").exists() and process.poll() is None:
        time.sleep(0.1)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    if start("--out", str(killed), "--resume").wait() != 0:
        return False  # the resumed training failed: counted as not matching
    folders = (folder / "straight", killed)
    weights = [load_file(str(f / "model" / "model.safetensors")) for f in folders]
    same_weights = weights[0].keys() == weights[1].keys() and all(
        (weights[0][k] == weights[1][k]).all() for k in weights[0]
    )
    logs = [(f / "rewards.jsonl").read_text() for f in folders]
    return bool(same_weights and logs[0] == logs[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--calls", type=int, default=10_000, help="tasks (one call each)")
    parser.add_argument("--fault-rate", type=float, default=0.10)
    parser.add_argument("--resumes", type=int, default=3, help="eval kill-and-resume cycles")
    parser.add_argument(
        "--conductor-resumes", type=int, default=1, help="train conductor kill-and-resume cycles"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    data = load_replay(args.data, sources=["split2"])
    per_model = max(2, args.calls // len(data.models["split2"]))
    share = args.fault_rate / 10
    faults = ["--error-rate", f"{3 * share}", "--timeout-rate", f"{2 * share}", "--hang-seconds",
              "3", "--garbage-rate", f"{2 * share}", "--drop-rate", f"{2 * share}",
              "--slow-rate", f"{share}", "--slow-seconds", "0.1", "--fault-seed", "7"]  # fmt: skip
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory() as folder,
        ReplayServerProcess(args.data, "--sources", "split2") as clean,
        ReplayServerProcess(args.data, "--sources", "split2", *faults) as faulty,
    ):
        expected, _ = asyncio.run(answer_all(clean.base_url, data, per_model, None, 30.0))
        store = TraceStore(f"sqlite:///{folder}/faulty.db")
        got, run_id = asyncio.run(answer_all(faulty.base_url, data, per_model, store, 1.0))
        stats = httpx.get(faulty.base_url.removesuffix("/v1") + "/replay/stats").json()
        result_rows = {(r["policy"], r["task_id"]): r for r in store.iter_results(run_id)}
        answered_calls = Counter(
            (c["policy"], c["task_id"]) for c in store.iter_calls(run_id) if c["error"] is None
        )
        silent_wrong = failed = lost = 0
        for (model, task_id), result in got.items():
            if result.error is not None:
                failed += 1  # visible: the task says why it has no answer
            elif result.answer != expected[(model, task_id)].answer:
                silent_wrong += 1
            key = (f"single:{model}", task_id)
            if key not in result_rows or (result.error is None and answered_calls[key] != 1):
                lost += 1
        resumes_ok = sum(
            kill_and_resume(args.data, clean.base_url, data, Path(folder), cycle)
            for cycle in range(args.resumes)
        )
        conductor_ok = sum(
            conductor_kill_and_resume(args.data, clean.base_url, data, Path(folder) / f"c{cycle}")
            for cycle in range(args.conductor_resumes)
        )
    figures = {
        "pool": "replay of recorded outcomes (split2_model7), declared fault injection",
        "tasks": len(got),
        "requests_to_faulty_server": stats["requests"],
        "faults_injected": stats["faults"],
        "faults_total": sum(stats["faults"].values()),
        "tasks_completed": len(got) - failed,
        "tasks_failed_visibly": failed,
        "wrong_answers_caused_by_faults": silent_wrong,
        "traces_lost": lost,
        "resumes_tested": args.resumes,
        "resumes_matching": resumes_ok,
        "conductor_resumes_tested": args.conductor_resumes,
        "conductor_resumes_matching": conductor_ok,
        "seconds": round(time.perf_counter() - started, 1),
    }
    for key, value in figures.items():
        print(f"{key:>30}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
