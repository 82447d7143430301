"""REINFORCE on the head, at the evaluation budget of sep-CMA-ES: each iteration runs `popsize`
sampled rollouts of the current policy on the same minibatch and follows the score-function
gradient with a mean-reward baseline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from consortium.coord.trinity.policy import HeadSetup
from consortium.evaluate import TaskResult
from consortium.runtime.caller import Caller
from consortium.tasks.base import Grader, Task
from consortium.train.es import Progress, TrainConfig, TrainState
from consortium.train.rollouts import minibatch, score_vectors


def log_prob_gradient(setup: HeadSetup, vector: np.ndarray, result: TaskResult) -> np.ndarray:
    """d log π(trajectory) / d W for the turns of one rollout."""
    head = setup.head(vector)
    gradient = np.zeros_like(head.weights)
    for turn in result.meta.get("turns", []):
        p_model, p_role = head.probabilities(turn.feature, setup.roles)
        model_part = -p_model
        model_part[turn.model_index] += 1.0
        role_part = -p_role
        role_part[turn.role_index] += 1.0
        gradient[: head.n_models] += np.outer(model_part, turn.feature)
        gradient[head.n_models :] += np.outer(role_part, turn.feature)
    return gradient.reshape(-1)


async def train_reinforce(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    config: TrainConfig,
    *,
    learning_rate: float = 0.1,
    on_generation: Progress | None = None,
) -> TrainState:
    vector = np.zeros(setup.n_params)
    state = TrainState(config, 0, None, [], vector)
    for step in range(config.generations):
        batch = minibatch(tasks, config.minibatch, config.seed, step)
        seeds = state.candidate_seeds(sample=True)  # REINFORCE needs sampled actions
        results = await score_vectors(
            setup,
            [vector] * config.popsize,
            batch,
            grader,
            caller,
            sample_seeds=seeds,
            concurrency=config.concurrency,
        )
        flat = [r for row in results for r in row]
        rewards = np.array([float(r.grade.correct) for r in flat])
        advantages = rewards - rewards.mean()
        gradient = sum(
            (
                a * log_prob_gradient(setup, vector, r)
                for a, r in zip(advantages, flat, strict=True)
                if a != 0
            ),
            start=np.zeros(setup.n_params),
        )
        vector = vector + learning_rate * gradient / len(flat)
        per_rollout = rewards.reshape(config.popsize, len(batch)).mean(axis=1)
        state.advance(vector, per_rollout, len(batch))
        if on_generation is not None:
            on_generation(state)
    return state
