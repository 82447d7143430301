"""A real instruct model learns the Conductor's format: `make real-conductor`.

    python scripts/conductor_report.py --benchmarks ../shared/data/benchmarks
    python scripts/conductor_report.py --records records/gsm8k --grpo-steps 30


SmolLM2-135M-Instruct (the pinned GGUF file, dequantized by transformers) is trained as a
conductor of the local llama.cpp pool (SmolLM2-135M-Instruct + Gemma 3 270M, started here):
a supervised warm start on example workflows (TRL's SFTTrainer), then GRPO with the paper's gated
reward, the workflows run by the real workers on generated two-number arithmetic. The share of
valid workflows (greedy, held-out GSM8K questions) is measured before and after each stage.
Writes reports/conductor-smollm2.md and .json.

With `--records FOLDER` the workers are the replay of a records folder (recorded answers of real
models), the training questions its train split, and the held-out ones half from its test split's
easiest questions (every model right) and half from its hardest (at most half right): the report
adds each stage's workflow size on both halves (conductor-records-DATASET.md and .json). On replay a
step's answer is its model's recorded sample, whatever the step is told or shown (declared).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conductor_difficulty import (
    easiest_and_hardest,
    first_answers_right,
    models_on_every_question,
    size_table,
)
from consortium.pool.config import PoolConfig
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.smallmodels.files import SMOLLM2
from consortium.smallmodels.llamacpp import LlamaCppServers, ServerSettings
from consortium.tasks.base import Task, TaskSet
from consortium.tasks.registry import load_task_set
from consortium.train.conductor.grpo import GRPOSettings
from consortium.train.conductor.stages import (
    StageCallbacks,
    StagedSettings,
    train_conductor_in_stages,
)
from consortium.train.conductor.workflow_sft import WarmStartSettings
from made_by import made_by

POOL_NAME = (
    "llama.cpp server, SmolLM2-135M-Instruct (Q4_1) + Gemma 3 270M (Q4_K_M), 1 thread each; "
    "prices 0 (local)"
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows a trainer logged; none when the stage did not run."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def markdown(summary: dict[str, Any], losses: list[dict[str, float]], command: str) -> str:
    settings = summary["settings"]
    grpo, sft = settings["grpo"], settings["warm_start"]
    lines = [
        f"# {summary['title']}",
        "",
        f"Made by `{command}`. Workers: {summary['pool']}. The conductor is trained "
        "with transformers + TRL on this machine's CPU.",
        "",
        f"Stages: warm start = {sft['steps']} SFT steps x {sft['batch_size']} example workflows "
        f"(lr {sft['learning_rate']}); GRPO = {grpo['steps']} steps x "
        f"{grpo['questions_per_step']} questions x {grpo['group_size']} workflows "
        f"(lr {grpo['learning_rate']}, ≤ {grpo['max_completion_length']} completion tokens).",
        "",
        f"## Valid workflows on {settings['held_out']} {summary['held_out_label']} (greedy)",
        "",
        "| after | valid | share | invalid, by parser error |",
        "|---|---|---|---|",
    ]
    for stage, row in summary["validity"].items():
        errors = ", ".join(f"{k} {v}" for k, v in row["errors"].items()) or "—"
        lines.append(f"| {stage} | {row['valid']}/{row['n']} | {row['rate']:.0%} | {errors} |")
    if losses:
        lines += [
            "",
            f"Warm-start loss: {losses[0]['loss']:.3f} (step 1) → {losses[-1]['loss']:.3f} "
            f"(step {int(losses[-1]['step'])}).",
        ]
    if "held_out_groups" in summary:
        lines += [
            "",
            "## Workflow size on easy and hard questions (greedy, the same held-out questions)",
            "",
            "Easy: every worker's first recorded answer is right; hard: at most half are. The "
            "paper reports that the trained conductor calls fewer workers on easy questions and "
            "more on hard ones.",
            "",
            *size_table(summary),
        ]
    rewards = summary.get("grpo_log", [])
    if rewards:
        lines += [
            "",
            f"## GRPO per step (rollouts on {summary['rollouts_on']})",
            "",
            "| step | mean reward | workflows valid | answers right |",
            "|---|---|---|---|",
        ]
        for row in rewards:
            lines.append(
                f"| {int(row['step'])} | {row['reward']:.3f} | {row.get('parsed', 0):.0%} | "
                f"{row.get('right', 0):.0%} |"
            )
    seconds = ", ".join(f"{k} {v:.0f} s" for k, v in summary["seconds"].items())
    measured = sum(r["seconds"] for r in summary["validity"].values())
    lines += ["", f"Time on 2 cores: {seconds}; validity measurements {measured:.0f} s."]
    base = summary["validity"].get("base")
    if base and base["samples"]:
        lines += ["", "A base-model completion (greedy):", "", "```", base["samples"][0], "```"]
    last = summary["validity"].get("grpo") or summary["validity"].get("warm start")
    if last and last["samples"]:
        lines += ["", "A trained completion (greedy):", "", "```", last["samples"][0], "```"]
    return "\n".join(lines) + "\n"


@dataclass
class Setup:
    """What one mode trains on: its workers (entered with the training), questions and labels."""

    workers: Callable[[Path], AbstractContextManager[PoolConfig]]
    tasks: TaskSet
    held_out: list[Task]
    report: dict[str, Any]
    name: str


@contextmanager
def llamacpp_workers(scratch: Path, max_tokens: int) -> Iterator[PoolConfig]:
    with LlamaCppServers(scratch / "servers", settings=ServerSettings(max_tokens=max_tokens)) as s:
        yield s.pool()


@contextmanager
def records_workers(folder: Path, data: ReplayData, models: list[str]) -> Iterator[PoolConfig]:
    with ReplayServerProcess(None, records=[folder]) as server:
        yield replay_pool(data, server.base_url, models=models, max_retries=0)


def local_setup(args: argparse.Namespace) -> Setup:
    if not args.benchmarks:
        raise SystemExit("give --benchmarks (the public benchmark files) or --records FOLDER")
    held_out = load_task_set(
        f"gsm8k:path={Path(args.benchmarks) / 'gsm8k/test.jsonl'}:limit={args.held_out}"
        f":seed={args.seed}"
    )
    return Setup(
        lambda scratch: llamacpp_workers(scratch, args.worker_max_tokens),
        load_task_set(f"arithmetic:n={args.train_questions}:seed={args.seed + 1}"),
        held_out.tasks,
        {
            "title": "SmolLM2-135M-Instruct learns to write workflows",
            "pool": POOL_NAME,
            "held_out_label": "held-out GSM8K questions",
            "rollouts_on": "the real workers",
        },
        "conductor-smollm2",
    )


def records_setup(args: argparse.Namespace) -> Setup:
    folder = Path(args.records)
    data = load_records_replay([folder])
    dataset = data.records[0].dataset
    right = first_answers_right(data)
    models = models_on_every_question(right)
    spec = f"records:path={folder}"
    test = load_task_set(f"{spec}:split=test")
    groups = easiest_and_hardest(test.tasks, right, models, args.held_out, args.seed)
    return Setup(
        lambda scratch: records_workers(folder, data, models),
        load_task_set(f"{spec}:split=train:limit={args.train_questions}:seed={args.seed + 1}"),
        groups["easy"] + groups["hard"],
        {
            "title": f"SmolLM2-135M-Instruct conducts recorded answers of real models ({dataset})",
            "pool": (
                f"replay of the records folder `{folder.name}` (`consortium replay serve "
                f"--records`), the models recorded on every question: {', '.join(models)}. "
                "Declared simulation: a step's answer is its model's recorded sample (the k-th "
                "step of one model gets its k-th sample), whatever the step is told or shown, so "
                "the workflow's answer is its last step's recorded answer; the reward is the "
                "paper's (0 unparsable, 0.5 wrong, 1 right), with no cost term"
            ),
            "held_out_label": (
                f"{dataset} test questions ({len(groups['easy'])} easy, {len(groups['hard'])} hard)"
            ),
            "rollouts_on": "the replayed workers",
            "held_out_groups": {name: [t.id for t in group] for name, group in groups.items()},
        },
        f"conductor-records-{dataset}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--benchmarks", help="the public benchmark files (the llama.cpp mode)")
    parser.add_argument("--records", help="a records folder: its replay is the workers")
    parser.add_argument("--out", default="reports")
    parser.add_argument("--work", default=None, help="training folder (default: a temporary one)")
    parser.add_argument("--train-questions", type=int, default=200)
    parser.add_argument("--held-out", type=int, default=50)
    parser.add_argument("--sft-steps", type=int, default=40)
    parser.add_argument("--sft-batch", type=int, default=2)
    parser.add_argument("--sft-lr", type=float, default=1e-4)
    parser.add_argument("--grpo-steps", type=int, default=5)
    parser.add_argument("--questions-per-step", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--grpo-lr", type=float, default=5e-6)
    parser.add_argument("--max-completion", type=int, default=128)
    parser.add_argument("--worker-max-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # A plain `kill` unwinds the `with` blocks, so the worker servers stop too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    setup = records_setup(args) if args.records else local_setup(args)
    settings = StagedSettings(
        grpo=GRPOSettings(
            steps=args.grpo_steps,
            questions_per_step=args.questions_per_step,
            group_size=args.group_size,
            learning_rate=args.grpo_lr,
            max_completion_length=args.max_completion,
            save_steps=max(1, args.grpo_steps // 2),
            seed=args.seed,
        ),
        warm_start=WarmStartSettings(
            steps=args.sft_steps,
            batch_size=args.sft_batch,
            learning_rate=args.sft_lr,
            seed=args.seed,
        ),
        held_out=len(setup.held_out),
    )

    def say(text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    hooks = StageCallbacks(
        on_stage=lambda name, n: say(f"{name}: {n}"),
        on_sft_log=lambda row: say(f"SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
        on_grpo_log=lambda row: say(f"GRPO {json.dumps(row)}"),
    )
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.work) if args.work else Path(scratch) / "conductor"
        with setup.workers(Path(scratch)) as pool:
            summary = train_conductor_in_stages(
                SMOLLM2.name,
                pool,
                setup.tasks.tasks,
                setup.tasks.grader,
                work,
                settings,
                held_out=setup.held_out,
                resume=args.work is not None,
                callbacks=hooks,
            )
        summary["grpo_log"] = read_jsonl(work / "rewards.jsonl")
        losses = read_jsonl(work / "warm-start" / "loss.jsonl")
    summary |= setup.report
    summary["warm_start_loss"] = losses
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = made_by("conductor_report.py", sys.argv[1:])
    text = markdown(summary, losses, command)
    (out / f"{setup.name}.md").write_text(text)
    # The work folder is the machine's own (a temporary one by default): its paths read WORK/….
    summary_json = json.dumps(summary, indent=2).replace(str(work.resolve()), "WORK")
    (out / f"{setup.name}.json").write_text(summary_json.replace(str(work), "WORK"))
    print(text)


if __name__ == "__main__":
    main()
