"""GRPO training of a Conductor with TRL's `GRPOTrainer` (needs the `coord` extra and `trl`).

Each training prompt is a question with a random subset of the pool's workers (the adaptive pool
of the paper), shown as "Model 0..k-1". A completion's reward is the paper's gate
(`train.conductor.workflow_reward`): whether its workflow parses, then whether running it
answers right.

The same command trains a tiny model built from a config on a CPU in seconds (`base_model="tiny"`)
and a real base model (the paper: Qwen2.5-7B, 200 steps x 4 questions x 64 rollouts, lr 1e-6,
KL 0) on a GPU machine.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from consortium.coord.conductor.prompt import conductor_messages
from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_datasets, quiet_transformers
from consortium.pool.config import PoolConfig
from consortium.pool.local import prompt_text
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.tasks.base import Grader, Task
from consortium.train.conductor.base_models import load_tokenizer, resolve_base
from consortium.train.conductor.mixed_pool import roster_of
from consortium.train.conductor.trainer_setup import device_args, step_logger
from consortium.train.conductor.workflow_reward import WorkflowReward


@dataclass
class GRPOSettings:
    steps: int = 200
    questions_per_step: int = 4
    group_size: int = 64
    learning_rate: float = 1e-6
    max_completion_length: int = 1024
    temperature: float = 1.0
    min_p: float = 0.0
    """Sample only tokens at least this share of the likeliest one's probability (0: all)."""
    min_workers: int = 2
    """Smallest random worker subset per prompt; the largest is the whole pool."""
    max_steps: int = 5
    """Workflow steps allowed (the paper: 5)."""
    save_steps: int = 50
    seed: int = 0
    cost_weight: float = 0.0
    """λ of the cost-aware reward (`workflow_reward`): a valid workflow loses λ x its $ in units
    of its task's `cost_unit`; 0 is the paper's reward."""
    examples: bool = True
    """Whether the prompt shows the four example workflows (`prompt.system_prompt`)."""


def training_rows(
    tasks: Sequence[Task],
    pool: PoolConfig,
    *,
    min_workers: int,
    max_steps: int,
    seed: int,
    chat: bool,
    tokenizer: Any = None,
    examples: bool = True,
) -> list[dict[str, Any]]:
    """One prompt per task, each with its own random subset of the workers it may use: the
    task's roster (`mixed_pool`) or else the pool's."""
    rng = random.Random(seed)
    strengths = {m.name: m.strengths for m in pool.models}
    rows = []
    for task in tasks:
        roster = roster_of(task, pool.names)
        low = max(1, min(min_workers, len(roster)))
        workers = rng.sample(roster, rng.randint(low, len(roster)))
        messages = conductor_messages(
            task.question, workers, strengths, max_steps=max_steps, examples=examples
        )
        prompt: Any = messages if chat else prompt_text(tokenizer, messages)
        rows.append({"prompt": prompt, "task_id": task.id, "workers": json.dumps(workers)})
    return rows


