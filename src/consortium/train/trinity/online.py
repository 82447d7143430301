"""Training the TRINITY head online: every rollout is a coordinator run on a pool of model
endpoints, graded with a binary reward; all rollouts of a step run concurrently, or each
candidate's as one job on an executor (e.g. Ray)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.policy import HeadSetup
from consortium.evaluation.results import TaskResult
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.tasks.base import Grader, Task
from consortium.train.trinity.fit import FitState, Progress, Schedule, fit, generation_seed
from consortium.train.trinity.optimizers import Outcome, make_optimizer
from consortium.train.trinity.rollouts import mean_rewards, minibatch, rollouts_work
from consortium.train.trinity.settings import TrainConfig


def schedule(config: TrainConfig) -> Schedule:
    return Schedule(
        config.generations,
        config.popsize,
        config.minibatch,
        config.seed,
        config.seeding,
        "generation",
    )


def log_prob_gradient(setup: HeadSetup, vector: np.ndarray, result: TaskResult) -> np.ndarray:
    """d log π(trajectory) / d W for the turns of one rollout."""
    head = setup.head(vector)
    gradient = np.zeros_like(head.weights)
    for turn in result.outcome.turns if result.outcome else ():
        p_model, p_role = head.probabilities(turn.feature, setup.roles)
        model_part = -p_model
        model_part[turn.model_index] += 1.0
        role_part = -p_role
        role_part[turn.role_index] += 1.0
        gradient[: head.n_models] += np.outer(model_part, turn.feature)
        gradient[head.n_models :] += np.outer(role_part, turn.feature)
    return gradient.reshape(-1)


@dataclass
class OnlineObjective:
    setup: HeadSetup
    tasks: Sequence[Task]
    grader: Grader
    caller: Caller
    config: TrainConfig
    executor: Executor = field(default_factory=LocalExecutor)
    on_rollout: Callable[[TaskResult], None] | None = None
    """Called after each finished rollout (in this process; a remote job reports nothing)."""

    @property
    def n_params(self) -> int:
        return self.setup.n_params

    def batch(self, size: int, step: int, rng: np.random.Generator) -> list[Task]:
        return minibatch(self.tasks, size, self.config.seed, step)

    async def score(
        self,
        candidates: np.ndarray,
        batch: Sequence[Task],
        step: int,
        rng: np.random.Generator,
        *,
        sampled: bool,
    ) -> Outcome:
        """Sampled rollouts are seeded per (seed, step, candidate); on a remote executor, each
        candidate's rollouts are one job."""
        seeds = [
            generation_seed(self.config.seed, step, i + 1)
            if self.config.sample or sampled
            else None
            for i in range(len(candidates))
        ]
        work = rollouts_work(
            self.setup,
            batch,
            self.grader,
            self.caller,
            self.config.concurrency,
            name=f"generation {step + 1}",
            on_done=self.on_rollout,
        )
        results = await self.executor.run(work, list(zip(candidates, seeds, strict=True)))
        if not sampled:
            return Outcome(mean_rewards(results))
        flat = [(vector, r) for vector, row in zip(candidates, results, strict=True) for r in row]
        rewards = np.array([float(r.grade.correct) for _, r in flat])
        advantages = rewards - rewards.mean()
        gradient = sum(
            (
                a * log_prob_gradient(self.setup, vector, r)
                for a, (vector, r) in zip(advantages, flat, strict=True)
                if a != 0
            ),
            start=np.zeros(self.setup.n_params),
        )
        return Outcome(mean_rewards(results), gradient, len(flat))


def resume_settings(config: TrainConfig, optimizer: str) -> dict[str, Any]:
    """What a resumed run must share with the checkpoint (more generations are fine)."""
    fixed = {k: v for k, v in asdict(config).items() if k not in ("generations", "concurrency")}
    return {"optimizer": optimizer, **fixed}


async def train_online(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    config: TrainConfig,
    *,
    optimizer: str = "es",
    checkpoint: Path | None = None,
    resume: bool = False,
    on_step: Progress | None = None,
    init: np.ndarray | None = None,
    executor: Executor = LocalExecutor(),
    on_rollout: Callable[[TaskResult], None] | None = None,
) -> FitState:
    """`config.generations` steps of `optimizer` (es, reinforce or random); `init`: the start
    (a warm start from an earlier policy), default zeros."""
    objective = OnlineObjective(setup, tasks, grader, caller, config, executor, on_rollout)
    return await fit(
        objective,
        lambda start: make_optimizer(optimizer, start, config),
        schedule(config),
        resume_settings(config, optimizer),
        init=init,
        checkpoint=checkpoint,
        resume=resume,
        on_step=on_step,
    )
