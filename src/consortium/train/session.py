"""`consortium train trinity`: encode the training questions, fit the feature standardizer, run the
chosen optimizer with a checkpoint and the policy saved after every generation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from consortium.config import PoolConfig
from consortium.coord.trinity.encoder import CachedEncoder, StandardizedEncoder, Standardizer
from consortium.coord.trinity.policy import HeadSetup, save_policy
from consortium.pool import Pool
from consortium.runtime.cache import ResponseCache
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.tasks.base import TaskSet
from consortium.train.fit import FitState
from consortium.train.online import train_online
from consortium.train.optimizers import TITLES
from consortium.train.rollouts import write_curve
from consortium.train.settings import TrainConfig


def fit_setup(
    encoder: CachedEncoder,
    task_set: TaskSet,
    models: list[str],
    *,
    components: int | None,
    max_turns: int,
    roles: tuple[str, ...],
    on_encoded: Callable[[int], None] | None = None,
) -> HeadSetup:
    """Encode the training questions (in chunks, reporting each) and fit the standardizer."""
    questions = [task.question for task in task_set.tasks]
    chunks = []
    for start in range(0, len(questions), 256):
        chunks.append(encoder.encode(questions[start : start + 256]))
        if on_encoded is not None:
            on_encoded(len(chunks[-1]))
    features = np.concatenate(chunks) if chunks else np.zeros((0, encoder.dim))
    standardizer = Standardizer.fit(features, components)
    return HeadSetup(StandardizedEncoder(encoder, standardizer), models, max_turns, roles)


async def train_trinity(
    pool_config: PoolConfig,
    task_set: TaskSet,
    setup: HeadSetup,
    out_dir: Path,
    config: TrainConfig,
    *,
    optimizer: str = "es",
    resume: bool = False,
    on_generation: Callable[[FitState], None] | None = None,
    cache_path: Path | None = None,
    executor: Executor = LocalExecutor(),
) -> FitState:
    """Train into `out_dir`; rollouts' responses are cached in `cache_path` (default
    OUT/responses.db), which runs over the same pool and tasks may share. On a remote executor
    each candidate's rollouts run as one job, without the cache. A checkpoint after every
    generation (OUT/checkpoint.pkl) lets `resume` continue."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = ResponseCache(cache_path or out_dir / "responses.db")

    def after(state: FitState) -> None:
        save_policy(
            out_dir,
            state.vector,
            setup,
            {
                "optimizer": optimizer,
                "generation": state.step,
                "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
                "budget_rollouts": config.budget,
                "tasks": task_set.description,
            },
        )
        write_curve(state.history, out_dir, f"TRINITY head, {TITLES[optimizer]}")
        if on_generation is not None:
            on_generation(state)

    async with Pool(pool_config) as pool:
        caller = Caller(pool, None, "train", cache=cache)
        state = await train_online(
            setup,
            task_set.tasks,
            task_set.grader,
            caller,
            config,
            optimizer=optimizer,
            checkpoint=out_dir / "checkpoint.pkl",
            resume=resume,
            on_step=after,
            executor=executor,
        )
    cache.close()
    return state
