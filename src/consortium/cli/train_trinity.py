"""`consortium train trinity | router`: the TRINITY head."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import console, err_console, train_app
from consortium.cli.options import (
    DEFAULT_TRACES,
    ComponentsOption,
    ExecutorOption,
    MinibatchOption,
    PoolOption,
    PopsizeOption,
    RayAddressOption,
    SigmaOption,
    TracesOption,
    in_range,
)
from consortium.coord.trinity.defaults import ENCODER
from consortium.core.errors import ConsortiumError
from consortium.pool.config import load_pool
from consortium.train.trinity.settings import (
    ENCODER_HELP,
    RecordedConfig,
    RouterTraining,
    TrainConfig,
)

if TYPE_CHECKING:
    from rich.progress import TaskID

    from consortium.coord.trinity.policy import HeadSetup

ONLINE, RECORDED, ROUTER = TrainConfig(), RecordedConfig(), RouterTraining(RecordedConfig())


@train_app.command("trinity")
def train_trinity(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks", help="Training tasks, e.g. replay:data=DIR:datasets=mmlu,gsm8k:split=train"
        ),
    ],
    out: Annotated[Path, typer.Option(help="Policy directory to write (and resume from).")],
    generations: Annotated[
        int,
        typer.Option(help="Generations (iterations).", callback=in_range("--generations", 1)),
    ] = ONLINE.generations,
    popsize: PopsizeOption = ONLINE.popsize,
    minibatch: MinibatchOption = ONLINE.minibatch,
    sigma0: SigmaOption = ONLINE.sigma0,
    seed: Annotated[int, typer.Option(help="Seed of everything random.")] = ONLINE.seed,
    optimizer: Annotated[str, typer.Option(help="es (sep-CMA-ES), reinforce or random.")] = "es",
    components: ComponentsOption = 16,
    max_turns: Annotated[
        int,
        typer.Option(
            help="Turns per task. Default 1: a one-shot router (see docs/trinity.md for why); "
            "the paper's loop: --max-turns 5 --roles worker,thinker,verifier.",
            callback=in_range("--max-turns", 1),
        ),
    ] = 1,
    roles: Annotated[
        str,
        typer.Option(
            help="Roles the head may pick, comma-separated among worker, thinker, verifier "
            "(worker required), e.g. --roles worker,thinker,verifier."
        ),
    ] = "worker",
    sample: Annotated[
        bool,
        typer.Option(
            help="Sample (model, role) in training rollouts, as the paper; default argmax."
        ),
    ] = ONLINE.sample,
    encoder: Annotated[str, typer.Option(help=ENCODER_HELP)] = ENCODER,
    resume: Annotated[bool, typer.Option(help="Continue from OUT/checkpoint.pkl.")] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Start a large run without asking (scripts): its estimate is printed, not "
            "confirmed.",
        ),
    ] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Train the TRINITY head on a pool: sep-CMA-ES on binary rewards, checkpoint per generation.

    A run of 2,000 rollouts or more (generations × popsize × minibatch; the defaults make
    102,400) first times a few probe rollouts and prints an estimate of its time, dollars and
    tokens; past 15 minutes or 5 USD it asks before starting (in a terminal), or needs --yes.
    Every rollout is traced as a run of kind `train` (`consortium traces list`).

    Example (replay pool, the in-distribution train splits):

      consortium train trinity --pool replay.toml --out policies/trinity \\
        --tasks replay:data=../shared/data/routerdc:split=train:\\
      datasets=mmlu,gsm8k,cmmlu,arc_challenge,humaneval
    """
    from consortium.core.progress import task_progress
    from consortium.train.trinity.estimate import Estimate, duration
    from consortium.train.trinity.fit import FitState, checkpoint_step
    from consortium.train.trinity.session import TrinityRequest, run_trinity_training

    request = TrinityRequest(
        pool,
        tasks,
        out,
        TrainConfig(
            generations=generations,
            popsize=popsize,
            sigma0=sigma0,
            minibatch=minibatch,
            seed=seed,
            sample=sample,
        ),
        optimizer=optimizer,
        encoder=encoder,
        components=components or None,
        max_turns=max_turns,
        roles=tuple(r for r in roles.split(",") if r),
        resume=resume,
        executor=executor,
        ray_address=ray_address,
        traces=traces,
    )
    config = request.config
    resumed = checkpoint_step(out / "checkpoint.pkl") if resume else None
    with task_progress(err_console) as progress:

        def encoding(description: str, total: int) -> Callable[[int], None]:
            bar = progress.add_task(description, total=total)
            return lambda n: progress.advance(bar, n)

        def ready(setup: HeadSetup) -> None:
            err_console.print(
                f"head: {len(setup.models)} model + 3 role outputs × {setup.encoder.dim}-d feature"
                f" = {setup.n_params:,} parameters · {protocol_line(setup)} · budget "
                f"{config.budget:,} rollouts ({config.generations} generations × "
                f"{config.popsize} candidates × {config.minibatch} tasks)"
            )
            if resumed is not None:
                err_console.print(f"resumed from generation {resumed} ({out / 'checkpoint.pkl'})")
            bars.append(progress.add_task(f"{optimizer} generations", total=generations))
            progress.update(bars[-1], completed=resumed or 0)
            per_generation = config.popsize * config.minibatch
            bars.append(progress.add_task("rollouts of the generation", total=per_generation))

        def rolled(_result: object) -> None:
            progress.advance(bars[-1])

        def estimated(estimate: Estimate) -> None:
            err_console.print(estimate.line())
            if not estimate.large or yes:
                return
            if not sys.stdin.isatty():
                raise ConsortiumError(
                    f"this run would take about {duration(estimate.seconds)} "
                    f"({estimate.usd:.2f} USD); pass --yes to start it, or lower --generations, "
                    "--popsize or --minibatch"
                )
            if not typer.confirm("start it?", default=False, err=True):
                raise ConsortiumError("not started")

        def show(state: FitState) -> None:
            row = state.history[-1]
            progress.update(
                bars[-2],
                completed=state.step,
                description=(
                    f"{optimizer} · reward {row['population_mean']:.3f} "
                    f"(best {row['population_best']:.3f})"
                ),
            )
            progress.reset(bars[-1], total=config.popsize * config.minibatch)

        bars: list[TaskID] = []
        trained = run_trinity_training(
            request,
            on_encoding=encoding,
            on_setup=ready,
            on_step=show,
            on_rollout=rolled,
            on_estimate=estimated,
        )
    console.print(
        f"policy written to {out} after {trained.state.step} generations "
        f"({trained.setup.n_params:,} parameters); curve: {out / 'curve.png'}"
    )


