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
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / "stages.json"
    summary: dict[str, Any] = (
        json.loads(summary_path.read_text()) if resume and summary_path.exists() else {}
    )
    model = resolve_base(base_model, out_dir, settings.grpo.seed)
    summary.update({"base_model": model, "settings": asdict(settings)})
    summary.setdefault("validity", {})
    summary.setdefault("seconds", {})
    run = _StagedRun(
        pool, tasks, grader, out_dir, settings, resume, callbacks or StageCallbacks(), jobs,
        summary, load_tokenizer(model),
    )  # fmt: skip
    run.held_rows = run.rows_of(list(held_out)[: settings.held_out], settings.grpo.seed + 1)
    if settings.held_out and len(run.held_rows) < settings.held_out:
        raise ConfigError(
            f"{settings.held_out} held-out questions asked; the held-out tasks have "
            f"{len(run.held_rows)}"
        )
    run.measure("base", model)
    if settings.warm_start.steps > 0:
        model = run.warm_start(model)
    if settings.grpo.steps > 0 and settings.method == "rft":
        run.rft(model)
    elif settings.grpo.steps > 0:
        run.grpo(model)
    summary_path.write_text(json.dumps(summary, indent=2))
    return summary


@dataclass
class _StagedRun:
    """One staged run's inputs and its summary, which each stage and measurement updates."""

    pool: PoolConfig
    tasks: Sequence[Task]
    grader: Grader
    out_dir: Path
    settings: StagedSettings
    resume: bool
    hooks: StageCallbacks
    jobs: Executor
    summary: dict[str, Any]
    tokenizer: Any
    held_rows: list[dict[str, Any]] = field(default_factory=list)

    def rows_of(self, questions: Sequence[Task], seed: int) -> list[dict[str, Any]]:
        grpo = self.settings.grpo
        return training_rows(
            questions,
            self.pool,
            min_workers=grpo.min_workers,
            max_steps=grpo.max_steps,
            seed=seed,
            chat=bool(getattr(self.tokenizer, "chat_template", None)),
            tokenizer=self.tokenizer,
            examples=grpo.examples,
        )

    def _stage(self, name: str, units: int) -> float:
        if self.hooks.on_stage:
            self.hooks.on_stage(name, units)
        return time.perf_counter()

    def measure(self, stage: str, model_dir: str) -> None:
        """The valid-workflow rate of `model_dir` on the held-out rows, once per stage."""
        if not self.held_rows or stage in self.summary["validity"]:
            return
        self._stage(f"valid workflows ({stage})", len(self.held_rows))
        validity = workflow_validity(
            model_dir,
            self.held_rows,
            max_steps=self.settings.grpo.max_steps,
            max_new_tokens=self.settings.grpo.max_completion_length,
            on_batch=self.hooks.on_advance,
        )
        self.summary["validity"][stage] = _validity_row(validity)
        (self.out_dir / "stages.json").write_text(json.dumps(self.summary, indent=2))

    def warm_start(self, model: str) -> str:
        """SFT into OUT/warm-start (kept on resume); the warm-started model."""
        sft_dir = self.out_dir / "warm-start"
        if not (self.resume and (sft_dir / "config.json").is_file()):
            started = self._stage("warm start (SFT)", self.settings.warm_start.steps)
            rows = self.rows_of(self.tasks, self.settings.grpo.seed)
            warm_start(model, rows, sft_dir, self.settings.warm_start, on_log=_sft(self.hooks))
            self.summary["seconds"]["warm start"] = round(time.perf_counter() - started, 1)
        self.summary["warm_start_model"] = str(sft_dir)
        self.measure("warm start", str(sft_dir))
        return str(sft_dir)

    def rft(self, model: str) -> None:
        grpo = self.settings.grpo
        started = self._stage("RFT", grpo.steps)
        reward = WorkflowReward(
            self.pool, self.tasks, self.grader, max_steps=grpo.max_steps, jobs=self.jobs,
            cost_weight=grpo.cost_weight,
        )  # fmt: skip
        try:
            rejection_sft(
                model,
                self.rows_of(self.tasks, grpo.seed),
                reward,
                self.out_dir,
                RejectionSettings.on_budget_of(grpo, self.settings.rft_learning_rate),
                resume=self.resume,
                on_log=self.hooks.on_grpo_log,
            )
        finally:
            reward.close()
        self.summary["seconds"]["rft"] = round(time.perf_counter() - started, 1)
        self.measure("rft", str(self.out_dir / "model"))

    def grpo(self, model: str) -> None:
        started = self._stage("GRPO", self.settings.grpo.steps)
        self.summary["grpo"] = train_conductor(
            model,
            self.pool,
            self.tasks,
            self.grader,
            self.out_dir,
            self.settings.grpo,
            resume=self.resume,
            on_log=self.hooks.on_grpo_log,
            jobs=self.jobs,
        )
        self.summary["seconds"]["grpo"] = round(time.perf_counter() - started, 1)
        self.measure("grpo", str(self.out_dir / "model"))


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
