"""`consortium train router`: the TRINITY head trained for single-turn routing on recorded
outcomes: encode the training questions once (cached), fit the standardizer, optionally warm-start
by imitation, run an optimizer in process (`train.trinity.recorded`), save a policy that `eval`,
`ask` and `serve` load like any trained TRINITY policy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.encoder import CachedEncoder, StandardizedEncoder, Standardizer
from consortium.coord.trinity.policy import HeadSetup, save_policy
from consortium.core.errors import ConfigError
from consortium.tasks.base import Task
from consortium.tasks.recorded import recorded_outcomes
from consortium.train.trinity.fit import FitState
from consortium.train.trinity.recorded import RoutingProblem, imitation, train_recorded
from consortium.train.trinity.rollouts import write_curve
from consortium.train.trinity.settings import RouterTraining


def recorded_scores(tasks: Sequence[Task], models: Sequence[str]) -> np.ndarray:
    """(n_tasks, n_models): each recorded model's score on each task (replay task sets carry it:
    the fraction of correct samples, or 1/0 for multiple choice)."""
    rows = []
    for task in tasks:
        recorded = recorded_outcomes(task)
        if recorded is None:
            raise ConfigError(
                f"task {task.id} carries no recorded outcomes: routing on recorded outcomes "
                "needs a replay task set (replay:data=DIR:...)"
            )
        missing = [m for m in models if m not in recorded]
        if missing:
            raise ConfigError(f"task {task.id} has no recorded outcome of {missing[0]}")
        rows.append([float(recorded[m]) for m in models])
    return np.array(rows, dtype=np.float64).reshape(len(tasks), len(models))


def encode_all(
    encoder: CachedEncoder,
    texts: Sequence[str],
    on_encoded: Callable[[int], None] | None = None,
    chunk: int = 256,
) -> np.ndarray:
    """Features of `texts` in chunks (each cached as it completes, so an interrupted extraction
    resumes where it stopped), reporting each chunk's size."""
    parts = []
    for start in range(0, len(texts), chunk):
        parts.append(encoder.encode(list(texts[start : start + chunk])))
        if on_encoded is not None:
            on_encoded(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)


def fit_head(
    problem: RoutingProblem,
    training: RouterTraining,
    on_step: Callable[[FitState], None] | None = None,
) -> tuple[FitState, dict[str, Any]]:
    """The head's weights by `training`'s recipe, and what validation decided (if it ran)."""
    config = training.optimizer
    warm = training.warm_start == "imitation" and config.optimizer != "imitation"

    def start(rows: RoutingProblem) -> np.ndarray | None:
        if not warm:
            return None
        return imitation(rows, config.l2, question_weight=config.question_weight)

    decision: dict[str, Any] = {}
    if warm and training.validation > 0:
        fit_rows, held_rows = problem.split(training.validation, config.seed)
        fit, held = problem.subset(fit_rows), problem.subset(held_rows)
        warm_vector = start(fit)
        assert warm_vector is not None
        tuned = train_recorded(fit, config, init=warm_vector)
        decision = {
            "validation_questions": len(held_rows),
            "validation_rollouts": tuned.rollouts,
            "warm_start_reward": held.balanced_reward(warm_vector),
            "optimizer_reward": held.balanced_reward(tuned.vector),
        }
        decision["kept"] = (
            config.optimizer
            if decision["optimizer_reward"] > decision["warm_start_reward"]
            else "warm start"
        )
        if decision["kept"] == "warm start":
            return train_recorded(problem, replace(config, optimizer="imitation")), decision
    return train_recorded(problem, config, init=start(problem), on_step=on_step), decision


def train_router(
    tasks: Sequence[Task],
    encoder: CachedEncoder,
    pool_models: Sequence[str],
    recorded_models: Sequence[str],
    out_dir: Path,
    training: RouterTraining,
    *,
    description: str = "",
    on_encoded: Callable[[int], None] | None = None,
    on_step: Callable[[FitState], None] | None = None,
) -> tuple[HeadSetup, FitState, dict[str, Any]]:
    """Train and save a routing policy into `out_dir`; `pool_models[i]` is the pool's name of
    the recorded model `recorded_models[i]`. Returns the setup, the final run and what
    validation decided (see `fit_head`)."""
    if training.warm_start not in ("imitation", "none"):
        raise ConfigError(f"warm start {training.warm_start!r}: imitation or none")
    scores = recorded_scores(tasks, recorded_models)
    raw = encode_all(encoder, [t.question for t in tasks], on_encoded)
    standardizer = Standardizer.fit(raw, training.components, constant=training.constant)
    setup = HeadSetup(StandardizedEncoder(encoder, standardizer), list(pool_models))
    problem = RoutingProblem(standardizer.apply(raw), scores, np.array([t.dataset for t in tasks]))
    run, decision = fit_head(problem, training, on_step)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "optimizer": training.optimizer.optimizer,
        "training": {**asdict(training.optimizer), **_without_optimizer(training)},
        "rollouts": run.rollouts,
        "validation": decision,
        "rollouts_in": "process: recorded outcomes (train.trinity.recorded), not the replay server",
        "train_reward": float(problem.rewards(run.vector[None], np.arange(len(tasks)))[0]),
        "tasks": description,
    }
    save_policy(out_dir, run.vector, setup, meta)
    write_curve(
        [{"generation": row["step"], **row} for row in run.history],
        out_dir,
        f"TRINITY head, {training.optimizer.optimizer} on recorded outcomes",
    )
    return setup, run, decision


def _without_optimizer(training: RouterTraining) -> dict[str, Any]:
    return {k: v for k, v in asdict(training).items() if k != "optimizer"}
