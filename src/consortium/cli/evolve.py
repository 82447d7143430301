"""`consortium evolve`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import app, console, err_console
from consortium.cli.options import (
    DEFAULT_TRACES,
    ExecutorOption,
    PoolOption,
    RayAddressOption,
    TracesOption,
    in_range,
)
from consortium.core.errors import ConsortiumError

if TYPE_CHECKING:
    from consortium.evolve.guards import GuardConfig
    from consortium.evolve.state import RoundSummary


@app.command()
def evolve(
    pool: PoolOption,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Tuning tasks (proposals are tuned here), e.g. "
            "replay:data=DIR:source=routerbench:split=train",
        ),
    ],
    out: Annotated[Path, typer.Option(help="Folder for state.json, report.md and the PNGs.")],
    heldout: Annotated[
        str | None,
        typer.Option(
            help="Held-out tasks the guards judge on (never tuned on). Default: half of --tasks, "
            "split by task id."
        ),
    ] = None,
    final: Annotated[
        str | None,
        typer.Option(
            help="Tasks no decision may see, for the final comparison of the first and the "
            "final strategy (e.g. the test split). Default: the held-out pool."
        ),
    ] = None,
    rounds: Annotated[
        int,
        typer.Option(
            help="Rounds to run (a resumed loop runs up to this).", callback=in_range("--rounds", 1)
        ),
    ] = 5,
    start: Annotated[
        str | None,
        typer.Option(
            help="The first strategy's policy, e.g. single:NAME. Default: the single model most "
            "accurate on the first tuning batch."
        ),
    ] = None,
    batch: Annotated[
        int, typer.Option(help="Tuning tasks per round.", callback=in_range("--batch", 1))
    ] = 200,
    heldout_batch: Annotated[
        int,
        typer.Option(help="Held-out tasks per round.", callback=in_range("--heldout-batch", 1)),
    ] = 400,
    proposers: Annotated[
        str, typer.Option(help="Proposers to run each round, comma-separated.")
    ] = "cluster-specialists,escalation,templates,prune,retrain-trinity,answer-aware",
    retrain_generations: Annotated[
        int,
        typer.Option(
            help="sep-CMA-ES generations per warm-started TRINITY retraining (retrain-trinity)."
        ),
    ] = 3,
    answer_samples: Annotated[
        int,
        typer.Option(
            help="Samples per model the answer-aware proposer asks on the tuning tasks (the "
            "most its policies ask one model; 1: the first samples the round measures anyway).",
            callback=in_range("--answer-samples", 1),
        ),
    ] = 3,
    test: Annotated[
        str, typer.Option(help="Paired test of the guards: sign or bootstrap.")
    ] = "sign",
    alpha: Annotated[float, typer.Option(help="Significance level of the guards.")] = 0.05,
    margin: Annotated[
        float, typer.Option(help="Held-out accuracy gain (fraction) a change must exceed.")
    ] = 0.0,
    cheaper_by: Annotated[
        float,
        typer.Option(help="Saving (fraction of cost) that admits a change no less accurate."),
    ] = 0.2,
    noninferiority: Annotated[
        float,
        typer.Option(
            help="Accuracy (fraction) a cheaper change may lose at most: the exact lower "
            "bound of its held-out wins less the upper bound of its losses (shares of tasks, 95% "
            "together) must stay above minus this."
        ),
    ] = 0.02,
    tolerance: Annotated[
        float,
        typer.Option(help="Accuracy (fraction) a cheaper proposal may give up on tuning tasks."),
    ] = 0.01,
    cost: Annotated[
        str,
        typer.Option(
            help="What cost means for --cheaper-by, --max-cost-per-task, the report and the "
            "Pareto plot: usd (the pool's prices), tokens, or seconds (wall time per task). A "
            "pool with prices of 0 (local models) wants tokens or seconds."
        ),
    ] = "usd",
    max_cost_per_task: Annotated[
        float | None,
        typer.Option(help="Cap on a strategy's mean cost per task, in the --cost measure."),
    ] = None,
    max_calls_per_task: Annotated[
        int, typer.Option(help="Cap on calls per task (hard: no task may exceed it).")
    ] = 8,
    final_limit: Annotated[
        int | None,
        typer.Option(help="Held-out tasks per dataset in the final comparison (default: all)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the batches and the bootstrap.")] = 0,
    concurrency: Annotated[
        int, typer.Option(help="Tasks in flight at once.", callback=in_range("--concurrency", 1))
    ] = 32,
    resume: Annotated[bool, typer.Option(help="Continue the loop in OUT.")] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    traces: TracesOption = DEFAULT_TRACES,
) -> None:
    """Improve how the ensemble works, round after round, guarded by held-out evidence.

    Each round runs the current strategy on a tuning batch and a held-out batch, measures the
    collaboration (accuracy, calls, cost, escalations, disagreement, who answered right),
    proposes changes from the tuning batch (per-cluster models, cost-aware escalation with learned
    thresholds, pruning, answer-aware votes and cascades) and adopts one only if it beats the
    incumbent on the held-out batch (paired test) within the caps. Writes OUT/report.md,
    OUT/rounds.png, OUT/pareto.png; the strategies and evidence also go to the trace database.
    An adopted answer-aware policy is written as a policy folder (OUT/adopted/round-N/CLUSTER)
    that serve --policy takes.

    Example (replay pool, RouterBench's 11 priced models; the train split halved into tuning and
    held-out tasks, the test split kept for the final comparison):

      consortium evolve --pool replay.toml --out out/evolve --rounds 5 \\
        --tasks replay:data=DIR:source=routerbench:split=train \\
        --final replay:data=DIR:source=routerbench:split=test
    """
    from consortium.evolve.loop import EvolveConfig
    from consortium.evolve.session import EvolveRequest, run_evolve

    caps = (max_cost_per_task, max_calls_per_task)
    guard = _guard_config(test, cost, alpha, margin, cheaper_by, noninferiority, caps, seed)
    request = EvolveRequest(
        pool=pool,
        tasks=tasks,
        out=out,
        heldout=heldout,
        final=final,
        start=start,
        proposers=tuple(name for name in proposers.split(",") if name),
        tolerance=tolerance,
        retrain_generations=retrain_generations,
        answer_samples=answer_samples,
        loop=EvolveConfig(
            rounds=rounds,
            tuning_batch=batch,
            heldout_batch=heldout_batch,
            seed=seed,
            concurrency=concurrency,
            final_limit=final_limit,
            guard=guard,
        ),
        resume=resume,
        executor=executor,
        ray_address=ray_address,
        traces=traces,
    )
    _state, report = run_evolve(request, on_round=_show_round, on_note=_note)
    console.print(f"report: {report} (rounds.png, pareto.png beside it)")


def _guard_config(
    test: str,
    cost: str,
    alpha: float,
    margin: float,
    cheaper_by: float,
    noninferiority: float,
    caps: tuple[float | None, float | None],
    seed: int,
) -> GuardConfig:
    """The guards' settings (`caps`: cost and calls per task); a test or cost measure the guards
    do not know is one line."""
    from consortium.core.costs import COST_MEASURES
    from consortium.evolve.guards import GuardConfig

    if test not in ("sign", "bootstrap"):
        raise ConsortiumError("--test must be sign or bootstrap")
    if cost not in COST_MEASURES:
        raise ConsortiumError(f"--cost must be one of {', '.join(COST_MEASURES)}")
    return GuardConfig(
        alpha=alpha,
        margin=margin,
        test=test,  # type: ignore[arg-type]
        cheaper_by=cheaper_by,
        noninferiority=noninferiority,
        max_cost_per_task=caps[0],
        max_calls_per_task=caps[1],
        seed=seed,
        cost=cost,
    )


def _show_round(summary: RoundSummary) -> None:
    heldout_row = summary.heldout
    err_console.print(
        f"round {summary.round}: held-out {100 * heldout_row.accuracy:.1f}% at "
        f"{heldout_row.cost_per_task:.2e} USD, {heldout_row.tokens_per_task:,.0f} tokens, "
        f"{heldout_row.seconds_per_task:.1f} s per task; adopted: {summary.adopted or 'none'}"
    )


def _note(line: str) -> None:
    err_console.print(f"  {time.strftime('%H:%M:%S')} {line}", markup=False, highlight=False)
