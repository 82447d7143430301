from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from consortium.coord.baselines import SingleModel
from consortium.core.errors import BudgetExceeded
from consortium.core.types import user
from consortium.evaluation.runner import run_policy
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.budget import Budget, Limits
from consortium.runtime.cache import ResponseCache
from consortium.runtime.store import TraceStore
from tests.helpers import replay_caller


def requests_served(server: ReplayServerProcess) -> int:
    value = server.stats()["requests"]
    assert isinstance(value, int)
    return value


def test_caps_are_checked_before_the_call() -> None:
    run = Budget(Limits(max_calls=3, max_cost=1.0))
    task = run.child(Limits(max_calls=2, max_tokens=1000), "task t")
    first = task.reserve(400, 0.1)
    second = task.reserve(400, 0.1)
    with pytest.raises(BudgetExceeded, match="task t call cap reached"):
        task.reserve(10, 0.0)
    task.settle(first, 300, 0.05, made=True)
    task.settle(second, 0, 0.0, made=False)  # never went out: frees its reservation
    assert (task.calls, task.tokens, run.calls, run.cost) == (1, 300, 1, 0.05)
    with pytest.raises(BudgetExceeded, match="token cap"):
        task.reserve(701, 0.0)  # 300 spent + 701 worst case > 1000
    other = run.child(None, "task u")
    other.reserve(10, 0.5)
    with pytest.raises(BudgetExceeded, match="run cost cap"):
        other.reserve(10, 0.5)  # 0.05 spent + 0.5 reserved + 0.5 > 1.0


async def test_run_cap_holds_under_concurrency(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    caller = replay_caller(
        replay_data, replay_server.base_url, store, budget=Budget(Limits(max_calls=5))
    )
    records = replay_data.select(datasets=["gsm8k"], split="test")[:20]
    before = requests_served(replay_server)

    async def one(index: int) -> str:
        task_caller = caller.for_task(f"t{index}", "test")
        completion = await task_caller.call("Meta-Llama-3-8B", [user(records[index].question)])
        return completion.text

    results = await asyncio.gather(*(one(i) for i in range(20)), return_exceptions=True)
    await caller.pool.aclose()
    assert sum(isinstance(r, str) for r in results) == 5
    assert all(isinstance(r, BudgetExceeded) for r in results if not isinstance(r, str))
    assert requests_served(replay_server) - before == 5  # refused calls never left
    assert len(list(store.iter_calls(caller.run_id))) == 5


async def test_task_cap_stops_a_policy_without_losing_results(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    caller = replay_caller(replay_data, replay_server.base_url, store)
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], limit=10).tasks
    results = await run_policy(
        SingleModel("zephyr-7b-beta"),
        tasks,
        ReplayGrader(),
        caller,
        task_limits=Limits(max_tokens=5),
    )
    await caller.pool.aclose()
    assert all(r.error and "token cap" in r.error and not r.grade.correct for r in results)
    stored = list(store.iter_results(caller.run_id))
    assert len(stored) == 10 and all("token cap" in (row["error"] or "") for row in stored)


async def test_cache_replays_without_calling(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    cache = ResponseCache(tmp_path / "cache.db")
    record = replay_data.select(datasets=["gsm8k"], split="test")[3]
    texts = []
    for _ in range(2):
        caller = replay_caller(replay_data, replay_server.base_url, store, cache=cache)
        before = requests_served(replay_server)
        completion = await caller.for_task("t", "test").call(
            "Mistral-7B-v0.1", [user(record.question)], temperature=0.2
        )
        texts.append((completion.text, completion.cached, requests_served(replay_server) - before))
        await caller.pool.aclose()
    assert texts[0][1:] == (False, 1)
    assert texts[1] == (texts[0][0], True, 0)
    caller = replay_caller(replay_data, replay_server.base_url, store, cache=cache)
    changed = await caller.for_task("t", "test").call(
        "Mistral-7B-v0.1", [user(record.question)], temperature=0.7
    )
    await caller.pool.aclose()
    assert not changed.cached  # other sampling parameters, other key
    cache.close()
