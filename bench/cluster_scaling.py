"""Throughput of evaluation jobs on a Ray cluster of 1, 2 and 4 worker nodes (one worker process
each), relative to one node, in one run.

    python bench/cluster_scaling.py --data ../shared/data/routerdc --latency 0.2 --tasks 160

Pool: replay of recorded outcomes (split2_model7, MMLU test questions) with a declared latency of
--latency seconds per call. For each node count a fresh cluster is started on this machine as
`ray start` starts one on many (`consortium.runtime.raycluster`: a head with no CPUs and N
worker nodes of one CPU, on loopback); the same --jobs shards of --tasks single-model tasks run
through `evaluate_on` with `RayExecutor`, each job --concurrency tasks in flight, every call
written to the trace store (--store sqlite: a file; postgres: a throwaway server of
`consortium.runtime.pgserver`). A warm-up of one job per node starts the worker processes first
(what a long run pays once), so the timed part is steady-state throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import consortium
from consortium.coord.registry import SpecBuilder, build_coordinator
from consortium.evaluation.runner import evaluate_on
from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.raycluster import DRIVER_ENV, LocalRayCluster
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task

os.environ.update(DRIVER_ENV)  # before Ray is imported (by the executor)


@contextlib.contextmanager
def trace_store(kind: str) -> Iterator[str]:
    if kind == "postgres":
        from consortium.runtime.pgserver import PostgresServer

        with PostgresServer() as server:
            yield server.create_database("bench")
    else:
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'traces.db'}"


async def run_jobs(
    executor: object, config: PoolConfig, tasks: list[Task], url: str, jobs: int, concurrency: int
) -> float:
    """Seconds to run `tasks` as `jobs` shards on `executor`; every call traced."""
    from consortium.runtime.dist import RayExecutor

    assert isinstance(executor, RayExecutor)
    spec = f"single:{config.names[0]}"
    store = TraceStore(url)
    async with Pool(config) as pool:
        caller = Caller(pool, store, store.start_run("bench"))
        started = time.perf_counter()
        (results,) = await evaluate_on(
            executor,
            [(build_coordinator(spec, config), SpecBuilder(spec))],
            tasks,
            ReplayGrader(),
            caller,
            concurrency=concurrency,
            shards_per_policy=jobs,
        )
        elapsed = time.perf_counter() - started
    assert len(results) == len(tasks) and all(r.calls == 1 for r in results)
    store.close()
    return elapsed


def measure(
    nodes: int, config: PoolConfig, tasks: list[Task], url: str, args: argparse.Namespace
) -> float:
    import ray

    from consortium.runtime.dist import RayExecutor

    source = str(Path(consortium.__file__).resolve().parents[1])
    env = {"PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    with LocalRayCluster(head_cpus=0, worker_cpus=(1,) * nodes, env=env) as cluster:
        executor = RayExecutor(cluster.address)
        try:
            warm = tasks[: nodes * 2]
            asyncio.run(run_jobs(executor, config, warm, url, nodes, args.concurrency))
            return asyncio.run(run_jobs(executor, config, tasks, url, args.jobs, args.concurrency))
        finally:
            ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--latency", type=float, default=0.2, help="declared seconds per call")
    parser.add_argument("--tasks", type=int, default=160)
    parser.add_argument("--jobs", type=int, default=16, help="shards the tasks are cut into")
    parser.add_argument("--concurrency", type=int, default=1, help="tasks in flight per job")
    parser.add_argument("--nodes", default="1,2,4", help="worker node counts, comma-separated")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()

    data = load_replay(args.data)
    tasks = load_replay_tasks(data, datasets=["mmlu"], split="test", limit=args.tasks).tasks
    counts = [int(n) for n in args.nodes.split(",")]
    latency = ["--latency-base", str(args.latency)]
    with ReplayServerProcess(args.data, *latency) as server, trace_store(args.store) as url:
        config = replay_pool(data, server.base_url, data.models["split2"][:1])
        seconds = {n: measure(n, config, tasks, url, args) for n in counts}
    base = len(tasks) / seconds[counts[0]]
    print(
        f"pool: replay (split2_model7, MMLU test), declared latency {args.latency:g} s/call; "
        f"{len(tasks)} tasks in {args.jobs} jobs, {args.concurrency} in flight per job; "
        f"store: {args.store}; machine: {os.cpu_count()} cores\n"
    )
    print("| worker nodes | seconds | calls/s | relative to 1 | ideal (latency-bound) |")
    print("|---|---|---|---|---|")
    for n in counts:
        rate = len(tasks) / seconds[n]
        print(f"| {n} | {seconds[n]:.1f} | {rate:.1f} | {rate / base:.2f} | {n / counts[0]:.2f} |")


if __name__ == "__main__":
    main()
