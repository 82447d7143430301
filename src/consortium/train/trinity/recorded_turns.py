"""Training the TRINITY head on the replay simulation (in process): reward = right − λ·cost, cost
in units of the best single model's mean $ per question on the train split. The optimizers are the
project's ask/tell objects (sep-CMA-ES, REINFORCE, random search) plus imitation of the best short
trajectory per training question; every one gets the same number of episodes. Every greedy
episode is the deployed decision function played by the records runner (`Episodes.play`)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

import numpy as np

from consortium.evaluation.recorded.episodes import (
    ROLE_NAMES,
    VERIFIER,
    Episodes,
    Transcript,
    run_trinity,
)
from consortium.evaluation.recorded.head import n_weights, rollout
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.train.trinity.fit import Schedule, fit
from consortium.train.trinity.optimizers import Outcome, make_optimizer


@dataclass(frozen=True)
class HeadOptions:
    """What the project's optimizers read (consortium.train.trinity.optimizers.OptimizerOptions)."""

    popsize: int = 16
    sigma0: float = 0.5
    seed: int = 0
    learning_rate: float = 0.05
    update: str = "adam"
    shared_minibatch: bool = True
    incumbent: bool = True


@dataclass(frozen=True)
class Budget:
    generations: int = 40
    popsize: int = 16
    minibatch: int = 64

    @property
    def episodes(self) -> int:
        return self.generations * self.popsize * self.minibatch


def reward(t: Transcript, correct: bool, lam: float, cost_unit: float) -> float:
    return float(correct) - lam * t.cost / cost_unit


def mean_reward(
    episodes: Episodes, weights: np.ndarray, questions: np.ndarray, lam: float, cost_unit: float
) -> float:
    rule = episodes.rule(weights)
    total = 0.0
    for q in questions:
        t = episodes.play(rule, int(q))
        total += reward(t, episodes.correct(t), lam, cost_unit)
    return total / max(1, len(questions))


@dataclass(frozen=True)
class TurnsObjective:
    """The recorded-turns setting for the fit loop: a minibatch of training questions per step;
    ES and random search score a candidate by its greedy runs, REINFORCE by sampled runs with
    the score-function gradient (mean-reward baseline)."""

    episodes: Episodes
    questions: np.ndarray
    lam: float
    cost_unit: float

    @property
    def n_params(self) -> int:
        return n_weights(self.episodes)

    def batch(self, size: int, step: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(self.questions, size=min(size, len(self.questions)), replace=False)

    async def score(
        self,
        candidates: np.ndarray,
        batch: np.ndarray,
        step: int,
        rng: np.random.Generator,
        *,
        sampled: bool,
    ) -> Outcome:
        episodes, lam, unit = self.episodes, self.lam, self.cost_unit
        if not sampled:
            return Outcome(
                np.array([mean_reward(episodes, w, batch, lam, unit) for w in candidates])
            )
        rewards, grads = [], []
        for weights in candidates:
            for q in batch:
                r = rollout(episodes, weights, int(q), rng, gradient=True)
                rewards.append(reward(r.transcript, r.correct, lam, unit))
                grads.append(r.gradient)
        values = np.array(rewards)
        advantage = values - values.mean()
        gradient = np.sum([a * g for a, g in zip(advantage, grads, strict=True)], axis=0)
        return Outcome(values, gradient, len(values))


def train_head(
    episodes: Episodes,
    questions: np.ndarray,
    optimizer: str,
    lam: float,
    cost_unit: float,
    budget: Budget,
    seed: int,
) -> np.ndarray:
    """Weights after `budget` episodes of `optimizer` ("es", "reinforce", "random",
    "imitation") on the training questions, by the one fit loop (`fit.fit`, one sequential
    generator: each step draws its minibatch, then its candidates)."""
    if optimizer == "imitation":
        return imitate(episodes, questions, lam, cost_unit, seed)
    options = HeadOptions(popsize=budget.popsize, seed=seed)
    schedule = Schedule(
        budget.generations, budget.popsize, budget.minibatch, seed, "sequential", "step"
    )
    state = asyncio.run(
        fit(
            TurnsObjective(episodes, questions, lam, cost_unit),
            lambda start: make_optimizer(optimizer, start, options),  # type: ignore[arg-type]
            schedule,
            {"optimizer": optimizer, "lam": lam, "seed": seed},
        )
    )
    return np.asarray(state.vector)


def _actions(episodes: Episodes) -> list[tuple[int, int]]:
    return [(m, r) for m in range(episodes.n_models) for r in range(len(ROLE_NAMES))]


def best_trajectory(
    episodes: Episodes, q: int, lam: float, cost_unit: float, depth: int = 3
) -> list[tuple[np.ndarray, int, int]]:
    """The best-reward action sequence of at most `depth` turns for question q (ties: shorter),
    as (features, model, role) per turn: the imitation target."""
    best: tuple[float, int] = (-np.inf, 0)
    best_steps: list[tuple[np.ndarray, int, int]] = []
    for length in range(1, depth + 1):
        for sequence in itertools.product(_actions(episodes), repeat=length):
            t = episodes.start(q)
            steps = []
            valid = True
            for i, (m, role) in enumerate(sequence):
                if episodes.done(t) or (role == VERIFIER and t.current() is None):
                    valid = False
                    break
                if not (episodes.code and role == VERIFIER) and not episodes.available(t)[m]:
                    valid = False
                    break
                steps.append((episodes.features(t), m, role))
                episodes.step(t, m, role)
                if i < length - 1 and episodes.done(t):
                    valid = False
                    break
            if not valid or not (t.accepted or length == depth):
                continue
            value = (reward(t, episodes.correct(t), lam, cost_unit), -length)
            if value > best:
                best, best_steps = value, steps
    return best_steps


def imitate(
    episodes: Episodes,
    questions: np.ndarray,
    lam: float,
    cost_unit: float,
    seed: int,
    epochs: int = 200,
    learning_rate: float = 0.1,
) -> np.ndarray:
    """Behaviour cloning of each training question's best short trajectory (cross-entropy on the
    model and role softmaxes, full-batch gradient descent)."""
    data = [
        step for q in questions for step in best_trajectory(episodes, int(q), lam, cost_unit, 2)
    ]
    n_models = episodes.n_models
    w = np.random.default_rng(seed).normal(0, 0.01, episodes.head.weights.shape)
    if not data:
        return w.ravel()
    x = np.stack([d[0] for d in data])
    models = np.array([d[1] for d in data])
    roles = np.array([d[2] for d in data])
    for _ in range(epochs):
        z = x @ w.T
        for block, target in ((slice(0, n_models), models), (slice(n_models, None), roles)):
            logits = z[:, block] - z[:, block].max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(target)), target] -= 1.0
            w[block] -= learning_rate * (p.T @ x) / len(target)
    return w.ravel()


def run_head(episodes: Episodes, weights: np.ndarray, name: str, note: str = "") -> PolicyRun:
    """The greedy policy over every question of the table."""
    return run_trinity(episodes, episodes.rule(weights), name, note)
