"""SmolLM2-135M-Instruct (the pinned GGUF file, dequantized by transformers) trained as a
conductor: a supervised warm start on example workflows (TRL's SFTTrainer), then GRPO with the
paper's gated reward, the workflows run by the mode's workers; the share of valid workflows on the
held-out questions measured before and after each stage. The llama.cpp mode's setup is here
(`local_setup`); the records mode's is `demo.conductor_records.records_setup`."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from consortium.pool.config import PoolConfig
from consortium.reports.conductor_format.markdown import markdown
from consortium.reports.conductor_format.request import (
    ConductorFormatReport,
    ConductorFormatRequest,
    Setup,
)
from consortium.smallmodels.files import SMOLLM2
from consortium.smallmodels.llamacpp import LlamaCppServers, ServerSettings
from consortium.tasks.registry import load_task_set
from consortium.train.conductor.grpo import GRPOSettings
from consortium.train.conductor.stages import (
    StageCallbacks,
    StagedSettings,
    train_conductor_in_stages,
)
from consortium.train.conductor.workflow_sft import WarmStartSettings

POOL_NAME = (
    "llama.cpp server, SmolLM2-135M-Instruct (Q4_1) + Gemma 3 270M (Q4_K_M), 1 thread each; "
    "prices 0 (local)"
)
LOCAL_LABELS = {
    "title": "SmolLM2-135M-Instruct learns to write workflows",
    "pool": POOL_NAME,
    "held_out_label": "held-out GSM8K questions",
    "rollouts_on": "the real workers",
}
"""What the llama.cpp mode's report says of its workers and questions."""


def untimed(value: Any) -> Any:
    """`value` without its "seconds" entries: a report keeps what a second run reproduces."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key != "seconds"}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows a trainer logged; none when the stage did not run."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@contextmanager
def llamacpp_workers(scratch: Path, max_tokens: int) -> Iterator[PoolConfig]:
    with LlamaCppServers(scratch / "servers", settings=ServerSettings(max_tokens=max_tokens)) as s:
        yield s.pool()


def local_setup(request: ConductorFormatRequest) -> Setup:
    """The llama.cpp mode: trained on generated arithmetic, held out on GSM8K questions."""
    held_out = load_task_set(
        f"gsm8k:path={Path(request.benchmarks or '') / 'gsm8k/test.jsonl'}"
        f":limit={request.held_out}:seed={request.seed}"
    )
    return Setup(
        lambda scratch: llamacpp_workers(scratch, request.worker_max_tokens),
        load_task_set(f"arithmetic:n={request.train_questions}:seed={request.seed + 1}"),
        held_out.tasks,
        dict(LOCAL_LABELS),
        "conductor-smollm2",
    )


def staged_settings(request: ConductorFormatRequest, held_out: int) -> StagedSettings:
    return StagedSettings(
        grpo=GRPOSettings(
            steps=request.grpo_steps,
            questions_per_step=request.questions_per_step,
            group_size=request.group_size,
            learning_rate=request.grpo_lr,
            max_completion_length=request.max_completion,
            save_steps=max(1, request.grpo_steps // 2),
            seed=request.seed,
        ),
        warm_start=WarmStartSettings(
            steps=request.sft_steps,
            batch_size=request.sft_batch,
            learning_rate=request.sft_lr,
            seed=request.seed,
        ),
        held_out=held_out,
    )


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


HOOKS = StageCallbacks(
    on_stage=lambda name, n: _say(f"{name}: {n}"),
    on_sft_log=lambda row: _say(f"SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
    on_grpo_log=lambda row: _say(f"GRPO {json.dumps(row)}"),
)


def run_conductor_format(request: ConductorFormatRequest, setup: Setup) -> ConductorFormatReport:
    """Train in stages on `setup`'s workers (resuming from `request.work` when given) and build
    the report; its JSON names the work folder WORK (it is the machine's own)."""
    settings = staged_settings(request, len(setup.held_out))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(request.work) if request.work else Path(scratch) / "conductor"
        with setup.workers(Path(scratch)) as pool:
            summary = train_conductor_in_stages(
                SMOLLM2.name,
                pool,
                setup.tasks.tasks,
                setup.tasks.grader,
                work,
                settings,
                held_out=setup.held_out,
                resume=request.work is not None,
                callbacks=HOOKS,
            )
        summary["grpo_log"] = read_jsonl(work / "rewards.jsonl")
        losses = read_jsonl(work / "warm-start" / "loss.jsonl")
    summary = untimed(summary) | setup.report
    summary["warm_start_loss"] = losses
    text = markdown(summary, losses, request.script)
    print(text)
    summary_json = json.dumps(summary, indent=2).replace(str(work.resolve()), "WORK")
    return ConductorFormatReport(setup.name, text, summary_json.replace(str(work), "WORK"))
