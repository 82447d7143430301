"""What the TRL trainers of this package (GRPO, the SFT warm start) share: the device settings
and a callback that appends each logged step to a JSON-lines file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def device_args() -> dict[str, Any]:
    """Trainer arguments for the machine at hand, logged every step, no progress bars."""
    import torch

    gpu = torch.cuda.is_available()
    return {
        "use_cpu": not gpu,
        # TRL turns bf16 on by default; on a CPU without bf16 units that autocast runs every
        # matrix product through a slow reference kernel (about 10x slower than float32).
        "bf16": gpu and torch.cuda.is_bf16_supported(),
        "activation_checkpointing": gpu,  # on a CPU recomputing costs more than it saves
        "logging_steps": 1,
        "report_to": [],
        "disable_tqdm": True,
    }


def step_logger(
    path: Path,
    key: str,
    on_log: Callable[[dict[str, float]], None] | None = None,
    extra: Callable[[], dict[str, float]] | None = None,
) -> Any:
    """A TrainerCallback that appends {"step", key, **extra()} to `path` whenever the trainer
    logs `key`, and hands the same row to `on_log`."""
    from transformers import TrainerCallback

    class StepLog(TrainerCallback):  # type: ignore[misc]  # transformers is not followed (Any)
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if not logs or key not in logs:
                return
            row = {"step": float(state.global_step), key: float(logs[key])}
            row.update(extra() if extra is not None else {})
            with path.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            if on_log is not None:
                on_log(row)

    return StepLog()
