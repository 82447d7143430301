"""`consortium train trinity`: the TRINITY head, trained on a pool's rollouts."""

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
from consortium.train.trinity.settings import (
    ENCODER_HELP,
    TrainConfig,
)

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from consortium.coord.trinity.policy import HeadSetup
    from consortium.train.trinity.estimate import Estimate
    from consortium.train.trinity.fit import FitState
    from consortium.train.trinity.session import TrinityRequest, TrinityTraining

ONLINE = TrainConfig()


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
    from consortium.train.trinity.fit import checkpoint_step
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
    resumed = checkpoint_step(out / "checkpoint.pkl") if resume else None
    with task_progress(err_console) as progress:
        shown = _TrinityProgress(progress, request, resumed, yes)
        trained = run_trinity_training(
            request,
            on_encoding=shown.encoding,
            on_setup=shown.ready,
            on_step=shown.show,
            on_rollout=shown.rolled,
            on_estimate=shown.estimated,
        )
    _print_trained(trained, out)


def _print_trained(trained: TrinityTraining, out: Path) -> None:
    console.print(
        f"policy written to {out} after {trained.state.step} generations "
        f"({trained.setup.n_params:,} parameters); curve: {out / 'curve.png'}"
    )


class _TrinityProgress:
    """The training's callbacks on stderr: a bar while the tasks are encoded, the head's size,
    the estimate (asking before a large run), a bar of generations and one of the generation's
    rollouts."""

    def __init__(
        self, progress: Progress, request: TrinityRequest, resumed: int | None, yes: bool
    ) -> None:
        self.progress = progress
        self.request = request
        self.resumed = resumed
        self.yes = yes
        self.bars: list[TaskID] = []

    def encoding(self, description: str, total: int) -> Callable[[int], None]:
        bar = self.progress.add_task(description, total=total)
        return lambda n: self.progress.advance(bar, n)

    def ready(self, setup: HeadSetup) -> None:
        config, out, progress = self.request.config, self.request.out, self.progress
        err_console.print(
            f"head: {len(setup.models)} model + 3 role outputs × {setup.encoder.dim}-d feature"
            f" = {setup.n_params:,} parameters · {protocol_line(setup)} · budget "
            f"{config.budget:,} rollouts ({config.generations} generations × "
            f"{config.popsize} candidates × {config.minibatch} tasks)"
        )
        if self.resumed is not None:
            err_console.print(f"resumed from generation {self.resumed} ({out / 'checkpoint.pkl'})")
        generations = f"{self.request.optimizer} generations"
        self.bars.append(progress.add_task(generations, total=config.generations))
        progress.update(self.bars[-1], completed=self.resumed or 0)
        per_generation = config.popsize * config.minibatch
        self.bars.append(progress.add_task("rollouts of the generation", total=per_generation))

    def rolled(self, _result: object) -> None:
        self.progress.advance(self.bars[-1])

    def estimated(self, estimate: Estimate) -> None:
        from consortium.train.trinity.estimate import duration

        err_console.print(estimate.line())
        if not estimate.large or self.yes:
            return
        if not sys.stdin.isatty():
            raise ConsortiumError(
                f"this run would take about {duration(estimate.seconds)} "
                f"({estimate.usd:.2f} USD); pass --yes to start it, or lower --generations, "
                "--popsize or --minibatch"
            )
        if not typer.confirm("start it?", default=False, err=True):
            raise ConsortiumError("not started")

    def show(self, state: FitState) -> None:
        row = state.history[-1]
        config = self.request.config
        self.progress.update(
            self.bars[-2],
            completed=state.step,
            description=(
                f"{self.request.optimizer} · reward {row['population_mean']:.3f} "
                f"(best {row['population_best']:.3f})"
            ),
        )
        self.progress.reset(self.bars[-1], total=config.popsize * config.minibatch)


def protocol_line(setup: HeadSetup) -> str:
    """What the head is trained to do, in words: the start-up line's middle."""
    roles = ", ".join(setup.roles)
    if setup.max_turns == 1 and setup.roles == ("worker",):
        return "1 turn, role worker: a one-shot router (thinker, verifier unused)"
    return f"up to {setup.max_turns} turn(s), roles {roles}"
