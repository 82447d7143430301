"""`consortium train conductor`: GRPO for a workflow-writing model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from consortium.cli.app import console, err_console, train_app
from consortium.cli.options import (
    ExecutorOption,
    RayAddressOption,
)
from consortium.pool.config import load_pool

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from consortium.pool.config import PoolConfig
    from consortium.tasks.base import Task, TaskSet
    from consortium.train.conductor.stages import StageCallbacks, StagedSettings


@train_app.command("conductor")
def train_conductor(
    pool: Annotated[Path, typer.Option("--pool", help="Pool file of the workers.")],
    tasks: Annotated[str, typer.Option("--tasks", help="Training tasks (a --tasks spec).")],
    out: Annotated[Path, typer.Option(help="Folder for the trained conductor and its log.")],
    base_model: Annotated[
        str,
        typer.Option(
            help="Causal LM to train (path or hub id; the paper: Qwen/Qwen2.5-7B-Instruct), a "
            "GGUF file, 'smollm2-135m' (the pinned SmolLM2-135M-Instruct), or 'tiny': a 2-layer "
            "model with random weights built here, for a CPU smoke run."
        ),
    ] = "tiny",
    steps: Annotated[int, typer.Option(help="GRPO iterations (paper: 200).")] = 200,
    questions_per_step: Annotated[int, typer.Option(help="Questions per step (paper: 4).")] = 4,
    group_size: Annotated[int, typer.Option(help="Workflows per question (paper: 64).")] = 64,
    lr: Annotated[float, typer.Option(help="Learning rate (paper: 1e-6).")] = 1e-6,
    max_completion: Annotated[
        int, typer.Option(help="Completion tokens per workflow (paper: 1024).")
    ] = 1024,
    min_workers: Annotated[
        int, typer.Option(help="Smallest random worker subset per prompt (adaptive pool).")
    ] = 2,
    save_steps: Annotated[int, typer.Option(help="Checkpoint every this many steps.")] = 50,
    warm_start_steps: Annotated[
        int,
        typer.Option(
            help="Supervised steps on example workflows before GRPO (TRL's SFTTrainer), for a "
            "model that writes no valid workflow yet; 0 skips the stage."
        ),
    ] = 0,
    warm_start_lr: Annotated[float, typer.Option(help="Learning rate of the warm start.")] = 5e-5,
    held_out: Annotated[
        str | None,
        typer.Option(
            help="Tasks (a --tasks spec) whose questions measure the share of valid workflows "
            "(greedy) before and after each stage; written to OUT/stages.json."
        ),
    ] = None,
    held_out_n: Annotated[int, typer.Option(help="Held-out questions measured.")] = 50,
    method: Annotated[
        str,
        typer.Option(
            help="grpo, or rft: rejection-sampling fine-tuning on the same rollout budget (per "
            "round: sample --group-size workflows for each of --questions-per-step questions, "
            "keep the best-rewarded right one, fine-tune on them; --steps rounds)."
        ),
    ] = "grpo",
    cost_weight: Annotated[
        float,
        typer.Option(
            help="λ of the cost-aware reward: a valid workflow loses λ x its $ in units of its "
            "task's cost unit (records tasks of a mixed pool: the data set's best single model's "
            "mean $); 0 is the paper's reward."
        ),
    ] = 0.0,
    examples: Annotated[
        bool,
        typer.Option(
            help="Show the four example workflows in the prompt (--no-examples: a prompt a "
            "quarter as long; ask the trained conductor with `examples=0` too)."
        ),
    ] = True,
    rft_lr: Annotated[float, typer.Option(help="Learning rate of the RFT rounds.")] = 5e-5,
    seed: Annotated[int, typer.Option(help="Seed of subsets and sampling.")] = 0,
    resume: Annotated[
        bool, typer.Option(help="Continue from OUT/checkpoints (GRPO) or the last round (RFT).")
    ] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
) -> None:
    """Train a conductor with GRPO (TRL): reward 0 when its lists do not parse, 0.5 when the
    workflow runs but answers wrong, 1 when right; each prompt gets a random subset of the
    workers. Optionally a supervised warm start first, and the valid-workflow rate on held-out
    questions before and after each stage.

    Example (replay workers, a CPU smoke run):

      consortium train conductor --pool replay.toml --out runs/conductor --steps 2 \\
        --questions-per-step 1 --group-size 2 --max-completion 32 \\
        --tasks replay:data=../shared/data/routerdc:split=train:datasets=mmlu:limit=8

    A real instruct model against the local llama.cpp pool (`consortium local start`):

      consortium train conductor --pool local-pool.toml --base-model smollm2-135m \\
        --out runs/smollm2-conductor --tasks arithmetic:n=200:seed=1 \\
        --warm-start-steps 40 --warm-start-lr 1e-4 --steps 5 --questions-per-step 2 \\
        --group-size 4 --max-completion 128 --lr 5e-6 \\
        --held-out gsm8k:path=../shared/data/benchmarks/gsm8k/test.jsonl:limit=50

    Then add the conductor to a pool (backend = "local", model = "OUT/model") and run
    `consortium eval --policy conductor:NAME`.
    """
    from consortium.cli.task_sets import load_tasks
    from consortium.core.errors import ConfigError
    from consortium.train.conductor.grpo import GRPOSettings
    from consortium.train.conductor.stages import StagedSettings
    from consortium.train.conductor.workflow_sft import WarmStartSettings

    if method not in ("grpo", "rft"):
        raise ConfigError(f"--method must be grpo or rft, got {method!r}")
    config = load_pool(pool)
    task_set = load_tasks(tasks)
    held_out_tasks = load_tasks(held_out).tasks if held_out else []
    settings = StagedSettings(
        grpo=GRPOSettings(
            steps=steps,
            questions_per_step=questions_per_step,
            group_size=group_size,
            learning_rate=lr,
            max_completion_length=max_completion,
            min_workers=min_workers,
            save_steps=save_steps,
            seed=seed,
            cost_weight=cost_weight,
            examples=examples,
        ),
        warm_start=WarmStartSettings(
            steps=warm_start_steps, learning_rate=warm_start_lr, seed=seed
        ),
        held_out=held_out_n if held_out else 0,
        method=method,
        rft_learning_rate=rft_lr,
    )
    jobs = (executor, ray_address)
    _train(base_model, config, task_set, held_out_tasks, out, settings, resume, jobs)


def _train(
    base_model: str,
    config: PoolConfig,
    task_set: TaskSet,
    held_out: list[Task],
    out: Path,
    settings: StagedSettings,
    resume: bool,
    jobs: tuple[str, str | None],
) -> None:
    """`train_conductor_in_stages` with a bar per stage, announced before and summed up after;
    `jobs`: the executor's name and Ray address."""
    from consortium.core.progress import task_progress
    from consortium.runtime.dist import make_executor
    from consortium.train.conductor.stages import train_conductor_in_stages

    _announce(settings, len(config.names), out)
    with task_progress(err_console) as progress:
        summary = train_conductor_in_stages(
            base_model,
            config,
            task_set.tasks,
            task_set.grader,
            out,
            settings,
            held_out=held_out,
            resume=resume,
            callbacks=_stage_bars(progress, settings.method),
            jobs=make_executor(*jobs),
        )
    _print_summary(summary, out)


