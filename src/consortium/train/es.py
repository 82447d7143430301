"""sep-CMA-ES on the head's weights (`cmaes.SepCMA`): each candidate is scored on a minibatch of
training tasks with binary reward; all rollouts of a generation run concurrently; a checkpoint
after every generation makes `--resume` continue exactly where a killed run stopped."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from cmaes import SepCMA

from consortium.coord.trinity.policy import HeadSetup
from consortium.errors import ConfigError
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor
from consortium.tasks.base import Grader, Task
from consortium.train.rollouts import (
    RemoteRollouts,
    generation_seed,
    mean_rewards,
    minibatch,
    score_vectors,
)


@dataclass(frozen=True)
class TrainConfig:
    generations: int = 30
    popsize: int = 32
    sigma0: float = 0.03
    minibatch: int = 32
    seed: int = 0
    sample: bool = False
    """Sample (model, role) in training rollouts as the paper does; False: argmax, less noise."""
    concurrency: int = 64

    @property
    def budget(self) -> int:
        """Rollouts (atomic Bernoulli evaluations) spent on candidates."""
        return self.generations * self.popsize * self.minibatch


@dataclass
class TrainState:
    config: TrainConfig
    generation: int
    optimizer: Any
    history: list[dict[str, float]]
    vector: np.ndarray
    """The policy so far (for sep-CMA-ES, the distribution's mean)."""

    def advance(self, vector: np.ndarray, rewards: np.ndarray, batch_size: int) -> None:
        """Close a generation: the new policy, and a curve row from each candidate's reward."""
        self.vector = vector
        self.generation += 1
        self.history.append(
            {
                "generation": self.generation,
                "population_mean": float(rewards.mean()),
                "population_best": float(rewards.max()),
                "rollouts": float(self.generation * self.config.popsize * batch_size),
            }
        )

    def candidate_seeds(self, sample: bool) -> list[int | None]:
        """Per-candidate seeds of sampled rollouts this generation; None: argmax rollouts."""
        step = self.generation
        return [
            generation_seed(self.config.seed, step, i + 1) if sample else None
            for i in range(self.config.popsize)
        ]


Progress = Callable[[TrainState], None]


async def score_generation(
    setup: HeadSetup,
    candidates: Sequence[np.ndarray],
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    state: TrainState,
    executor: Executor | None = None,
) -> tuple[np.ndarray, list[Task]]:
    """Each candidate's mean reward on this generation's minibatch, and the minibatch; with an
    executor, each candidate's rollouts are one job (e.g. on a Ray worker)."""
    config = state.config
    batch = minibatch(tasks, config.minibatch, config.seed, state.generation)
    seeds = state.candidate_seeds(config.sample)
    if executor is not None:
        job = RemoteRollouts.of(setup, batch, grader, caller, config.concurrency)
        correct = await asyncio.to_thread(
            executor.map, job, list(zip(candidates, seeds, strict=True))
        )
        return np.array([np.mean(row) for row in correct]), batch
    results = await score_vectors(
        setup, candidates, batch, grader, caller, sample_seeds=seeds, concurrency=config.concurrency
    )
    return mean_rewards(results), batch


def _save(path: Path, state: TrainState) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(pickle.dumps(state))
    temporary.replace(path)  # atomic: a kill leaves the old checkpoint or the new one


def load_checkpoint(path: Path, config: TrainConfig) -> TrainState:
    state: TrainState = pickle.loads(path.read_bytes())
    mismatched = {
        k: (v, getattr(config, k))
        for k, v in asdict(state.config).items()
        if k not in ("generations", "concurrency") and getattr(config, k) != v
    }
    if mismatched:
        details = ", ".join(f"{k}: checkpoint {a} vs now {b}" for k, (a, b) in mismatched.items())
        raise ConfigError(f"--resume with different settings ({details})")
    state.config = config
    return state


async def train_es(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    config: TrainConfig,
    checkpoint: Path | None = None,
    *,
    resume: bool = False,
    on_generation: Progress | None = None,
    init: np.ndarray | None = None,
    executor: Executor | None = None,
) -> TrainState:
    """`init`: the starting mean (a warm start from an earlier policy); default zeros."""
    if resume and checkpoint is not None and checkpoint.exists():
        state = load_checkpoint(checkpoint, config)
    else:
        start = np.zeros(setup.n_params) if init is None else np.asarray(init, dtype=float)
        if start.shape != (setup.n_params,):
            raise ConfigError(f"warm start has {start.size} weights, the head {setup.n_params}")
        optimizer = SepCMA(
            mean=start,
            sigma=config.sigma0,
            population_size=config.popsize,
            seed=config.seed,
        )
        state = TrainState(config, 0, optimizer, [], start.copy())
    optimizer = state.optimizer
    while state.generation < config.generations:
        step = state.generation
        # cmaes does not pickle its RNG; reseeding per generation keeps resumed runs identical.
        optimizer.reseed_rng(generation_seed(config.seed, step))
        candidates = [optimizer.ask() for _ in range(config.popsize)]
        rewards, batch = await score_generation(
            setup, candidates, tasks, grader, caller, state, executor
        )
        optimizer.tell([(c, -float(r)) for c, r in zip(candidates, rewards, strict=True)])
        state.advance(np.array(optimizer.mean), rewards, len(batch))
        if checkpoint is not None:
            _save(checkpoint, state)
        if on_generation is not None:
            on_generation(state)
    return state
