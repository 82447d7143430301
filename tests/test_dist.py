"""The Ray executor gives the results of the local path, on a local Ray instance."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from consortium.coord.registry import SpecBuilder, build_coordinator
from consortium.evaluation.runner import evaluate_on, evaluate_policies
from consortium.evolve.loop import EvolveConfig, EvolveInputs, EvolveLoop
from consortium.evolve.proposals import ClusterSpecialists, Escalation
from consortium.evolve.state import EvolveState
from consortium.pool import Pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor, RayExecutor, shards
from consortium.runtime.store import TraceStore
from consortium.train.conductor.workflow_reward import WorkflowReward
from consortium.train.trinity.online import train_online
from consortium.train.trinity.settings import TrainConfig
from tests.helpers import untimed
from tests.test_trinity import hash_setup


@pytest.fixture(scope="module")
def ray_executor() -> Iterator[RayExecutor]:
    import ray

    executor = RayExecutor(num_cpus=2)
    yield executor
    ray.shutdown()


def test_shards_keep_order() -> None:
    items = list(range(10))
    parts = shards(items, 3)
    assert [len(p) for p in parts] == [4, 3, 3] and [x for p in parts for x in p] == items
    assert shards(items[:2], 5) == [[0], [1]]


async def test_sep_cma_es_on_ray_equals_local(
    replay_server: ReplayServerProcess, replay_data: ReplayData, ray_executor: RayExecutor
) -> None:
    tasks, setup = hash_setup(replay_data)
    config = TrainConfig(generations=3, popsize=4, minibatch=10, sigma0=0.5, seed=5)
    pool_config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])
    async with Pool(pool_config) as pool:
        caller = Caller(pool, None, "train")
        local = await train_online(setup, tasks, ReplayGrader(), caller, config)
        remote = await train_online(
            setup, tasks, ReplayGrader(), caller, config, executor=ray_executor
        )
    assert remote.history == local.history
    assert np.array_equal(remote.vector, local.vector) and not np.allclose(local.vector, 0)


async def test_reinforce_on_ray_equals_local(
    replay_server: ReplayServerProcess, replay_data: ReplayData, ray_executor: RayExecutor
) -> None:
    """Remote rollouts return the rows local ones do, turns included, so REINFORCE's gradient
    is the same."""
    tasks, setup = hash_setup(replay_data)
    config = TrainConfig(generations=2, popsize=4, minibatch=10, seed=5)
    pool_config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])
    async with Pool(pool_config) as pool:
        caller = Caller(pool, None, "train")
        local = await train_online(
            setup, tasks, ReplayGrader(), caller, config, optimizer="reinforce"
        )
        remote = await train_online(
            setup,
            tasks,
            ReplayGrader(),
            caller,
            config,
            optimizer="reinforce",
            executor=ray_executor,
        )
    assert remote.history == local.history
    assert np.array_equal(remote.vector, local.vector) and not np.allclose(local.vector, 0)


async def test_eval_on_ray_equals_local_and_traces_every_call(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    ray_executor: RayExecutor,
    tmp_path: Path,
) -> None:
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:3])
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k", "mmlu"], limit=12).tasks
    specs = [f"single:{config.names[0]}", f"workflow:judge-vote:models={','.join(config.names)}"]
    url = f"sqlite:///{tmp_path / 't.db'}"
    store = TraceStore(url)
    local_run, remote_run = store.start_run("eval"), store.start_run("eval")
    async with Pool(config) as pool:
        local = await evaluate_policies(
            [build_coordinator(s, config) for s in specs],
            tasks,
            ReplayGrader(),
            Caller(pool, store, local_run),
        )
    async with Pool(config) as pool:
        remote = await evaluate_on(
            ray_executor,
            [(build_coordinator(s, config), SpecBuilder(s)) for s in specs],
            tasks,
            ReplayGrader(),
            Caller(pool, store, remote_run),
        )
    for summary, results in zip(local, remote, strict=False):
        assert results[0].policy == summary.policy
        assert [r.task.id for r in results] == [t.id for t in tasks]
        accuracy = {
            d: float(np.mean([r.grade.correct for r in results if r.task.dataset == d]))
            for d in summary.accuracy
        }
        assert accuracy == summary.accuracy and sum(r.calls for r in results) == summary.calls

    def answers(run_id: str) -> list[tuple[str, str, str | None]]:
        return sorted((r["policy"], r["task_id"], r["answer"]) for r in store.iter_results(run_id))

    assert answers(remote_run) == answers(local_run)
    assert (
        len(list(store.iter_calls(remote_run)))
        == len(list(store.iter_calls(local_run)))
        == 12 * 2 * 5
    )


async def test_evolve_on_ray_equals_local(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    ray_executor: RayExecutor,
    tmp_path: Path,
) -> None:
    config = replay_pool(
        replay_data,
        replay_server.base_url,
        ["gpt-4-1106-preview", "mistralai/mixtral-8x7b-chat", "zero-one-ai/Yi-34B-Chat"],
    )
    tuning = load_replay_tasks(replay_data, source="routerbench", split="train", limit=30).tasks
    heldout = load_replay_tasks(replay_data, source="routerbench", split="test", limit=30).tasks

    async def run(executor: Executor, name: str) -> EvolveState:
        async with Pool(config) as pool:
            inputs = EvolveInputs(
                pool=pool,
                pool_name="replay",
                tuning_pool=tuning,
                heldout_pool=heldout,
                grader=ReplayGrader(),
                resolve=lambda spec: build_coordinator(spec, config),
                models=config.names,
                store=TraceStore(f"sqlite:///{tmp_path / name}.db"),
                proposers=[ClusterSpecialists(), Escalation()],
                executor=executor,
            )
            settings = EvolveConfig(rounds=1, tuning_batch=45, heldout_batch=60)
            return await EvolveLoop(inputs, settings, tmp_path / name).run()

    local, remote = await run(LocalExecutor(), "local"), await run(ray_executor, "ray")

    def outcome(state: EvolveState) -> str:
        assert state.final is not None
        rounds = [r.model_dump(exclude={"run_id"}) for r in state.rounds]
        final = state.final.model_dump(exclude={"run_id"})
        return json.dumps(untimed([rounds, final]), sort_keys=True)

    assert outcome(remote) == outcome(local)


def test_grpo_rewards_on_ray_equal_local(
    replay_server: ReplayServerProcess, replay_data: ReplayData, ray_executor: RayExecutor
) -> None:
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:3])
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=6).tasks
    workers = json.dumps(config.names)
    texts = [
        "model_id = [0, 1]\nsubtasks = ['Solve it.', 'Check and answer.']\naccess_list = [[], [0]]",
        "model_id = [2]\nsubtasks = ['Solve it.']\naccess_list = [[]]",
        "no workflow here",
    ]
    completions = [texts[i % 3] for i in range(len(tasks))]
    arguments = ([""] * len(tasks), completions, [t.id for t in tasks], [workers] * len(tasks))
    local = WorkflowReward(config, tasks, ReplayGrader())
    remote = WorkflowReward(config, tasks, ReplayGrader(), jobs=ray_executor)
    try:
        expected = local(*arguments)
        assert remote(*arguments) == expected
        assert expected[2] == expected[5] == 0.0 and set(expected) > {0.0}
    finally:
        local.close()
        remote.close()


def test_eval_command_with_ray(
    replay_server: ReplayServerProcess, replay_data: ReplayData, replay_dir: Path, tmp_path: Path
) -> None:
    from consortium.pool.config import dump_pool
    from tests.test_cli import cli

    pool = tmp_path / "pool.toml"
    models = replay_data.models["split2"][:2]
    pool.write_text(dump_pool(replay_pool(replay_data, replay_server.base_url, models)))
    reports = {}
    for executor in ("local", "ray"):
        out = tmp_path / f"{executor}.json"
        tasks = f"replay:data={replay_dir}:datasets=mmlu:limit=10"
        result = cli(
            "eval", "--pool", str(pool), "--tasks", tasks, "--executor", executor,
            "--json", str(out), "--traces", f"sqlite:///{tmp_path / 't.db'}",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        reports[executor] = untimed(json.loads(out.read_text())["policies"])
    assert len(reports["local"]) == 4  # two models, random, the oracle
    assert reports["ray"] == reports["local"]