def _announce(settings: StagedSettings, workers: int, out: Path) -> None:
    """The run's shape and where its reward log goes, before the first stage."""
    method, grpo = settings.method, settings.grpo
    log = out / ("rounds.jsonl" if method == "rft" else "rewards.jsonl")
    err_console.print(
        f"{method.upper()}: {grpo.steps} {'rounds' if method == 'rft' else 'steps'} x "
        f"{grpo.questions_per_step} questions x {grpo.group_size} workflows over "
        f"{workers} workers (λ = {grpo.cost_weight:g}); reward log in {log}"
    )


def _stage_bars(progress: Progress, method: str = "grpo") -> StageCallbacks:
    """A bar per stage (held-out checks, warm start, GRPO or RFT), each step's figures in its
    label."""
    from consortium.train.conductor.stages import StageCallbacks

    bars: list[TaskID] = []

    def stage(name: str, total: int) -> None:
        if bars:
            progress.update(bars[-1], completed=progress.tasks[-1].total)
        bars.append(progress.add_task(name, total=total))

    def grpo_log(row: dict[str, float]) -> None:
        progress.update(
            bars[-1],
            completed=int(row["step"]),
            description=(
                f"{method.upper()} · reward {row['reward']:.3f} · "
                f"parsed {row.get('parsed', 0):.0%} · right {row.get('right', 0):.0%}"
            ),
        )

    def sft_log(row: dict[str, float]) -> None:
        progress.update(bars[-1], description=f"warm start (SFT) · loss {row['loss']:.3f}")

    return StageCallbacks(
        on_stage=stage,
        on_advance=lambda n: progress.advance(bars[-1], n),
        on_grpo_log=grpo_log,
        on_sft_log=sft_log,
    )


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    for name, row in summary["validity"].items():
        console.print(
            f"valid workflows ({name}): {row['valid']}/{row['n']} ({row['rate']:.0%})"
            + (f"; invalid: {row['errors']}" if row["errors"] else "")
        )
    grpo_summary = summary.get("grpo")
    if grpo_summary:
        console.print(
            f"conductor written to {out / 'model'} after {grpo_summary['steps_logged']} logged "
            f"steps (reward {grpo_summary['reward_first']} -> {grpo_summary['reward_last']})"
        )
    elif "warm_start_model" in summary:
        console.print(f"warm-started conductor written to {summary['warm_start_model']}")
