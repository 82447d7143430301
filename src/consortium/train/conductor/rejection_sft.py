"""Rejection-sampling fine-tuning (RFT) of a conductor, beside GRPO on the same rollout budget.

Each round samples `samples` workflows for each of `questions_per_round` training prompts at
temperature 1, scores them with the GRPO reward (`workflow_reward`: the format gate, the answer,
λ x cost), keeps per prompt the best-rewarded workflow among the valid ones that answered right
(`contrastive`: only where another sample of the prompt was not right), and fine-tunes the
current model on what it kept (TRL's SFTTrainer). A round costs `questions_per_round x samples`
rollouts, as a GRPO step of as many questions and as large a group.

OUT/round-N holds the model after round N (the last `keep_rounds` rounds' only); OUT/rounds.jsonl
one line per round (rollouts so far, mean reward, shares valid and right, mean $ and calls, how
many kept); OUT/kept.jsonl the kept workflows. `resume=True` continues after the last round
whose model and log line are both there.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from consortium.train.conductor.grpo import GRPOSettings, prompt_schedule
from consortium.train.conductor.workflow_reward import Scored, WorkflowReward
from consortium.train.conductor.workflow_sampling import Sampler
from consortium.train.conductor.workflow_sft import WarmStartSettings, fine_tune


@dataclass
class RejectionSettings:
    rounds: int = 4
    questions_per_round: int = 2
    samples: int = 4
    """Workflows sampled per question (GRPO's group size)."""
    epochs: int = 2
    """Passes over a round's kept workflows."""
    learning_rate: float = 5e-5
    temperature: float = 1.0
    min_p: float = 0.0
    """Sample only tokens at least this share of the likeliest one's probability (0: all)."""
    max_completion_length: int = 160
    seed: int = 0
    keep_rounds: int = 2
    """Round models kept on disk, the last ones (each is a whole model: 0.5 GB for SmolLM2)."""
    contrastive: bool = False
    """Keep a prompt's best right workflow only when another sample of the same prompt was not
    right: a round then teaches what separated right from wrong, never again what every sample
    already does (the habit a collapsed conductor would otherwise keep reinforcing)."""

    @property
    def rollouts(self) -> int:
        return self.rounds * self.questions_per_round * self.samples

    @classmethod
    def on_budget_of(
        cls, grpo: GRPOSettings, learning_rate: float, *, contrastive: bool = False
    ) -> RejectionSettings:
        """RFT on GRPO's rollout budget, sampled alike: a round per GRPO step, its questions per
        step, its group size as samples per question, its temperature, min-p, completion
        length and seed."""
        return cls(
            rounds=grpo.steps,
            questions_per_round=grpo.questions_per_step,
            samples=grpo.group_size,
            learning_rate=learning_rate,
            temperature=grpo.temperature,
            min_p=grpo.min_p,
            max_completion_length=grpo.max_completion_length,
            seed=grpo.seed,
            contrastive=contrastive,
        )


def best_kept(
    rows: Sequence[dict[str, Any]],
    texts: Sequence[Sequence[str]],
    scores: Sequence[Scored],
    *,
    contrastive: bool = False,
) -> list[dict[str, Any]]:
    """Per prompt row, its best-rewarded valid workflow that answered right (ties: the
    earliest sampled), as a prompt/completion pair; rows with none keep nothing, and with
    `contrastive` neither do rows whose samples were all right."""
    kept = []
    flat = iter(scores)
    for row, completions in zip(rows, texts, strict=True):
        scored = [(next(flat), text) for text in completions]
        right = [(s.reward, -index, text) for index, (s, text) in enumerate(scored) if s.right]
        if contrastive and len(right) == len(scored):
            continue
        if right:
            reward, _, text = max(right)
            kept.append(
                {"prompt": row["prompt"], "completion": text, "reward": reward, **_ids(row)}
            )
    return kept


def _ids(row: dict[str, Any]) -> dict[str, Any]:
    return {"task_id": row["task_id"], "workers": row["workers"]}


def last_round(out_dir: Path) -> int:
    """The last round whose model and log line are both written (0: none)."""
    log = out_dir / "rounds.jsonl"
    if not log.exists():
        return 0
    done = [json.loads(line)["round"] for line in log.read_text().splitlines() if line]
    while done and not (out_dir / f"round-{done[-1]}" / "config.json").is_file():
        done.pop()
    return done[-1] if done else 0


def rejection_sft(
    base_model: str,
    rows: Sequence[dict[str, Any]],
    reward: WorkflowReward,
    out_dir: Path,
    settings: RejectionSettings,
    *,
    resume: bool = False,
    on_log: Callable[[dict[str, float]], None] | None = None,
) -> Path:
    """Run the rounds from `base_model` (a model folder); returns OUT/model, the last round's
    model (the base's own files when no round kept anything)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "rounds.jsonl"
    start = last_round(out_dir) if resume else 0
    if start == 0:
        log_path.write_text("")
        (out_dir / "kept.jsonl").write_text("")
    else:  # lines of a round whose model was never saved go
        lines = [json.loads(line) for line in log_path.read_text().splitlines() if line]
        log_path.write_text("".join(json.dumps(r) + "\n" for r in lines if r["round"] <= start))
    (out_dir / "settings.json").write_text(json.dumps(asdict(settings), indent=2))
    schedule = prompt_schedule(rows, settings.rounds * settings.questions_per_round, settings.seed)
    model = str(out_dir / f"round-{start}") if start else base_model
    for index in range(start, settings.rounds):
        started = time.perf_counter()
        batch = schedule[
            index * settings.questions_per_round : (index + 1) * settings.questions_per_round
        ]
        texts = Sampler.load(model).complete(
            batch,
            samples=settings.samples,
            temperature=settings.temperature,
            min_p=settings.min_p,
            max_new_tokens=settings.max_completion_length,
            seed=settings.seed + index,
        )
        rollouts = [
            (text, row["task_id"], json.loads(row["workers"]))
            for row, completions in zip(batch, texts, strict=True)
            for text in completions
        ]
        scores = reward.score(rollouts)
        kept = best_kept(batch, texts, scores, contrastive=settings.contrastive)
        with (out_dir / "kept.jsonl").open("a") as handle:
            for example in kept:
                handle.write(json.dumps({"round": index + 1} | example) + "\n")
        round_dir = out_dir / f"round-{index + 1}"
        if kept:
            examples = [{"prompt": k["prompt"], "completion": k["completion"]} for k in kept]
            fine_tune(
                model,
                examples,
                round_dir,
                WarmStartSettings(
                    steps=max(1, settings.epochs * len(examples)),
                    batch_size=1,
                    learning_rate=settings.learning_rate,
                    seed=settings.seed + index,
                ),
            )
        else:  # nothing to learn from: the next round samples the same model
            shutil.copytree(model, round_dir, dirs_exist_ok=True)
        model = str(round_dir)
        stats = reward.history[-1]
        row = {
            "step": index + 1,
            "round": index + 1,
            "rollouts": (index + 1) * len(rollouts),
            "reward": stats["mean"],
            "parsed": stats["parsed"],
            "right": stats["right"],
            "cost": stats["cost"],
            "calls": stats["calls"],
            "kept": len(kept),
            "seconds": round(time.perf_counter() - started, 1),
        }
        with log_path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        if on_log is not None:
            on_log(row)
        stale = out_dir / f"round-{index + 1 - max(1, settings.keep_rounds)}"
        if stale.is_dir():
            shutil.rmtree(stale)
    final = out_dir / "model"
    if final.exists():
        shutil.rmtree(final)
    shutil.copytree(model, final, ignore=shutil.ignore_patterns("checkpoints"))
    return final
