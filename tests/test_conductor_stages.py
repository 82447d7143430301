"""A conductor trained in stages: example workflows for the supervised warm start, the
valid-workflow rate on held-out questions, and a real staged run (SFT then GRPO) on a tiny model
against the replay server, resumed without redoing finished stages."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from consortium.coord.conductor.workflow import parse_workflow
from consortium.pool.config import PoolConfig
from consortium.replay.data import ReplayData
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.train.conductor.grpo import GRPOSettings, training_rows
from consortium.train.conductor.stages import (
    StageCallbacks,
    StagedSettings,
    train_conductor_in_stages,
)
from consortium.train.conductor.workflow_sft import (
    SHAPES,
    WarmStartSettings,
    example_workflow,
    sft_examples,
)
from consortium.train.conductor.workflow_validity import WorkflowShape, workflow_shape


@pytest.fixture(scope="module")
def workers(split2_workers: PoolConfig) -> PoolConfig:
    return split2_workers


def test_every_example_workflow_parses_for_its_worker_count() -> None:
    rng = random.Random(0)
    shapes_seen = set()
    for n_workers in range(1, 6):
        roster = [f"w{i}" for i in range(n_workers)]
        for _ in range(40):
            text = example_workflow(n_workers, rng)
            workflow = parse_workflow(text, roster, max_steps=5)
            assert {step.model for step in workflow.steps if not step.tool} <= set(roster)
            shapes_seen.add(len(workflow))
    assert shapes_seen == {len(shape.subtasks) for shape in SHAPES}


def test_a_workflows_shape_counts_steps_distinct_workers_and_the_answering_one() -> None:
    text = (
        "model_id = [1, 0, 1]\nsubtasks = ['solve', 'check', 'final']\n"
        "access_list = [[], [0], 'all']"
    )
    assert workflow_shape(text, ["gpt-4o", "gemini"]) == WorkflowShape(3, 2, "gemini")
    one = "model_id = [0]\nsubtasks = ['answer']\naccess_list = [[]]"
    assert workflow_shape(one, ["gpt-4o", "gemini"]) == WorkflowShape(1, 1, "gpt-4o")


def test_sft_examples_follow_each_prompts_workers(
    workers: PoolConfig, replay_data: ReplayData
) -> None:
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], split="train", limit=3).tasks
    rows = training_rows(tasks, workers, min_workers=2, max_steps=5, seed=1, chat=True)
    examples = sft_examples(rows, 7, seed=2)
    assert len(examples) == 7
    for index, example in enumerate(examples):
        row = rows[index % len(rows)]
        assert example["prompt"] == row["prompt"]  # the conductor's own prompt, cycled
        (message,) = example["completion"]
        assert message["role"] == "assistant"
        parse_workflow(message["content"], json.loads(row["workers"]), max_steps=5)
    assert sft_examples(rows, 7, seed=2) == examples
    text_rows = [{**row, "prompt": "plain prompt"} for row in rows]
    assert isinstance(sft_examples(text_rows, 1, seed=2)[0]["completion"], str)


@pytest.mark.slow
def test_staged_training_measures_each_stage_and_resumes(
    workers: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], split="train", limit=4).tasks
    held_out = load_replay_tasks(replay_data, datasets=["mmlu"], split="test", limit=3).tasks
    settings = StagedSettings(
        grpo=GRPOSettings(steps=1, questions_per_step=1, group_size=2, max_completion_length=16),
        warm_start=WarmStartSettings(steps=2, batch_size=2),
        held_out=3,
    )
    stages: list[tuple[str, int]] = []
    summary = train_conductor_in_stages(
        "tiny",
        workers,
        tasks,
        ReplayGrader(),
        tmp_path,
        settings,
        held_out=held_out,
        callbacks=None,
    )
    assert list(summary["validity"]) == ["base", "warm start", "grpo"]
    for row in summary["validity"].values():
        assert row["n"] == 3 and 0 <= row["valid"] <= 3
        assert row["valid"] + sum(row["errors"].values()) == 3
        assert len(row["samples"]) == 3
        assert len(row["shapes"]) == row["valid"]
    losses = [json.loads(line) for line in (tmp_path / "warm-start" / "loss.jsonl").open()]
    assert [row["step"] for row in losses] == [1.0, 2.0]
    assert summary["warm_start_model"] == str(tmp_path / "warm-start")
    assert summary["grpo"]["base_model"] == str(tmp_path / "warm-start")  # GRPO starts from SFT
    assert json.loads((tmp_path / "stages.json").read_text()) == summary
    assert (tmp_path / "model" / "model.safetensors").exists()

    # Resumed: finished measurements and the warm-started model are kept, not redone.
    loss_written = (tmp_path / "warm-start" / "loss.jsonl").stat().st_mtime_ns
    again = train_conductor_in_stages(
        "tiny",
        workers,
        tasks,
        ReplayGrader(),
        tmp_path,
        settings,
        held_out=held_out,
        resume=True,
        callbacks=StageCallbacks(on_stage=lambda name, n: stages.append((name, n))),
    )
    assert (tmp_path / "warm-start" / "loss.jsonl").stat().st_mtime_ns == loss_written
    assert stages == [("GRPO", 1)]
    assert again["validity"] == summary["validity"]


@pytest.mark.slow
def test_train_conductor_command_reports_each_stage(
    workers: PoolConfig, replay_dir: Path, tmp_path: Path
) -> None:
    from consortium.pool.config import dump_pool
    from tests.test_cli import cli

    pool = tmp_path / "pool.toml"
    pool.write_text(dump_pool(workers))
    spec = f"replay:data={replay_dir}:datasets=mmlu:limit=3"
    out = tmp_path / "run"
    result = cli(
        "train", "conductor", "--pool", str(pool), "--out", str(out), "--base-model", "tiny",
        "--tasks", f"{spec}:split=train", "--held-out", f"{spec}:split=test", "--held-out-n", "2",
        "--warm-start-steps", "1", "--steps", "1", "--questions-per-step", "1",
        "--group-size", "2", "--max-completion", "8",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    stages = json.loads((out / "stages.json").read_text())
    for stage in ("base", "warm start", "grpo"):
        row = stages["validity"][stage]
        assert f"valid workflows ({stage}): {row['valid']}/2" in result.stdout
    assert f"conductor written to {out / 'model'}" in result.stdout
    assert "it/s]" not in result.stderr  # no third-party progress bars
