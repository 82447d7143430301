"""Random search on the head, at the evaluation budget of sep-CMA-ES: each iteration draws
`popsize` weight vectors from U[-0.5, 0.5] (the paper's), scores them on the minibatch, and keeps
the best vector seen."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from consortium.coord.trinity.policy import HeadSetup
from consortium.runtime.caller import Caller
from consortium.tasks.base import Grader, Task
from consortium.train.es import Progress, TrainConfig, TrainState, score_generation
from consortium.train.rollouts import generation_seed


async def train_random_search(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    config: TrainConfig,
    *,
    on_generation: Progress | None = None,
) -> TrainState:
    best_vector, best_reward = np.zeros(setup.n_params), -1.0
    state = TrainState(config, 0, None, [], best_vector)
    for step in range(config.generations):
        rng = np.random.default_rng(generation_seed(config.seed, step))
        candidates = [rng.uniform(-0.5, 0.5, setup.n_params) for _ in range(config.popsize)]
        rewards, batch = await score_generation(setup, candidates, tasks, grader, caller, state)
        index = int(np.argmax(rewards))
        if rewards[index] > best_reward:
            best_vector, best_reward = candidates[index], float(rewards[index])
        state.advance(best_vector, rewards, len(batch))
        if on_generation is not None:
            on_generation(state)
    return state
