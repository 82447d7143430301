"""How often a conductor's workflows parse and validate: greedy completions of held-out prompts,
each checked against its own worker subset by the parser the executor uses."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.coord.conductor.workflow import WorkflowError, parse_workflow
from consortium.train.conductor.workflow_reward import step_counts
from consortium.train.conductor.workflow_sampling import Sampler


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
    n_steps, models, _ = step_counts(steps)
    return WorkflowShape(n_steps, models, steps[-1].model)


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
    `model_dir` (`Sampler`, `batch_size` rows at a time) and count those `parse_workflow`
    accepts for the row's workers."""
    started = time.perf_counter()
    sampler = Sampler.load(model_dir)
    done = 0

    def advance(index: int) -> None:
        nonlocal done
        if on_batch is not None:
            on_batch(index + 1 - done)
        done = index + 1

    completions = sampler.complete(
        rows, max_new_tokens=max_new_tokens, batch_size=batch_size, on_row=advance
    )
    result = Validity(n=len(rows), valid=0)
    errors: Counter[str] = Counter()
    for row, (text,) in zip(rows, completions, strict=True):
        if len(result.samples) < keep_samples:
            result.samples.append(text)
        try:
            shape = workflow_shape(text, json.loads(row["workers"]), max_steps=max_steps)
        except WorkflowError as error:
            errors[type(error).__name__] += 1
        else:
            result.valid += 1
            result.shapes[row["task_id"]] = shape
    result.errors = dict(errors)
    result.seconds = time.perf_counter() - started
    return result
