"""The optimizer table in the paper's own setting (multi-turn, binary reward at λ = 0): sep-CMA-ES,
REINFORCE, random search and imitation of the best short trajectory, several seeds, the same
number of episodes for the three that spend rollouts, scored on the test split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from consortium.evaluation.recorded.episodes import Episodes
from consortium.train.recorded_turns import Budget, mean_reward, run_head, train_head

OPTIMIZER_NAMES = {
    "es": "sep-CMA-ES",
    "reinforce": "REINFORCE (Adam, mean-reward baseline)",
    "random": "random search (U[-0.5, 0.5], best kept)",
    "imitation": "imitation of each question's best ≤2-turn trajectory",
}


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
    for name, title in OPTIMIZER_NAMES.items():
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
