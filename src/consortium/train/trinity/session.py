"""`consortium train trinity` as one library call: `run_trinity_training(TrinityRequest(...))`
encodes the training questions, fits the feature standardizer, and runs the chosen optimizer with
a checkpoint and the policy saved after every generation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from consortium.coord.trinity.defaults import ENCODER
from consortium.coord.trinity.encoder import (
    CachedEncoder,
    StandardizedEncoder,
    Standardizer,
)
from consortium.coord.trinity.policy import HeadSetup, default_encoder, save_policy
from consortium.core.errors import ConfigError
from consortium.evaluation.results import TaskResult
from consortium.pool import Pool
from consortium.pool.config import PoolConfig, load_pool
from consortium.runtime.cache import ResponseCache
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor, make_executor
from consortium.runtime.store import DEFAULT_TRACES, TraceStore
from consortium.tasks.base import TaskSet
from consortium.tasks.registry import load_task_set
from consortium.train.trinity.estimate import LARGE_BUDGET, Estimate, pool_concurrency, probe
from consortium.train.trinity.fit import FitState, checkpoint_step
from consortium.train.trinity.online import train_online
from consortium.train.trinity.optimizers import OPTIMIZERS, TITLES
from consortium.train.trinity.rollouts import write_curve
from consortium.train.trinity.settings import TrainConfig


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
    store: TraceStore | None = None,
    run_id: str = "train",
    on_rollout: Callable[[TaskResult], None] | None = None,
    on_estimate: Callable[[Estimate], None] | None = None,
) -> FitState:
    """Train into `out_dir`; rollouts' responses are cached in `cache_path` (default
    OUT/responses.db), which runs over the same pool and tasks may share. On a remote executor
    each candidate's rollouts run as one job, without the cache. A checkpoint after every
    generation (OUT/checkpoint.pkl) lets `resume` continue. With `store`, every rollout's calls
    and results are traced under `run_id`. With `on_estimate`, a run of `LARGE_BUDGET` rollouts
    or more is first probed (`train.trinity.estimate`) and the estimate handed over; the callback
    may raise to stop the run before it starts."""
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
        caller = Caller(pool, store, run_id, cache=cache)
        if on_estimate is not None and config.budget >= LARGE_BUDGET:
            concurrency = pool_concurrency(pool_config, config.concurrency)
            on_estimate(
                await probe(
                    setup,
                    task_set.tasks,
                    task_set.grader,
                    caller,
                    budget=config.budget,
                    concurrency=concurrency,
                )
            )
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
            on_rollout=on_rollout,
        )
    cache.close()
    return state


@dataclass(frozen=True)
class TrinityRequest:
    """What `consortium train trinity` trains, with the command's defaults: the pool file, the
    training tasks (a `--tasks` spec), the policy folder, the optimizer and its settings, and
    the head (encoder, feature axes, turns, roles)."""

    pool: Path
    tasks: str
    out: Path
    config: TrainConfig = field(default_factory=TrainConfig)
    optimizer: str = "es"
    encoder: str = ENCODER
    components: int | None = 16
    """Principal axes of the standardized feature; None: the full feature."""
    max_turns: int = 1
    roles: tuple[str, ...] = ("worker",)
    resume: bool = False
    executor: str = "local"
    ray_address: str | None = None
    traces: str = DEFAULT_TRACES
    """Trace store: the run (kind `train`) and every rollout's calls and results."""


@dataclass
class TrinityTraining:
    state: FitState
    """The trained head (`state.vector`) and its curve (`state.history`)."""
    setup: HeadSetup
    out: Path


Stage = Callable[[str, int], Callable[[int], None]]
"""`stage(description, total)` is called before the encoding and returns the function called
with each chunk's size."""


def run_trinity_training(
    request: TrinityRequest,
    *,
    on_encoding: Stage | None = None,
    on_setup: Callable[[HeadSetup], None] | None = None,
    on_step: Callable[[FitState], None] | None = None,
    on_rollout: Callable[[TaskResult], None] | None = None,
    on_estimate: Callable[[Estimate], None] | None = None,
) -> TrinityTraining:
    """Train the head into `request.out` (policy, curve and checkpoint after every step);
    progress comes through the callbacks: the encoding, the head once built, the estimate of a
    large run (which may raise to stop it), each rollout, each step. The run and its rollouts
    are traced as a run of kind `train`."""
    if request.optimizer not in OPTIMIZERS:
        raise ConfigError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
    pool = load_pool(request.pool)
    task_set = load_task_set(request.tasks)
    features = default_encoder(request.encoder, request.out / "features.db")
    advance = (on_encoding or (lambda _d, _t: lambda _n: None))(
        f"encoding with {request.encoder}", len(task_set.tasks)
    )
    setup = fit_setup(
        features,
        task_set,
        pool.names,
        components=request.components,
        max_turns=request.max_turns,
        roles=request.roles,
        on_encoded=advance,
    )
    if on_setup is not None:
        on_setup(setup)
    store = TraceStore(request.traces)
    resumed = checkpoint_step(request.out / "checkpoint.pkl") if request.resume else None
    settings = {
        "tasks": request.tasks,
        "out": str(request.out),
        "optimizer": request.optimizer,
        "max_turns": request.max_turns,
        "roles": list(request.roles),
        "budget_rollouts": request.config.budget,
        "resumed_from_generation": resumed,
    }
    with store.running("train", pool=str(request.pool), config=settings) as run:
        state = asyncio.run(
            train_trinity(
                pool,
                task_set,
                setup,
                request.out,
                request.config,
                optimizer=request.optimizer,
                resume=request.resume,
                on_generation=on_step,
                executor=make_executor(request.executor, request.ray_address),
                store=store,
                run_id=run.run_id,
                on_rollout=on_rollout,
                on_estimate=on_estimate,
            )
        )
        run.summary = {"generations": state.step, "rollouts": state.rollouts}
        if state.history:
            run.summary["last"] = state.history[-1]
    return TrinityTraining(state, setup, request.out)
