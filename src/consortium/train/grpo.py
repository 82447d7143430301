"""GRPO training of a Conductor with TRL's `GRPOTrainer` (needs the `coord` extra and `trl`).

Each training prompt is a question with a random subset of the pool's workers (the adaptive pool
of the paper), shown as "Model 0..k-1". The reward of a completion is the paper's gate: 0 when
its three lists do not parse and validate against that subset, else the workflow runs on the real
workers and scores 1 when the grader accepts the answer, 0.5 when it does not.

The same command trains a tiny model built from a config on a CPU in seconds (`base_model="tiny"`)
and a real base model (the paper: Qwen2.5-7B, 200 steps x 4 questions x 64 rollouts, lr 1e-6,
KL 0) on a GPU machine.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from consortium.config import PoolConfig
from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.prompt import conductor_messages
from consortium.coord.conductor.workflow import WorkflowError, parse_workflow
from consortium.errors import AgentError, BudgetExceeded, ConfigError
from consortium.pool import Pool
from consortium.pool.local import prompt_text
from consortium.quiet import quiet_datasets, quiet_transformers
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor, Work, shards, split_like
from consortium.runtime.jobs import RemoteJob
from consortium.tasks.base import Grader, Task
from consortium.train.base_models import load_tokenizer, resolve_base
from consortium.train.trainer_setup import device_args, step_logger

T = TypeVar("T")

FORMAT_FAIL = 0.0
WRONG = 0.5
RIGHT = 1.0


@dataclass
class GRPOSettings:
    steps: int = 200
    questions_per_step: int = 4
    group_size: int = 64
    learning_rate: float = 1e-6
    max_completion_length: int = 1024
    temperature: float = 1.0
    min_workers: int = 2
    """Smallest random worker subset per prompt; the largest is the whole pool."""
    max_steps: int = 5
    """Workflow steps allowed (the paper: 5)."""
    save_steps: int = 50
    seed: int = 0


class BackgroundLoop:
    """An event loop in a thread, for the async pool inside TRL's synchronous reward calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


def completion_text(completion: Any) -> str:
    """TRL hands plain strings for text prompts, message lists for conversational ones."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return ""


async def score_workflow(
    text: str,
    task: Task,
    workers: list[str],
    grader: Grader,
    caller: Caller,
    *,
    max_steps: int,
    task_limits: Limits,
    executor: WorkflowExecutor,
) -> float:
    """One completion's reward: FORMAT_FAIL if it is no workflow, else RIGHT or WRONG as the
    grader says of the workflow's answer."""
    try:
        workflow = parse_workflow(text, workers, max_steps=max_steps)
    except WorkflowError:
        return FORMAT_FAIL
    task_caller = caller.for_task(task.id, "grpo", task_limits)
    try:
        run = await executor.run(workflow, task.question, task_caller)
    except (AgentError, BudgetExceeded):
        return WRONG  # it parsed and ran; a worker failure is not a format failure
    grade = await asyncio.to_thread(grader.grade, task, run.answer)
    return RIGHT if grade.correct else WRONG


Rollout = tuple[str, str, list[str]]
"""A completion's text, its task id and its workers."""


async def score_rollouts(
    rollouts: Sequence[Rollout],
    tasks: dict[str, Task],
    grader: Grader,
    caller: Caller,
    *,
    max_steps: int,
    task_limits: Limits,
    executor: WorkflowExecutor,
) -> list[float]:
    """Every rollout's reward, all concurrently."""
    return list(
        await asyncio.gather(
            *(
                score_workflow(
                    text,
                    tasks[task_id],
                    workers,
                    grader,
                    caller,
                    max_steps=max_steps,
                    task_limits=task_limits,
                    executor=executor,
                )
                for text, task_id, workers in rollouts
            )
        )
    )


