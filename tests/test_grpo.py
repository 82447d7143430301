"""GRPO training of the conductor: the reward gates against the replay server, randomized worker
subsets, and a real TRL run on a tiny model built from a config (CPU, offline)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.pool import Pool
from consortium.pool.config import PoolConfig, parse_pool
from consortium.records.names import short_name
from consortium.replay.data import ReplayData
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from consortium.train.conductor.grpo import GRPOSettings, train_conductor, training_rows
from consortium.train.conductor.workflow_reward import (
    FORMAT_FAIL,
    RIGHT,
    WRONG,
    WorkflowReward,
    completion_text,
)


@pytest.fixture(scope="module")
def workers(split2_workers: PoolConfig) -> PoolConfig:
    return split2_workers


def split_task(replay_data: ReplayData) -> tuple[Task, str, str]:
    """An MMLU question (0/1 recorded outcomes) that one model got right and another wrong."""
    for task in load_replay_tasks(replay_data, datasets=["mmlu"], split="train").tasks:
        right = [m for m, p in task.meta["p_correct"].items() if p == 1.0]
        wrong = [m for m, p in task.meta["p_correct"].items() if p == 0.0]
        if right and wrong:
            return task, short_name(right[0]), short_name(wrong[0])
    raise AssertionError("no split question")


@pytest.fixture
def reward(workers: PoolConfig, replay_data: ReplayData) -> Iterator[tuple[WorkflowReward, Task]]:
    task, _, _ = split_task(replay_data)
    scorer = WorkflowReward(workers, [task], ReplayGrader())
    yield scorer, task
    scorer.close()


def lists(ids: list[int], access: list[object]) -> str:
    subtasks = [f"step {i}" for i in range(len(ids))]
    return f"<think>go</think>model_id = {ids}\nsubtasks = {subtasks}\naccess_list = {access}"


def test_reward_gates(reward: tuple[WorkflowReward, Task], replay_data: ReplayData) -> None:
    scorer, task = reward
    _, right, wrong = split_task(replay_data)
    roster = [wrong, right]  # this prompt's random subset: Model 0 = wrong, Model 1 = right
    completions = [
        "I think Model 1 should answer.",  # no lists
        lists([0, 5], [[], "all"]),  # out of range for a 2-worker subset
        lists([1, 0], [[], [1]]),  # forward access
        lists([0], [[]]),  # runs, wrong
        lists([0, 1], [[], "all"]),  # runs, last step right
        [{"role": "assistant", "content": lists([1], [[]])}],  # conversational form, right
    ]
    rewards = scorer(
        prompts=["p"] * len(completions),
        completions=completions,
        task_id=[task.id] * len(completions),
        workers=[json.dumps(roster)] * len(completions),
    )
    assert rewards == [FORMAT_FAIL, FORMAT_FAIL, FORMAT_FAIL, WRONG, RIGHT, RIGHT]
    last = scorer.history[-1]
    assert {k: last[k] for k in ("mean", "parsed", "right")} == pytest.approx(
        {"mean": 2.5 / 6, "parsed": 0.5, "right": 2 / 6}
    )
    assert last["calls"] == pytest.approx(4 / 6)  # 1 + 2 + 1 worker calls over 6 completions


def test_randomized_worker_subsets(workers: PoolConfig, replay_data: ReplayData) -> None:
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], split="train", limit=40).tasks
    rows = training_rows(tasks, workers, min_workers=2, max_steps=5, seed=3, chat=True)
    subsets = [json.loads(row["workers"]) for row in rows]
    assert all(2 <= len(s) <= len(workers.names) and set(s) <= set(workers.names) for s in subsets)
    assert len({tuple(s) for s in subsets}) > 30  # really random per prompt
    # The prompt lists exactly its subset as Model 0..k-1.
    for row, subset in zip(rows[:5], subsets[:5], strict=True):
        system = row["prompt"][0]["content"]
        assert f"Model {len(subset) - 1}" in system and f"Model {len(subset)}" not in system
    again = training_rows(tasks, workers, min_workers=2, max_steps=5, seed=3, chat=True)
    assert [r["workers"] for r in again] == [r["workers"] for r in rows]
    assert completion_text(42) == ""


@pytest.mark.slow
async def test_grpo_trains_a_tiny_conductor_that_then_conducts(
    workers: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], split="train", limit=4).tasks
    logged: list[dict[str, float]] = []
    # min_p goes to TRL's sampler: a generation path that refused it would fail here
    settings = GRPOSettings(
        steps=2, questions_per_step=1, group_size=2, max_completion_length=16, min_p=0.05
    )
    summary = train_conductor(
        "tiny", workers, tasks, ReplayGrader(), tmp_path, settings, on_log=logged.append
    )
    rows = [json.loads(line) for line in (tmp_path / "rewards.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1.0, 2.0] and rows == logged
    assert all(0.0 <= row["reward"] <= 1.0 for row in rows)
    assert summary["steps_logged"] == 2 and summary["settings"]["min_p"] == 0.05
    assert (tmp_path / "model" / "model.safetensors").exists()

    # The trained model conducts through the local backend; its random-weight text holds no
    # workflow, so the fallback model answers and the run says why.
    entries = [m.model_dump(mode="json", exclude_none=True) for m in workers.models]
    entries.append(
        {"name": "tiny", "backend": "local", "model": str(tmp_path / "model"), "max_tokens": 16}
    )
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    async with Pool(parse_pool({"models": entries})) as pool:
        caller = Caller(pool, store, store.start_run("t"))
        conductor = ConductorCoordinator("tiny", workers.names, fallback=workers.names[0])
        outcome = await conductor.run(tasks[0], caller.for_task("t", "c"))
    assert "fallback" in outcome.notes[0]
    calls = list(store.iter_calls(caller.run_id))
    assert [c["role"] for c in calls] == ["conductor", "fallback"]
    assert 0 < calls[0]["completion_tokens"] <= 16


@pytest.mark.e2e  # GRPO steps on the 135M GGUF model: a minute of CPU
def test_grpo_takes_the_pinned_gguf_instruct_model_as_base(
    workers: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    """`--base-model smollm2-135m`: the GGUF file of the pinned package, dequantized once into a
    transformers directory, trains with its own chat template (prompts go in as messages)."""
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], split="train", limit=2).tasks
    settings = GRPOSettings(steps=1, questions_per_step=1, group_size=2, max_completion_length=12)
    summary = train_conductor("smollm2-135m", workers, tasks, ReplayGrader(), tmp_path, settings)
    base = tmp_path / "base"
    assert summary["base_model"] == str(base) and (base / "config.json").exists()
    assert json.loads((base / "config.json").read_text())["hidden_size"] == 576
    assert (
        "chat_template" in (base / "tokenizer_config.json").read_text()
        or (base / "chat_template.jinja").exists()
    )
    (row,) = [json.loads(line) for line in (tmp_path / "rewards.jsonl").read_text().splitlines()]
    assert row["step"] == 1.0 and 0.0 <= row["reward"] <= 1.0
    assert (tmp_path / "model" / "model.safetensors").exists()


def test_resume_skips_a_half_written_checkpoint(tmp_path: Path) -> None:
    from consortium.train.conductor.grpo import last_complete_checkpoint

    for step, complete in ((1, True), (2, True), (10, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"partial")
        if complete:
            (folder / "trainer_state.json").write_text("{}")
    assert last_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-2"
    assert not (tmp_path / "checkpoint-10").exists()  # killed while saving: removed
    assert last_complete_checkpoint(tmp_path / "none") is None


def test_prompt_schedule_spans_epochs_in_a_seeded_order() -> None:
    from consortium.train.conductor.grpo import prompt_schedule

    rows = [{"task_id": str(i)} for i in range(3)]
    schedule = prompt_schedule(rows, 7, seed=4)
    ids = [row["task_id"] for row in schedule]
    assert len(ids) == 7 and sorted(ids[:3]) == sorted(ids[3:6]) == ["0", "1", "2"]
    assert prompt_schedule(rows, 7, seed=4) == schedule  # a resumed run rebuilds the same one
    assert prompt_schedule([], 5, seed=0) == []