def protocol_line(setup: HeadSetup) -> str:
    """What the head is trained to do, in words: the start-up line's middle."""
    roles = ", ".join(setup.roles)
    if setup.max_turns == 1 and setup.roles == ("worker",):
        return "1 turn, role worker: a one-shot router (thinker, verifier unused)"
    return f"up to {setup.max_turns} turn(s), roles {roles}"


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
    from consortium.coord.trinity.policy import default_encoder
    from consortium.core.progress import task_progress
    from consortium.train.trinity.fit import FitState
    from consortium.train.trinity.recorded import OPTIMIZERS
    from consortium.train.trinity.routing import recorded_scores
    from consortium.train.trinity.routing import train_router as run_training

    if optimizer not in OPTIMIZERS:
        raise ConsortiumError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
    if reward not in ("recorded", "draw"):
        raise ConsortiumError("--reward must be recorded or draw")
    if warm_start not in ("imitation", "none"):
        raise ConsortiumError("--warm-start must be imitation or none")
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
    cache = default_encoder(encoder, features or out / "features.db")
    with task_progress(err_console) as progress:
        encoding = progress.add_task(f"encoding with {encoder}", total=len(task_set.tasks))
        steps = progress.add_task(f"{optimizer} on recorded outcomes", total=rollouts)

        def show(run: FitState) -> None:
            progress.update(steps, completed=run.rollouts)

        setup, run, decision = run_training(
            task_set.tasks,
            cache,
            config.names,
            recorded_models,
            out,
            training,
            description=tasks,
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
        f" ({optimizer}, warm start: {warm_start})"
    )