def prompt_schedule(rows: Sequence[dict[str, Any]], total: int, seed: int) -> list[dict[str, Any]]:
    """`total` prompts: the rows in a fresh seeded order each epoch, one epoch after another."""
    schedule: list[dict[str, Any]] = []
    epoch = 0
    while len(schedule) < total and rows:
        order = list(rows)
        random.Random(f"{seed}:{epoch}").shuffle(order)
        schedule += order
        epoch += 1
    return schedule[:total]


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The newest checkpoint the trainer finished writing (its trainer_state.json is written
    last); newer, half-written ones (a process killed while saving) are removed."""
    found = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    while found and not (found[-1] / "trainer_state.json").exists():
        shutil.rmtree(found.pop())
    return found[-1] if found else None


def train_conductor(
    base_model: str,
    pool: PoolConfig,
    tasks: Sequence[Task],
    grader: Grader,
    out_dir: Path,
    settings: GRPOSettings,
    *,
    resume: bool = False,
    on_log: Callable[[dict[str, float]], None] | None = None,
    jobs: Executor = LocalExecutor(),
) -> dict[str, Any]:
    """Train with GRPO; writes OUT/model (the conductor), OUT/rewards.jsonl (one line per logged
    step) and OUT/conductor.json. Returns the summary written to conductor.json. `jobs`: where
    the rollouts' workflows run."""
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]
    except ImportError as error:
        raise ConfigError(
            f"GRPO training needs pip install 'consortium[coord]' ({error.name} missing)"
        ) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    base_model = resolve_base(base_model, out_dir, settings.seed)
    quiet_transformers()
    quiet_datasets()
    tokenizer = load_tokenizer(base_model)
    chat = bool(getattr(tokenizer, "chat_template", None))
    rows = training_rows(
        tasks,
        pool,
        min_workers=settings.min_workers,
        max_steps=settings.max_steps,
        seed=settings.seed,
        chat=chat,
        tokenizer=tokenizer,
        examples=settings.examples,
    )
    reward = WorkflowReward(
        pool,
        tasks,
        grader,
        max_steps=settings.max_steps,
        jobs=jobs,
        cost_weight=settings.cost_weight,
    )
    log_path = out_dir / "rewards.jsonl"
    checkpoint = last_complete_checkpoint(out_dir / "checkpoints") if resume else None
    # The prompts of the whole run in a fixed order; a resumed run drops those already trained
    # on, so it sees what an uninterrupted run would (the trainer restores its RNG states).
    schedule = prompt_schedule(rows, settings.steps * settings.questions_per_step, settings.seed)
    done = int(checkpoint.name.rsplit("-", 1)[1]) * settings.questions_per_step if checkpoint else 0
    _trim_log(log_path, checkpoint, resume)

    def shares() -> dict[str, float]:
        """The latest batch's shares of parsed and right workflows, beside TRL's reward."""
        last = reward.history[-1] if reward.history else {}
        return {k: v for k, v in last.items() if k != "mean"}

    args = GRPOConfig(**_trainer_args(settings, out_dir))
    trainer = GRPOTrainer(
        model=base_model,
        processing_class=tokenizer,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(schedule[done:]),
        callbacks=[step_logger(log_path, "reward", on_log, shares)],
    )
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    finally:
        reward.close()
    trainer.save_model(str(out_dir / "model"))
    tokenizer.save_pretrained(out_dir / "model")
    logged = [json.loads(line) for line in log_path.read_text().splitlines() if line]
    summary = {
        "kind": "conductor",
        "base_model": base_model,
        "workers": pool.names,
        "settings": asdict(settings),
        "steps_logged": len(logged),
        "reward_first": logged[0]["reward"] if logged else None,
        "reward_last": logged[-1]["reward"] if logged else None,
    }
    (out_dir / "conductor.json").write_text(json.dumps(summary, indent=2))
    return summary


def _trim_log(log_path: Path, checkpoint: Path | None, resume: bool) -> None:
    """A fresh run starts an empty log; a resumed one drops the rows of the steps logged after
    its last checkpoint (they are trained again)."""
    if not resume:
        log_path.write_text("")
    elif log_path.exists():
        last = int(checkpoint.name.rsplit("-", 1)[1]) if checkpoint else 0
        rows = [json.loads(line) for line in log_path.read_text().splitlines() if line]
        log_path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["step"] <= last))


def _trainer_args(settings: GRPOSettings, out_dir: Path) -> dict[str, Any]:
    """TRL's `GRPOConfig` for the settings: a step is `questions_per_step` prompts of
    `group_size` completions each, checkpointed every `save_steps` into OUT/checkpoints."""
    return {
        "output_dir": str(out_dir / "checkpoints"),
        "max_steps": settings.steps,
        "per_device_train_batch_size": settings.group_size,
        "gradient_accumulation_steps": settings.questions_per_step,
        "num_generations": settings.group_size,
        "max_completion_length": settings.max_completion_length,
        "temperature": settings.temperature,
        "min_p": settings.min_p or None,
        "learning_rate": settings.learning_rate,
        "lr_scheduler_type": "cosine",
        "warmup_steps": 0.03,  # a ratio of the total steps
        "beta": 0.0,
        "save_strategy": "steps",
        "save_steps": settings.save_steps,
        "seed": settings.seed,
        **device_args(),
        "shuffle_dataset": False,  # the prompt schedule is already shuffled, epoch by epoch
        "ignore_data_skip": True,  # skipping is done by dropping trained prompts from the schedule
    }
