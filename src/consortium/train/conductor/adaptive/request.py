"""What one run of the adaptive conductor pipeline is asked to do: every option of
`scripts/conductor_adaptive.py`, with its default, in the order the report's settings list them."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from consortium.core.errors import ConfigError
from consortium.smallmodels.files import SMOLLM2

FOLDERS = ("records/gsm8k", "records/math", "records/humaneval", "records/date")
METHODS = ("grpo", "rft", "distil")


@dataclass(frozen=True)
class AdaptiveRequest:
    work: str
    """The training folder (kept; a rerun resumes)."""
    out: str = "reports"
    policies: str = "policies"
    """The served teams' folders (`<set>-team`)."""
    report_name: str = "conductor-adaptive"
    stages: str = "warm,shapes,train,eval,report"
    train_per_set: int = 50
    test_per_set: int = 5
    sft_steps: int = 24
    sft_batch: int = 2
    sft_lr: float = 1e-4
    shape_questions: int = 2
    shape_samples: int = 4
    methods: str = "grpo,rft"
    distil_steps: int = 40
    distil_ids: str = "numbers"
    lambdas: str = "0.2"
    rollouts: int = 24
    questions_per_step: int = 2
    group_size: int = 4
    grpo_lr: float = 5e-6
    rft_lr: float = 5e-5
    rft_kept: str = "best"
    max_completion: int = 160
    temperature: float = 1.0
    min_p: float = 0.0
    seed: int = 0
    evaluate: str = "all"
    worker_notes: str = "none"
    base_model: str = SMOLLM2.name
    """The conductor's base ("tiny": a smoke run)."""

    def __post_init__(self) -> None:
        try:
            lambda_values(self.lambdas)
        except ValueError as error:
            raise ConfigError(f"--lambdas: {error}") from None
        unknown = set(self.methods.split(",")) - set(METHODS)
        if unknown:
            raise ConfigError(
                f"--methods: unknown {', '.join(sorted(unknown))}; known: {', '.join(METHODS)}"
            )
        if not 0 <= self.min_p < 1:
            raise ConfigError(f"--min-p: expected a share in [0, 1), got {self.min_p:g}")

    @property
    def cost_weights(self) -> list[float]:
        return lambda_values(self.lambdas)

    @property
    def method_names(self) -> list[str]:
        return self.methods.split(",")

    def settings(self) -> dict[str, Any]:
        """The options the report states (all but the folders it was run in)."""
        return {k: v for k, v in asdict(self).items() if k not in ("work", "out")}


def lambda_values(text: str) -> list[float]:
    """`--lambdas`: comma-separated λ values, each at least 0 (ValueError, one line, if not: an
    `argparse` type)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"not a list of numbers: {text!r} (e.g. 0,0.2)") from None
    if any(v < 0 for v in values):
        raise ValueError(f"a λ below 0 in {text!r}: a cost weight is at least 0")
    return values


def say(text: str) -> None:
    """A progress line with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)
