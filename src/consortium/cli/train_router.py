"""`consortium train router`: the TRINITY head for single-turn routing, trained on recorded
outcomes in process."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import console, err_console, train_app
from consortium.cli.options import (
    ComponentsOption,
    MinibatchOption,
    PoolOption,
    PopsizeOption,
    in_range,
)
from consortium.coord.trinity.defaults import ENCODER
from consortium.core.errors import ConsortiumError
from consortium.pool.config import load_pool
from consortium.train.trinity.settings import ENCODER_HELP, RecordedConfig, RouterTraining

if TYPE_CHECKING:
    from consortium.pool.config import PoolConfig
    from consortium.tasks.base import TaskSet
    from consortium.train.trinity.fit import FitState

RECORDED, ROUTER = RecordedConfig(), RouterTraining(RecordedConfig())


@train_app.command("router")
def train_router(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Replay training tasks, e.g. replay:data=DIR:split=train:datasets=mmlu,gsm8k",
        ),
    ],
    out: Annotated[Path, typer.Option(help="Policy directory to write.")],
    optimizer: Annotated[
        str, typer.Option(help="es (sep-CMA-ES), reinforce, random or imitation (no rollouts).")
    ] = RECORDED.optimizer,
    warm_start: Annotated[
        str, typer.Option(help="imitation (the paper's SFT baseline first) or none.")
    ] = ROUTER.warm_start,
    rollouts: Annotated[
        int,
        typer.Option(
            help="Budget: questions answered by candidates, summed.",
            callback=in_range("--rollouts", 1),
        ),
    ] = RECORDED.rollouts,
    popsize: PopsizeOption = RECORDED.popsize,
    minibatch: MinibatchOption = RECORDED.minibatch,
    sigma0: Annotated[
        float,
        typer.Option(help="sep-CMA-ES's initial step (small after a warm start; ~0.5 from zeros)."),
    ] = RECORDED.sigma0,
    learning_rate: Annotated[
        float, typer.Option(help="REINFORCE's Adam step size.")
    ] = RECORDED.learning_rate,
    l2: Annotated[float, typer.Option(help="Imitation's weight decay.")] = RECORDED.l2,
    question_weight: Annotated[
        float,
        typer.Option(
            help="Imitation target: this share of the per-question-best label, the rest the "
            "dataset's best model."
        ),
    ] = RECORDED.question_weight,
    validation: Annotated[
        float,
        typer.Option(
            help="Share of training questions that decides whether the optimizer beats the warm "
            "start (0: keep the optimizer's head)."
        ),
    ] = ROUTER.validation,
    reward: Annotated[
        str,
        typer.Option(
            help="recorded (the chosen model's recorded score: the expected binary reward) or "
            "draw (the paper's binary reward, a Bernoulli draw)."
        ),
    ] = RECORDED.reward,
    components: ComponentsOption = ROUTER.components or 0,
    constant: Annotated[
        bool,
        typer.Option(
            "--constant/--no-constant", help="Append a constant feature (a bias for the head)."
        ),
    ] = ROUTER.constant,
    encoder: Annotated[str, typer.Option(help=ENCODER_HELP)] = ENCODER,
    features: Annotated[
        Path | None,
        typer.Option(help="Feature cache (SQLite, keyed by text hash); default OUT/features.db."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of everything random.")] = RECORDED.seed,
) -> None:
    """Train the TRINITY head for single-turn routing on recorded outcomes, in process.

    Rollouts are lookups in the recorded data (no server): fast enough for the paper's head size.
    The policy is a TRINITY policy like any other (`eval --policy OUT`, `ask`, `serve`).

    Example (replay pool, the in-distribution train splits, SmolLM2 features):

      consortium train router --pool replay.toml --out policies/router \\
        --encoder SmolLM2-135M-Instruct --tasks replay:data=../shared/data/routerdc:\\
      split=train:datasets=mmlu,gsm8k,cmmlu,arc_challenge,humaneval
    """
    from consortium.cli.task_sets import load_tasks
    from consortium.train.trinity.routing import recorded_scores

    _check_router_choices(optimizer, reward, warm_start)
    config = load_pool(pool)
    task_set = load_tasks(tasks)
    recorded_models = [config.get(name).model for name in config.names]
    recorded_scores(task_set.tasks, recorded_models)  # no recorded outcomes: fail before encoding
    training = RouterTraining(
        RecordedConfig(
            optimizer=optimizer,
            rollouts=rollouts,
            popsize=popsize,
            minibatch=minibatch,
            sigma0=sigma0,
            learning_rate=learning_rate,
            l2=l2,
            question_weight=question_weight,
            reward=reward,  # type: ignore[arg-type]
            seed=seed,
        ),
        warm_start=warm_start,
        components=components or None,
        constant=constant,
        validation=validation,
    )
    features_at = features or out / "features.db"
    _train_router(task_set, config, recorded_models, out, training, encoder, features_at, tasks)


def _check_router_choices(optimizer: str, reward: str, warm_start: str) -> None:
    from consortium.train.trinity.recorded import OPTIMIZERS

    if optimizer not in OPTIMIZERS:
        raise ConsortiumError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
    if reward not in ("recorded", "draw"):
        raise ConsortiumError("--reward must be recorded or draw")
    if warm_start not in ("imitation", "none"):
        raise ConsortiumError("--warm-start must be imitation or none")


def _train_router(
    task_set: TaskSet,
    config: PoolConfig,
    recorded_models: list[str],
    out: Path,
    training: RouterTraining,
    encoder: str,
    features: Path,
    description: str,
) -> None:
    """`train.routing.train_router` with bars for the encoding and the fit, and what it kept."""
    from consortium.coord.trinity.policy import default_encoder
    from consortium.core.progress import task_progress
    from consortium.train.trinity.routing import train_router as run_training

    optimizer = training.optimizer.optimizer
    cache = default_encoder(encoder, features)
    with task_progress(err_console) as progress:
        encoding = progress.add_task(f"encoding with {encoder}", total=len(task_set.tasks))
        total = training.optimizer.rollouts
        steps = progress.add_task(f"{optimizer} on recorded outcomes", total=total)

        def show(run: FitState) -> None:
            progress.update(steps, completed=run.rollouts)

        setup, run, decision = run_training(
            task_set.tasks,
            cache,
            config.names,
            recorded_models,
            out,
            training,
            description=description,
            on_encoded=lambda n: progress.advance(encoding, n),
            on_step=show,
        )
    if decision:
        console.print(
            f"validation ({decision['validation_questions']} held-out questions): warm start "
            f"{decision['warm_start_reward']:.4f}, {optimizer} {decision['optimizer_reward']:.4f}"
            f" → kept the {decision['kept']}"
        )
    console.print(
        f"policy {out}: {setup.n_params:,} weights, {run.rollouts:,} rollouts in the final fit"
        f" ({optimizer}, warm start: {training.warm_start})"
    )
