"""`consortium train compare`: optimizers side by side at the same budget."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import console, err_console, train_app
from consortium.cli.options import (
    ComponentsOption,
    MinibatchOption,
    PoolOption,
    PopsizeOption,
    SigmaOption,
)
from consortium.pool.config import load_pool
from consortium.train.trinity.settings import COMPARISON


@train_app.command("compare")
def train_compare(
    pool: PoolOption,
    tasks: Annotated[str, typer.Option("--tasks", help="Training tasks (a --tasks spec).")],
    test_tasks: Annotated[str, typer.Option("--test-tasks", help="Held-out test tasks.")],
    out: Annotated[Path, typer.Option(help="Folder for the runs and the comparison report.")],
    seeds: Annotated[int, typer.Option(help="Seeds per optimizer.")] = 3,
    generations: Annotated[
        int, typer.Option(help="Generations (iterations) per run.")
    ] = COMPARISON.generations,
    popsize: PopsizeOption = COMPARISON.popsize,
    minibatch: MinibatchOption = COMPARISON.minibatch,
    sigma0: SigmaOption = COMPARISON.sigma0,
    components: ComponentsOption = 16,
) -> None:
    """sep-CMA-ES vs REINFORCE vs random search at the same budget, mean ± std over seeds."""
    from consortium.cli.task_sets import load_tasks
    from consortium.coord.trinity.policy import default_encoder
    from consortium.reports.optimizers import compare_optimizers, comparison_plot, comparison_table
    from consortium.train.trinity.session import fit_setup

    config = load_pool(pool)
    train, test = load_tasks(tasks), load_tasks(test_tasks)
    out.mkdir(parents=True, exist_ok=True)
    features = default_encoder(cache=out / "features.db")
    features.encode([t.question for t in test.tasks])
    setup = fit_setup(
        features, train, config.names, components=components or None, max_turns=1, roles=("worker",)
    )
    train_config = replace(
        COMPARISON, generations=generations, popsize=popsize, minibatch=minibatch, sigma0=sigma0
    )
    scores = asyncio.run(
        compare_optimizers(
            config,
            train,
            test,
            setup,
            out,
            train_config,
            list(range(seeds)),
            on_run=lambda s: err_console.print(
                f"{s.optimizer} seed {s.seed}: test mean {100 * s.test_mean:.1f}%"
            ),
        )
    )
    markdown, table = comparison_table(scores, train_config)
    table.update({"pool": f"{pool} ({train.description})", "train": tasks, "test": test_tasks})
    (out / "optimizers.json").write_text(json.dumps(table, indent=2))
    (out / "optimizers.md").write_text(
        f"# Optimizers for the TRINITY head\n\nPool: {table['pool']}\n\n"
        f"Train: `{tasks}`; test: `{test_tasks}`.\n\n{markdown}"
    )
    comparison_plot(table, out / "optimizers.png")
    console.print(markdown)
