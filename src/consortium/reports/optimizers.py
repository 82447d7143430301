"""The TRINITY head's optimizers compared, in both settings, with one list of titles
(`optimizers.TITLES`):

- on a pool (`consortium train compare`): sep-CMA-ES vs REINFORCE vs random search at the same
  evaluation budget, over several seeds; each trained head is scored greedily on held-out test
  tasks; mean ± std per optimizer;
- on recorded turns (the coordination report's `--optimizer-table`, the paper's own setting:
  multi-turn, binary reward at λ = 0): the same three and imitation of the best short trajectory,
  several seeds, the same number of episodes for the three that spend rollouts, scored on the
  test split."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.policy import HeadSetup
from consortium.evaluation.recorded.episodes import Episodes
from consortium.evaluation.results import summarise
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.runtime.caller import Caller
from consortium.tasks.base import TaskSet
from consortium.train.trinity.optimizers import OPTIMIZERS, TITLES
from consortium.train.trinity.recorded_turns import Budget, mean_reward, run_head, train_head
from consortium.train.trinity.session import train_trinity
from consortium.train.trinity.settings import TrainConfig


@dataclass
class RunScore:
    optimizer: str
    seed: int
    test_mean: float
    per_dataset: dict[str, float]


async def compare_optimizers(
    pool_config: PoolConfig,
    train: TaskSet,
    test: TaskSet,
    setup: HeadSetup,
    out_dir: Path,
    config: TrainConfig,
    seeds: Sequence[int],
    *,
    on_run: Callable[[RunScore], None] | None = None,
) -> list[RunScore]:
    scores: list[RunScore] = []
    for optimizer in OPTIMIZERS:
        for seed in seeds:
            run_dir = out_dir / f"{optimizer}-seed{seed}"
            state = await train_trinity(
                pool_config,
                train,
                setup,
                run_dir,
                replace(config, seed=seed),
                optimizer=optimizer,
                cache_path=out_dir / "responses.db",
            )
            async with Pool(pool_config) as pool:
                caller = Caller(pool, None, "compare")
                results = await run_policy(
                    setup.coordinator(state.vector, None, optimizer),
                    test.tasks,
                    test.grader,
                    caller,
                )
            summary = summarise(optimizer, results)
            score = RunScore(
                optimizer, seed, statistics.fmean(summary.accuracy.values()), summary.accuracy
            )
            scores.append(score)
            if on_run is not None:
                on_run(score)
    return scores


def comparison_table(scores: Sequence[RunScore], config: TrainConfig) -> tuple[str, dict[str, Any]]:
    """Markdown and JSON: mean ± std of the test mean (over datasets) per optimizer."""
    rows: dict[str, Any] = {}
    lines = [
        f"Same budget per run: {config.generations} generations x {config.popsize} candidates x "
        f"{config.minibatch} tasks = {config.budget:,} rollouts.",
        "",
        "| optimizer | test mean (%) | runs |",
        "|---|---|---|",
    ]
    for optimizer in OPTIMIZERS:
        values = [s.test_mean for s in scores if s.optimizer == optimizer]
        if not values:
            continue
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        rows[optimizer] = {
            "mean": statistics.fmean(values),
            "std": std,
            "runs": values,
            "seeds": [s.seed for s in scores if s.optimizer == optimizer],
        }
        lines.append(
            f"| {TITLES[optimizer]} | {100 * statistics.fmean(values):.1f} ± "
            f"{100 * std:.1f} | {len(values)} |"
        )
    return "\n".join(lines) + "\n", {"budget_rollouts": config.budget, "optimizers": rows}


def comparison_plot(table: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(table["optimizers"])
    means = [100 * table["optimizers"][n]["mean"] for n in names]
    stds = [100 * table["optimizers"][n]["std"] for n in names]
    figure, axis = plt.subplots(figsize=(5, 3.2))
    axis.bar([TITLES[n] for n in names], means, yerr=stds, capsize=6, color="#4c72b0")
    axis.set_ylabel("test accuracy, mean over datasets (%)")
    axis.set_ylim(min(means) - 10, max(means) + 5)
    axis.set_title(f"Same budget: {table['budget_rollouts']:,} rollouts")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


RECORDED_SETUP = {
    "es": "",
    "reinforce": " (Adam, mean-reward baseline)",
    "random": " (U[-0.5, 0.5], best kept)",
    "imitation": " of each question's best ≤2-turn trajectory",
}
"""How each optimizer is set up on recorded turns, told after its title in that table."""


def optimizer_table(
    episodes: Episodes,
    cost_unit: float,
    budget: Budget,
    seeds: Sequence[int] = (0, 1, 2),
    lam: float = 0.0,
) -> list[dict[str, Any]]:
    table = episodes.table
    train, test = table.indices("train"), table.indices("test")
    rows = []
    for name, detail in RECORDED_SETUP.items():
        title = TITLES[name] + detail
        accuracies, rewards, costs = [], [], []
        for seed in seeds:
            weights = train_head(episodes, train, name, lam, cost_unit, budget, seed)
            run = run_head(episodes, weights, title)
            accuracies.append(100 * float(run.correct[test].mean()))
            costs.append(float(run.cost[test].mean()) / cost_unit)
            rewards.append(mean_reward(episodes, weights, test, lam, cost_unit))
        rows.append(
            {
                "optimizer": title,
                "episodes": 0 if name == "imitation" else budget.episodes,
                "seeds": list(seeds),
                "accuracy": accuracies,
                "accuracy_mean": float(np.mean(accuracies)),
                "accuracy_sd": float(np.std(accuracies)),
                "reward_mean": float(np.mean(rewards)),
                "cost_vs_best_single_mean": float(np.mean(costs)),
            }
        )
    return rows
