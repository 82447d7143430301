"""Training a conductor in stages: an optional supervised warm start, then GRPO, with the
valid-workflow rate on held-out questions measured before and after each stage.

OUT/stages.json records each measurement as it lands; a resumed run (`resume=True`) keeps the
measurements and the warm-started model it finds there and continues GRPO from its last
checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consortium.core.errors import ConfigError
from consortium.pool.config import PoolConfig
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.tasks.base import Grader, Task
from consortium.train.conductor.base_models import load_tokenizer, resolve_base
from consortium.train.conductor.grpo import GRPOSettings, train_conductor, training_rows
from consortium.train.conductor.rejection_sft import RejectionSettings, rejection_sft
from consortium.train.conductor.workflow_reward import WorkflowReward
from consortium.train.conductor.workflow_sft import WarmStartSettings, warm_start
from consortium.train.conductor.workflow_validity import Validity, workflow_validity


@dataclass
class StageCallbacks:
    """Progress hooks for a front end; the library prints nothing."""

    on_stage: Callable[[str, int], None] | None = None
    """A stage starts: its name and how many units (questions or steps) it has."""
    on_advance: Callable[[int], None] | None = None
    on_grpo_log: Callable[[dict[str, float]], None] | None = None
    on_sft_log: Callable[[dict[str, float]], None] | None = None


@dataclass
class StagedSettings:
    grpo: GRPOSettings = field(default_factory=GRPOSettings)
    """The RL stage's budget, reward and prompts, for either method."""
    warm_start: WarmStartSettings = field(default_factory=WarmStartSettings)
    method: str = "grpo"
    """`grpo`, or `rft`: rejection-sampling fine-tuning on the same budget (`grpo.steps`
    rounds x `questions_per_step` questions x `group_size` samples; `rejection_sft`)."""
    rft_learning_rate: float = 5e-5
    held_out: int = 50
    """Held-out questions for the valid-workflow rate; 0 measures nothing."""


def train_conductor_in_stages(
    base_model: str,
    pool: PoolConfig,
    tasks: Sequence[Task],
    grader: Grader,
    out_dir: Path,
    settings: StagedSettings,
    *,
    held_out: Sequence[Task] = (),
    resume: bool = False,
    callbacks: StageCallbacks | None = None,
    jobs: Executor = LocalExecutor(),
) -> dict[str, Any]:
    """Warm start (when `settings.warm_start.steps` > 0), then GRPO (when `settings.grpo.steps`
    > 0). Returns the summary written to OUT/stages.json: the base, the model each stage wrote,
    and the valid-workflow rate on `held_out` (its first `settings.held_out` tasks) of the base
    and after each stage."""
    hooks = callbacks or StageCallbacks()
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / "stages.json"
    summary: dict[str, Any] = (
        json.loads(summary_path.read_text()) if resume and summary_path.exists() else {}
    )
    model = resolve_base(base_model, out_dir, settings.grpo.seed)
    summary.update({"base_model": model, "settings": asdict(settings)})
    summary.setdefault("validity", {})
    summary.setdefault("seconds", {})
    tokenizer = load_tokenizer(model)
    chat = bool(getattr(tokenizer, "chat_template", None))
    grpo = settings.grpo

    def rows_of(questions: Sequence[Task], seed: int) -> list[dict[str, Any]]:
        return training_rows(
            questions,
            pool,
            min_workers=grpo.min_workers,
            max_steps=grpo.max_steps,
            seed=seed,
            chat=chat,
            tokenizer=tokenizer,
            examples=grpo.examples,
        )

    held_rows = rows_of(list(held_out)[: settings.held_out], grpo.seed + 1)
    if settings.held_out and len(held_rows) < settings.held_out:
        raise ConfigError(
            f"{settings.held_out} held-out questions asked; the held-out tasks have "
            f"{len(held_rows)}"
        )

    def measure(stage: str, model_dir: str) -> None:
        if not held_rows or stage in summary["validity"]:
            return
        if hooks.on_stage:
            hooks.on_stage(f"valid workflows ({stage})", len(held_rows))
        validity = workflow_validity(
            model_dir,
            held_rows,
            max_steps=grpo.max_steps,
            max_new_tokens=grpo.max_completion_length,
            on_batch=hooks.on_advance,
        )
        summary["validity"][stage] = _validity_row(validity)
        summary_path.write_text(json.dumps(summary, indent=2))

    measure("base", model)
    if settings.warm_start.steps > 0:
        sft_dir = out_dir / "warm-start"
        if not (resume and (sft_dir / "config.json").is_file()):
            if hooks.on_stage:
                hooks.on_stage("warm start (SFT)", settings.warm_start.steps)
            started = time.perf_counter()
            warm_start(
                model, rows_of(tasks, grpo.seed), sft_dir, settings.warm_start, on_log=_sft(hooks)
            )
            summary["seconds"]["warm start"] = round(time.perf_counter() - started, 1)
        model = str(sft_dir)
        summary["warm_start_model"] = model
        measure("warm start", model)
    if grpo.steps > 0 and settings.method == "rft":
        if hooks.on_stage:
            hooks.on_stage("RFT", grpo.steps)
        started = time.perf_counter()
        reward = WorkflowReward(
            pool, tasks, grader, max_steps=grpo.max_steps, jobs=jobs, cost_weight=grpo.cost_weight
        )
        try:
            rejection_sft(
                model,
                rows_of(tasks, grpo.seed),
                reward,
                out_dir,
                RejectionSettings(
                    rounds=grpo.steps,
                    questions_per_round=grpo.questions_per_step,
                    samples=grpo.group_size,
                    learning_rate=settings.rft_learning_rate,
                    temperature=grpo.temperature,
                    max_completion_length=grpo.max_completion_length,
                    seed=grpo.seed,
                ),
                resume=resume,
                on_log=hooks.on_grpo_log,
            )
        finally:
            reward.close()
        summary["seconds"]["rft"] = round(time.perf_counter() - started, 1)
        measure("rft", str(out_dir / "model"))
    elif grpo.steps > 0:
        if hooks.on_stage:
            hooks.on_stage("GRPO", grpo.steps)
        started = time.perf_counter()
        summary["grpo"] = train_conductor(
            model,
            pool,
            tasks,
            grader,
            out_dir,
            grpo,
            resume=resume,
            on_log=hooks.on_grpo_log,
            jobs=jobs,
        )
        summary["seconds"]["grpo"] = round(time.perf_counter() - started, 1)
        measure("grpo", str(out_dir / "model"))
    summary_path.write_text(json.dumps(summary, indent=2))
    return summary


def _sft(hooks: StageCallbacks) -> Callable[[dict[str, float]], None]:
    def log(row: dict[str, float]) -> None:
        if hooks.on_sft_log:
            hooks.on_sft_log(row)
        if hooks.on_advance:
            hooks.on_advance(1)

    return log


def _validity_row(validity: Validity) -> dict[str, Any]:
    return {
        "n": validity.n,
        "valid": validity.valid,
        "rate": round(validity.rate, 4),
        "errors": validity.errors,
        "samples": validity.samples,
        "shapes": {task: asdict(shape) for task, shape in validity.shapes.items()},
        "seconds": round(validity.seconds, 1),
    }
