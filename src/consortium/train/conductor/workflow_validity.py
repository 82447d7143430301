"""How often a conductor's workflows parse and validate: greedy completions of held-out prompts,
each checked against its own worker subset by the parser the executor uses."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.coord.conductor.workflow import WorkflowError, parse_workflow
from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers
from consortium.pool.local import prompt_text


@dataclass(frozen=True)
class WorkflowShape:
    steps: int
    models: int
    """Distinct workers called (tool steps call none)."""
    last: str
    """The worker of the last step, whose output is the workflow's answer (a tool's name when
    a tool step passes on an earlier answer)."""


@dataclass
class Validity:
    n: int
    valid: int
    errors: dict[str, int] = field(default_factory=dict)
    """Invalid completions by the parser's error class (e.g. `WorkflowSyntaxError`)."""
    samples: list[str] = field(default_factory=list)
    """The first few completions, as written."""
    shapes: dict[str, WorkflowShape] = field(default_factory=dict)
    """Each valid workflow's shape, by the prompt row's task id."""
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.valid / self.n if self.n else 0.0


def workflow_shape(text: str, workers: Sequence[str], *, max_steps: int = 5) -> WorkflowShape:
    """The shape of the workflow `text` writes for `workers`; the parser's error if invalid."""
    steps = parse_workflow(text, workers, max_steps=max_steps).steps
    called = {step.model for step in steps if not step.tool}
    return WorkflowShape(len(steps), len(called), steps[-1].model)


def workflow_validity(
    model_dir: str | Path,
    rows: Sequence[dict[str, Any]],
    *,
    max_steps: int = 5,
    max_new_tokens: int = 128,
    batch_size: int = 10,
    keep_samples: int = 3,
    on_batch: Callable[[int], None] | None = None,
) -> Validity:
    """Greedy-decode one workflow per prompt row (`training_rows`) with the model in
    `model_dir` and count those `parse_workflow` accepts for the row's workers."""
    import time

    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise ConfigError(
            f"measuring workflows needs pip install 'consortium[coord]' ({error.name} missing)"
        ) from None
    quiet_transformers()
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    result = Validity(n=len(rows), valid=0)
    errors: Counter[str] = Counter()
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        texts = [
            r["prompt"] if isinstance(r["prompt"], str) else prompt_text(tokenizer, r["prompt"])
            for r in batch
        ]
        encoded = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            output = model.generate(
                input_ids=encoded["input_ids"],
                attention_mask=encoded["attention_mask"],
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        width = encoded["input_ids"].shape[1]
        for row, tokens in zip(batch, output, strict=True):
            text = str(tokenizer.decode(tokens[width:], skip_special_tokens=True))
            if len(result.samples) < keep_samples:
                result.samples.append(text)
            try:
                shape = workflow_shape(text, json.loads(row["workers"]), max_steps=max_steps)
            except WorkflowError as error:
                errors[type(error).__name__] += 1
            else:
                result.valid += 1
                result.shapes[row["task_id"]] = shape
        if on_batch is not None:
            on_batch(len(batch))
    result.errors = dict(errors)
    result.seconds = time.perf_counter() - started
    return result
