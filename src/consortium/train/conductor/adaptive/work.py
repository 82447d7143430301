"""The adaptive pipeline's work folder and its training stages, each kept in the folder and skipped
when already there (a rerun resumes): the warm start (SFT on example workflows), the shapes sampled
after it, and the trained conductors (GRPO, RFT or distillation of the picks) at each λ."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from consortium.pool.config import PoolConfig
from consortium.train.conductor.adaptive.families import distil_examples, reward_of, train_picks
from consortium.train.conductor.adaptive.request import FOLDERS, AdaptiveRequest, say
from consortium.train.conductor.base_models import load_tokenizer, resolve_base
from consortium.train.conductor.grpo import GRPOSettings, train_conductor, training_rows
from consortium.train.conductor.measure import parsed_shape
from consortium.train.conductor.mixed_pool import MixedTasks, mixed_tasks
from consortium.train.conductor.rejection_sft import RejectionSettings, rejection_sft
from consortium.train.conductor.workflow_sampling import Sampler
from consortium.train.conductor.workflow_sft import WarmStartSettings, fine_tune, warm_start


class Work:
    """The work folder: what each stage wrote, and the rows every stage shares."""

    def __init__(self, request: AdaptiveRequest) -> None:
        self.request = request
        self.root = Path(request.work)
        self.train = mixed_tasks(FOLDERS, "train", per_set=request.train_per_set, seed=request.seed)
        self.test = mixed_tasks(
            FOLDERS,
            "test",
            per_set=request.test_per_set,
            seed=request.seed + 1,
            infos=self.train.sets,
        )
        self.root.mkdir(parents=True, exist_ok=True)  # once the records are there
        self.base = resolve_base(request.base_model, self.root, request.seed)
        self.tokenizer = load_tokenizer(self.base)

    def rows(
        self, tasks: MixedTasks, pool: PoolConfig, seed: int, *, every_worker: bool = False
    ) -> list[dict[str, Any]]:
        """Prompt rows: a random subset of each task's roster, or (`every_worker`) all of it."""
        return training_rows(
            tasks.tasks,
            pool,
            min_workers=99 if every_worker else 2,
            max_steps=5,
            seed=seed,
            chat=False,
            tokenizer=self.tokenizer,
            examples=False,
        )

    @property
    def warm_dir(self) -> Path:
        return self.root / "warm-start"


def _keep_seconds(folder: Path, started: float) -> None:
    (folder / "seconds.json").write_text(
        json.dumps({"seconds": round(time.perf_counter() - started, 1)})
    )