class WorkflowReward:
    """The reward function TRL calls: format gate x correctness, by running each workflow."""

    __name__ = "workflow_reward"

    def __init__(
        self,
        pool: PoolConfig,
        tasks: Sequence[Task],
        grader: Grader,
        *,
        max_steps: int = 5,
        task_limits: Limits | None = None,
        executor: WorkflowExecutor | None = None,
        jobs: Executor = LocalExecutor(),
        shards_per_call: int = 4,
    ) -> None:
        self.jobs = jobs
        self.shards_per_call = shards_per_call
        self.pool_config = pool
        self.tasks = {task.id: task for task in tasks}
        self.grader = grader
        self.max_steps = max_steps
        self.task_limits = task_limits or Limits(max_calls=max_steps)
        self.executor = executor or WorkflowExecutor()
        self.history: list[dict[str, float]] = []
        self._loop = BackgroundLoop()
        self._pool = self._loop.run(self._open())
        self._caller = Caller(self._pool, None, "grpo")

    async def _open(self) -> Pool:
        return Pool(self.pool_config)

    def work(self) -> Work[list[Rollout], list[float]]:
        """Rewards of shards of rollouts: in this process all concurrently through its pool;
        remotely one job per shard."""

        async def in_process(parts: Sequence[list[Rollout]]) -> list[list[float]]:
            rewards = await score_rollouts(
                [rollout for part in parts for rollout in part],
                self.tasks,
                self.grader,
                self._caller,
                max_steps=self.max_steps,
                task_limits=self.task_limits,
                executor=self.executor,
            )
            return split_like(rewards, parts)

        body = ScoreRollouts(self.tasks, self.grader, self.max_steps, self.task_limits)
        return Work(in_process, lambda: RemoteJob.like(self._caller, body))

    def __call__(
        self,
        prompts: list[Any],
        completions: list[Any],
        task_id: list[str],
        workers: list[str],
        **_: Any,
    ) -> list[float]:
        texts = [completion_text(c) for c in completions]
        rosters = [json.loads(w) for w in workers]
        parts = shards(list(zip(texts, task_id, rosters, strict=True)), self.shards_per_call)
        done = self._loop.run(self.jobs.run(self.work(), parts))
        rewards = [reward for part in done for reward in part]
        n = len(rewards)
        self.history.append(
            {
                "mean": sum(rewards) / n,
                "parsed": sum(r > FORMAT_FAIL for r in rewards) / n,
                "right": sum(r == RIGHT for r in rewards) / n,
            }
        )
        return rewards

    def close(self) -> None:
        self._loop.run(self._pool.aclose())
        self._loop.close()


@dataclass(frozen=True)
class ScoreRollouts:
    """A remote job's body: rewards of a shard of rollouts, as `WorkflowReward.score` gives
    them in process."""

    tasks: dict[str, Task]
    grader: Grader
    max_steps: int
    task_limits: Limits

    async def __call__(self, rollouts: list[Rollout], caller: Caller) -> list[float]:
        return await score_rollouts(
            rollouts,
            self.tasks,
            self.grader,
            caller,
            max_steps=self.max_steps,
            task_limits=self.task_limits,
            executor=WorkflowExecutor(),
        )


def training_rows(
    tasks: Sequence[Task],
    pool: PoolConfig,
    *,
    min_workers: int,
    max_steps: int,
    seed: int,
    chat: bool,
    tokenizer: Any = None,
) -> list[dict[str, Any]]:
    """One prompt per task, each with its own random subset of the pool's workers."""
    rng = random.Random(seed)
    names = pool.names
    strengths = {m.name: m.strengths for m in pool.models}
    low = max(1, min(min_workers, len(names)))
    rows = []
    for task in tasks:
        workers = rng.sample(names, rng.randint(low, len(names)))
        messages = conductor_messages(task.question, workers, strengths, max_steps=max_steps)
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
    )
    reward = WorkflowReward(pool, tasks, grader, max_steps=settings.max_steps, jobs=jobs)
    log_path = out_dir / "rewards.jsonl"
    checkpoint = last_complete_checkpoint(out_dir / "checkpoints") if resume else None
    # The prompts of the whole run in a fixed order; a resumed run drops those already trained
    # on, so it sees what an uninterrupted run would (the trainer restores its RNG states).
    schedule = prompt_schedule(rows, settings.steps * settings.questions_per_step, settings.seed)
    done = int(checkpoint.name.rsplit("-", 1)[1]) * settings.questions_per_step if checkpoint else 0
    if not resume:
        log_path.write_text("")
    elif log_path.exists():
        # Steps logged after the last checkpoint are trained again; their rows go.
        last = int(checkpoint.name.rsplit("-", 1)[1]) if checkpoint else 0
        rows = [json.loads(line) for line in log_path.read_text().splitlines() if line]
        log_path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["step"] <= last))

    def shares() -> dict[str, float]:
        """The latest batch's shares of parsed and right workflows, beside TRL's reward."""
        last = reward.history[-1] if reward.history else {}
        return {k: v for k, v in last.items() if k != "mean"}

    args = GRPOConfig(
        output_dir=str(out_dir / "checkpoints"),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.group_size,
        gradient_accumulation_steps=settings.questions_per_step,
        num_generations=settings.group_size,
        max_completion_length=settings.max_completion_length,
        temperature=settings.temperature,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=0.03,  # a ratio of the total steps
        beta=0.0,
        save_strategy="steps",
        save_steps=settings.save_steps,
        seed=settings.seed,
        **device_args(),
        shuffle_dataset=False,  # the schedule above is already shuffled, epoch by epoch
        ignore_data_skip=True,  # skipping is done by dropping trained prompts from the schedule
    )
    trainer = GRPOTrainer(
        model=base_model,
        processing_class=tokenizer,
        reward_funcs=[reward],  # type: ignore[list-item]
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
