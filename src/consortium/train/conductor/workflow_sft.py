"""Supervised warm start of a conductor: TRL's `SFTTrainer` on workflows written in the format
the prompt teaches, before GRPO.

GRPO's reward is gated on the format: a group in which no workflow parses scores 0 everywhere and
has no advantage to learn from. A small instruct model (SmolLM2-135M) writes no valid workflow
from the prompt alone, so it first learns the three lists from examples. The targets span
shapes of 1 to 5 steps (one direct answer, solve → check, plan → solve → verify, attempts → a
judge, attempts → the `vote` or `check` tool, attempts → vote → a final check, cascades: attempts
→ `accept` → another model, which runs only when nothing is accepted) with model numbers
drawn from each prompt's own worker subset; they teach the format and a spread of shapes, not
which worker or shape pays — that is the job of GRPO or rejection sampling.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_datasets, quiet_transformers
from consortium.train.conductor.trainer_setup import device_args, step_logger

ANSWER = "End with 'The answer is …'."


@dataclass(frozen=True)
class Shape:
    why: str
    subtasks: tuple[str, ...]
    access: tuple[str | tuple[int, ...], ...]
    tools: tuple[str | None, ...] = ()
    """Per step, the tool it is (written by name in `model_id`) or None for a worker; empty:
    every step is a worker."""

    def tool_at(self, index: int) -> str | None:
        return self.tools[index] if self.tools else None


SOLVE = f"Solve the problem step by step. {ANSWER}"
AGAIN = f"Solve it independently. {ANSWER}"

SHAPES = (
    Shape(
        "A direct question: one model is enough.",
        (f"Answer the question step by step. {ANSWER}",),
        ((),),
    ),
    Shape(
        "Solve it, then check the solution.",
        (
            SOLVE,
            f"Check the solution above. If it is right, restate its answer; if not, fix it. "
            f"{ANSWER}",
        ),
        ((), (0,)),
    ),
    Shape(
        "Plan, solve with the plan, then verify.",
        (
            "List the quantities and the steps needed, without computing the result.",
            f"Follow the plan above and compute the answer. {ANSWER}",
            f"Verify the computation above step by step and give the final answer. {ANSWER}",
        ),
        ((), (0,), (1,)),
    ),
    Shape(
        "Two independent attempts, then a judge who sees both.",
        (
            SOLVE,
            AGAIN,
            f"Two solutions are above. Compare them, find any mistake and give the final answer. "
            f"{ANSWER}",
        ),
        ((), (), "all"),
    ),
    Shape(
        "Two attempts; the check tool keeps the first that passes.",
        (SOLVE, AGAIN, ""),
        ((), (), "all"),
        (None, None, "check"),
    ),
    Shape(
        "One model first; the accept tool stops there if its answer checks out, else another "
        "model answers.",
        (SOLVE, "", SOLVE),
        ((), (0,), ()),
        (None, "accept", None),
    ),
    Shape(
        "Two quick attempts; the accept tool stops there if they agree, else a third model "
        "answers.",
        (SOLVE, AGAIN, "", SOLVE),
        ((), (), (0, 1), ()),
        (None, None, "accept", None),
    ),
    Shape(
        "Three independent attempts, then the vote tool picks the common answer.",
        (SOLVE, AGAIN, AGAIN, ""),
        ((), (), (), "all"),
        (None, None, None, "vote"),
    ),
    Shape(
        "Three independent attempts, then a judge who sees all of them.",
        (
            SOLVE,
            AGAIN,
            AGAIN,
            f"Three solutions are above. Find the most reliable one and give the final answer. "
            f"{ANSWER}",
        ),
        ((), (), (), "all"),
    ),
    Shape(
        "Four independent attempts, then the vote tool picks the common answer.",
        (SOLVE, AGAIN, AGAIN, AGAIN, ""),
        ((), (), (), (), "all"),
        (None, None, None, None, "vote"),
    ),
    Shape(
        "Three attempts, a vote, then a final check of the voted answer.",
        (
            SOLVE,
            AGAIN,
            AGAIN,
            "",
            f"Check the answer above. If it is right, restate it; if not, fix it. {ANSWER}",
        ),
        ((), (), (), "all", (3,)),
        (None, None, None, "vote", None),
    ),
)
"""Shapes of 1 to 5 steps, with and without tool steps, so that sampling after the warm start
still has shapes to choose between."""


def example_workflow(n_workers: int, rng: random.Random) -> str:
    """One target completion: a `<think>` line and three lists over models 0..n_workers-1.

    The `<think>` line states the number of steps first: a small model that has committed to
    a count keeps the three lists the same length far more often. Workers of one shape are
    distinct while the subset allows (a records model may hold one sample only)."""
    shape = rng.choice(SHAPES)
    workers = [i for i in range(len(shape.subtasks)) if shape.tool_at(i) is None]
    drawn = rng.sample(range(n_workers), min(len(workers), n_workers))
    drawn += [rng.randrange(n_workers) for _ in range(len(workers) - len(drawn))]
    rng.shuffle(drawn)
    chosen = dict(zip(workers, drawn, strict=True))
    ids: list[int | str] = [
        chosen[i] if shape.tool_at(i) is None else str(shape.tool_at(i))
        for i in range(len(shape.subtasks))
    ]
    access = ["all" if a == "all" else list(a) for a in shape.access]
    steps = len(shape.subtasks)
    return (
        f"<think>{steps} step{'s' if steps > 1 else ''}. {shape.why}</think>\n"
        f"model_id = {ids!r}\nsubtasks = {list(shape.subtasks)!r}\naccess_list = {access!r}"
    )


def sft_examples(rows: Sequence[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """`n` prompt/completion pairs from conductor prompt rows (`training_rows`), cycling over
    them; conversational when the prompts are message lists."""
    rng = random.Random(seed)
    examples = []
    for index in range(n):
        row = rows[index % len(rows)]
        target = example_workflow(len(json.loads(row["workers"])), rng)
        chat = isinstance(row["prompt"], list)
        completion: Any = [{"role": "assistant", "content": target}] if chat else " " + target
        examples.append({"prompt": row["prompt"], "completion": completion})
    return examples


@dataclass
class WarmStartSettings:
    steps: int = 0
    """Optimizer steps of the supervised stage; 0 skips it."""
    batch_size: int = 2
    learning_rate: float = 5e-5
    seed: int = 0


def warm_start(
    base_model: str,
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    settings: WarmStartSettings,
    *,
    on_log: Callable[[dict[str, float]], None] | None = None,
) -> Path:
    """Fine-tune `base_model` on `steps x batch_size` example workflows; the model and its
    tokenizer are saved to `out_dir` (returned), the loss per step to `out_dir/loss.jsonl`."""
    if not rows:
        raise ConfigError("the warm start needs at least one training question")
    examples = sft_examples(rows, settings.steps * settings.batch_size, settings.seed)
    return fine_tune(base_model, examples, out_dir, settings, on_log=on_log)


def fine_tune(
    base_model: str,
    examples: Sequence[dict[str, Any]],
    out_dir: Path,
    settings: WarmStartSettings,
    *,
    on_log: Callable[[dict[str, float]], None] | None = None,
) -> Path:
    """`settings.steps` SFT steps on prompt/completion pairs (the loss on the completion only);
    the model and tokenizer go to `out_dir`, the loss per step to `out_dir/loss.jsonl`."""
    try:
        from datasets import Dataset
        from transformers import AutoTokenizer
        from trl import SFTConfig, SFTTrainer  # type: ignore[attr-defined]
    except ImportError as error:
        raise ConfigError(
            f"the warm start needs pip install 'consortium[coord]' ({error.name} missing)"
        ) from None
    quiet_transformers()
    quiet_datasets()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "loss.jsonl"
    log_path.write_text("")

    args = SFTConfig(
        output_dir=str(out_dir / "checkpoints"),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=0.1,  # a ratio of the total steps
        save_strategy="no",
        seed=settings.seed,
        **device_args(),
        completion_only_loss=True,  # learn the workflow, not the prompt
        max_length=None,  # the prompt (~850 tokens with its examples) must never be cut
    )
    trainer = SFTTrainer(
        model=base_model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(list(examples)),
        callbacks=[step_logger(log_path, "loss", on_log)],
    )
    trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(out_dir)
    return out_dir