def stage_warm(work: Work, pool: PoolConfig) -> None:
    if (work.warm_dir / "config.json").is_file():
        return
    request = work.request
    settings = WarmStartSettings(
        steps=request.sft_steps,
        batch_size=request.sft_batch,
        learning_rate=request.sft_lr,
        seed=request.seed,
    )
    say(f"warm start: {settings.steps} steps x {settings.batch_size} examples")
    started = time.perf_counter()
    warm_start(
        work.base,
        work.rows(work.train, pool, request.seed),
        work.warm_dir,
        settings,
        on_log=lambda row: say(f"SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
    )
    _keep_seconds(work.warm_dir, started)


def stage_shapes(work: Work, pool: PoolConfig) -> None:
    """Workflows sampled at temperature 1 after the warm start, on training questions: their
    shapes as parsed (no worker is called)."""
    path = work.root / "shapes-warm.json"
    if path.exists():
        return
    request = work.request
    per_set = mixed_tasks(FOLDERS, "train", per_set=request.shape_questions, seed=request.seed + 7)
    rows = work.rows(per_set, pool, request.seed + 7)
    samples = request.shape_samples
    say(f"shapes after the warm start: {len(rows)} questions x {samples} samples")
    started = time.perf_counter()
    texts = Sampler.load(work.warm_dir).complete(
        rows,
        samples=samples,
        temperature=1.0,
        max_new_tokens=request.max_completion,
        on_row=lambda index: say(f"sampled row {index + 1}"),
    )
    shapes = [
        parsed_shape(text, json.loads(row["workers"]))
        for row, found in zip(rows, texts, strict=True)
        for text in found
    ]
    path.write_text(
        json.dumps(
            {
                "questions": len(rows),
                "samples": samples,
                "datasets": [r["task_id"].split("/")[0] for r in rows for _ in range(samples)],
                "scores": [{"valid": s is not None, "shape": s} for s in shapes],
                "texts": [t for found in texts for t in found],
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


def stage_train(work: Work, pool: PoolConfig) -> None:
    """Each method at each λ, into WORK/<method>-l<λ> (a finished run is skipped)."""
    request = work.request
    for cost_weight in request.cost_weights:
        for method in request.method_names:
            out = work.root / f"{method}-l{cost_weight:g}"
            if (out / "model" / "config.json").is_file():
                continue
            spent = (
                f"{request.distil_steps} SFT steps"
                if method == "distil"
                else f"{request.rollouts} rollouts"
            )
            say(f"{method} at λ={cost_weight:g}: {spent}")
            started = time.perf_counter()
            if method == "distil":
                distil(work, pool, cost_weight, out)
            elif method == "grpo":
                _grpo(work, pool, cost_weight, out)
            else:
                _rft(work, pool, cost_weight, out)
            _keep_seconds(out, started)


def _rl_settings(request: AdaptiveRequest, cost_weight: float) -> GRPOSettings:
    """GRPO's budget and sampling at `cost_weight`; RFT spends the same budget
    (`RejectionSettings.on_budget_of`)."""
    groups = request.rollouts // request.group_size
    return GRPOSettings(
        steps=groups // request.questions_per_step,
        questions_per_step=request.questions_per_step,
        group_size=request.group_size,
        learning_rate=request.grpo_lr,
        save_steps=1,
        cost_weight=cost_weight,
        examples=False,
        max_completion_length=request.max_completion,
        seed=request.seed,
        temperature=request.temperature,
        min_p=request.min_p,
    )


def _grpo(work: Work, pool: PoolConfig, cost_weight: float, out: Path) -> None:
    train_conductor(
        str(work.warm_dir),
        pool,
        work.train.tasks,
        work.train.grader,
        out,
        _rl_settings(work.request, cost_weight),
        resume=True,
        on_log=lambda row: say(f"GRPO {json.dumps(row)}"),
    )


def _rft(work: Work, pool: PoolConfig, cost_weight: float, out: Path) -> None:
    request = work.request
    settings = RejectionSettings.on_budget_of(
        _rl_settings(request, cost_weight),
        request.rft_lr,
        contrastive=request.rft_kept == "contrastive",
    )
    reward = reward_of(pool, work.train, cost_weight)
    try:
        rejection_sft(
            str(work.warm_dir),
            work.rows(work.train, pool, request.seed),
            reward,
            out,
            settings,
            resume=True,
            on_log=lambda row: say(f"RFT {json.dumps(row)}"),
        )
    finally:
        reward.close()


def distil(work: Work, pool: PoolConfig, cost_weight: float, out: Path) -> None:
    """SFT of the warm start into OUT/model on the workflow picked on train for each prompt's
    set at `cost_weight` (`families.train_picks`), every worker of the set shown as in the test
    prompts. It learns from a search over fixed workflows, not from its own samples: which set a
    question comes from and where the pick's models stand in a shuffled roster."""
    request = work.request
    picks = train_picks(work.root, work.train, pool, cost_weight)
    say(f"distil at λ={cost_weight:g}: the picks {json.dumps(picks)}")
    rows = work.rows(work.train, pool, request.seed, every_worker=True)
    settings = WarmStartSettings(
        steps=request.distil_steps,
        batch_size=request.sft_batch,
        learning_rate=request.sft_lr,
        seed=request.seed,
    )
    examples = distil_examples(
        rows,
        work.train,
        picks,
        settings.steps * settings.batch_size,
        request.seed,
        by_name=request.distil_ids == "names",
    )
    fine_tune(
        str(work.warm_dir),
        examples,
        out / "model",
        settings,
        on_log=lambda row: say(f"distil SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
    )
