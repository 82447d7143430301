"""The one training loop of the TRINITY head, for every optimizer and both settings (online
rollouts on a pool, recorded outcomes in process): minibatches, the step counter, the curve,
an atomic checkpoint after every step (a resumed run ends bit-identical to an uninterrupted one),
warm start and progress. What a setting does differently sits behind `Objective`."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from consortium.core.errors import ConfigError
from consortium.train.trinity.optimizers import Optimizer, Outcome
from consortium.train.trinity.settings import Seeding

Curve = Literal["generation", "step"]
"""The curve's columns: `generation` (generation, population_mean, population_best, rollouts;
online) or `step` (step, rollouts, population_mean, population_best; recorded)."""


class Objective(Protocol):
    """A setting: its training questions, how candidates are scored on them, and how REINFORCE's
    score-function gradient is taken."""

    @property
    def n_params(self) -> int: ...

    def batch(self, size: int, step: int, rng: np.random.Generator) -> Sized:
        """About `size` training questions for this step."""

    async def score(
        self,
        candidates: np.ndarray,
        batch: Any,
        step: int,
        rng: np.random.Generator,
        *,
        sampled: bool,
    ) -> Outcome:
        """Each candidate on every question of `batch`; `sampled`: act by sampling, and add the
        score-function gradient."""


@dataclass(frozen=True)
class Schedule:
    steps: int
    popsize: int
    minibatch: int
    seed: int
    seeding: Seeding
    curve: Curve


@dataclass
class FitState:
    optimizer: Optimizer
    settings: dict[str, Any]
    """What a resume must match."""
    rng: np.random.Generator
    """The sequential generator (unused with per-step seeding)."""
    step: int = 0
    rollouts: int = 0
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def vector(self) -> np.ndarray:
        return self.optimizer.policy

    def advance(self, rewards: np.ndarray, spent: int, curve: Curve) -> None:
        self.step += 1
        self.rollouts += spent
        mean, best = float(rewards.mean()), float(rewards.max())
        if curve == "generation":
            row = {"generation": self.step, "population_mean": mean, "population_best": best}
            self.history.append({**row, "rollouts": float(self.rollouts)})
        else:
            row = {"step": float(self.step), "rollouts": float(self.rollouts)}
            self.history.append({**row, "population_mean": mean, "population_best": best})


Progress = Callable[[FitState], None]


def generation_seed(seed: int, step: int, index: int = 0) -> int:
    return int(np.random.SeedSequence([seed, step, index]).generate_state(1)[0])


def save_checkpoint(path: Path, state: FitState) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(pickle.dumps(state))
    temporary.replace(path)  # atomic: a kill leaves the old checkpoint or the new one


def load_checkpoint(path: Path, settings: Mapping[str, Any]) -> FitState:
    state: FitState = pickle.loads(path.read_bytes())
    mismatched = {
        k: (v, settings.get(k)) for k, v in state.settings.items() if settings.get(k) != v
    }
    if mismatched:
        details = ", ".join(f"{k}: checkpoint {a} vs now {b}" for k, (a, b) in mismatched.items())
        raise ConfigError(f"--resume with different settings ({details})")
    return state


def checkpoint_step(path: Path) -> int | None:
    """The step a checkpoint was written after (None: no checkpoint): where a resume starts."""
    if not path.exists():
        return None
    state: FitState = pickle.loads(path.read_bytes())
    return state.step


async def fit(
    objective: Objective,
    make: Callable[[np.ndarray], Optimizer],
    schedule: Schedule,
    settings: Mapping[str, Any],
    *,
    init: np.ndarray | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
    on_step: Progress | None = None,
) -> FitState:
    """Run `schedule.steps` steps of the optimizer `make(start)` builds; `init`: the start (a
    warm start from an earlier policy), default zeros. `settings`: the configuration a
    `resume` from `checkpoint` must match (the step budget may grow)."""
    if resume and checkpoint is not None and checkpoint.exists():
        state = load_checkpoint(checkpoint, settings)
    else:
        start = np.zeros(objective.n_params) if init is None else np.asarray(init, dtype=float)
        if start.shape != (objective.n_params,):
            raise ConfigError(f"warm start has {start.size} weights, the head {objective.n_params}")
        state = FitState(make(start), dict(settings), np.random.default_rng(schedule.seed))
    optimizer = state.optimizer
    size = schedule.popsize * schedule.minibatch // optimizer.n_candidates
    while state.step < schedule.steps:
        rng = state.rng
        if schedule.seeding == "per_step":
            seed = generation_seed(schedule.seed, state.step)
            optimizer.reseed(seed)
            rng = np.random.default_rng(seed)
        batch = objective.batch(size, state.step, rng)
        candidates = optimizer.ask(rng)
        outcome = await objective.score(
            candidates, batch, state.step, rng, sampled=optimizer.sampled
        )
        optimizer.tell(candidates, outcome)
        state.advance(outcome.rewards, len(candidates) * len(batch), schedule.curve)
        if checkpoint is not None:
            save_checkpoint(checkpoint, state)
        if on_step is not None:
            on_step(state)
    return state
