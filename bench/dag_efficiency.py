"""Wall time of workflows of mixed shapes run by the DAG executor and by a sequential one,
each divided by the sum of the workflows' critical paths (ideal = 1.0), in one run.

    python bench/dag_efficiency.py --data ../shared/data/routerdc --workflows 40 --latency 0.2

Pool: replay of recorded outcomes (split2_model7, GSM8K test questions) with a declared latency
of --latency seconds per call, so a step's ideal duration is known. Shapes: single, chain,
fan-out/fan-in (best-of-N with a judge), mixture-of-agents, debate, self-reflection, and random
valid DAGs of up to 5 steps. Workflows run one at a time, alternating executors per workflow so
that drift hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.templates import (
    debate,
    majority_vote,
    mixture_of_agents,
    self_reflection,
    single,
)
from consortium.coord.conductor.workflow import Access, Workflow, build
from consortium.pool import Pool
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import load_replay_tasks
from consortium.runtime.caller import Caller


def random_dag(rng: random.Random, models: list[str]) -> Workflow:
    steps = rng.randint(2, 5)
    access: list[Access] = []
    for index in range(steps):
        if index == steps - 1 and rng.random() < 0.5:
            access.append("all")
        else:
            access.append(tuple(j for j in range(index) if rng.random() < 0.4))
    return build(
        [rng.choice(models) for _ in range(steps)], [f"s{i}" for i in range(steps)], access
    )


def shapes(rng: random.Random, models: list[str], count: int) -> list[tuple[str, Workflow]]:
    fixed = [
        ("single", single(models[0])),
        ("chain", build(models[:4], ["a", "b", "c", "d"], [(), (0,), (1,), (2,)])),
        ("best-of-4 + judge", majority_vote(models[:4], models[4])),
        ("mixture-of-agents", mixture_of_agents(models[1:5], models[0])),
        ("debate", debate(models[:2], rounds=2)),
        ("self-reflection", self_reflection(models[0])),
    ]
    batch = []
    for index in range(count):
        batch.append(
            fixed[index] if index < len(fixed) else ("random DAG", random_dag(rng, models))
        )
    return batch


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True, help="the routerdc data folder")
    parser.add_argument("--workflows", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.2, help="declared seconds per call")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    data = load_replay(args.data)
    questions = load_replay_tasks(data, datasets=["gsm8k"], limit=args.workflows).tasks
    rng = random.Random(args.seed)
    with ReplayServerProcess(args.data, "--latency-base", str(args.latency)) as server:
        config = replay_pool(data, server.base_url, data.models["split2"])
        batch = shapes(rng, config.names, args.workflows)
        executors = {"DAG": WorkflowExecutor(), "sequential": WorkflowExecutor(sequential=True)}
        wall = dict.fromkeys(executors, 0.0)
        ideal = 0.0
        steps = 0
        async with Pool(config) as pool:
            caller = Caller(pool, None, "bench")
            warm = caller.for_task("warm", "bench")
            await executors["DAG"].run(single(config.names[0]), questions[0].question, warm)
            for index, ((_, workflow), task) in enumerate(zip(batch, questions, strict=False)):
                ideal += workflow.critical_path([args.latency] * len(workflow))
                steps += len(workflow)
                order = list(executors) if index % 2 == 0 else list(executors)[::-1]
                for name in order:
                    started = time.perf_counter()
                    await executors[name].run(
                        workflow, task.question, caller.for_task(f"{name}{index}", "bench")
                    )
                    wall[name] += time.perf_counter() - started
    kinds = sorted({kind for kind, _ in batch})
    print(f"pool: {data.description('split2')}, declared latency {args.latency:g}s per call")
    print(f"{len(batch)} workflows, {steps} steps; shapes: {', '.join(kinds)}")
    print(f"sum of critical paths (ideal): {ideal:.2f}s")
    for name, seconds in wall.items():
        print(f"{name:>10}: wall {seconds:.2f}s, wall / ideal = {seconds / ideal:.3f}")
    print(f"sequential / DAG wall time: {wall['sequential'] / wall['DAG']:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
