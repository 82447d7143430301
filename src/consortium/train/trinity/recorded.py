"""Training the TRINITY head for single-turn routing on recorded outcomes, in process.

A rollout of a single-turn router on a replay pool is one lookup: the head picks a model, the
recorded data say how that model did. So rewards for a whole population of candidate heads on
thousands of questions are one matrix product, and the optimizers can be compared at the
paper's head size (about 5k weights) and budget on a laptop CPU.

Two rewards, both declared in every report:
- `recorded`: the recorded score of the chosen model (the fraction of correct samples, or 1/0 for
  multiple choice): the expectation of the binary reward, a variance reduction.
- `draw`: the paper's binary reward, a Bernoulli draw with the recorded probability.

The optimizers share one budget unit, the rollout (one question answered by one candidate):
sep-CMA-ES (`cmaes.SepCMA`), REINFORCE (score-function gradient with a mean baseline, Adam),
random search (the paper's: uniform candidates, keep the best) and imitation (the paper's SFT
baseline: cross-entropy to the per-question-best models, L-BFGS; no rollouts).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from consortium.coord.trinity.head import ROLES
from consortium.train.trinity.fit import FitState, Progress, Schedule, fit
from consortium.train.trinity.optimizers import (
    Fitted,
    Optimizer,
    Outcome,
    candidates_per_step,
    make_optimizer,
)
from consortium.train.trinity.settings import RecordedConfig, Reward

OPTIMIZERS = ("es", "reinforce", "random", "imitation")


@dataclass(frozen=True)
class RoutingProblem:
    """Questions as standardized features, with every model's recorded score on each."""

    features: np.ndarray
    """Shape (n, dim): what the head reads."""
    scores: np.ndarray
    """Shape (n, n_models): recorded score of each model, in [0, 1]."""
    datasets: np.ndarray
    """Shape (n,): each question's dataset, for balanced minibatches."""

    @property
    def n_models(self) -> int:
        return int(self.scores.shape[1])

    @property
    def n_params(self) -> int:
        """The head's size: one row per model and per role, as the TRINITY head has."""
        return (self.n_models + len(ROLES)) * int(self.features.shape[1])

    def model_weights(self, vectors: np.ndarray) -> np.ndarray:
        """(population, n_models, dim) model rows of each parameter vector."""
        population = vectors.reshape(len(vectors), self.n_models + len(ROLES), -1)
        return population[:, : self.n_models]

    def choices(self, vector: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The greedy (argmax) model of `vector` for each question."""
        features = self.features if rows is None else self.features[rows]
        weights = self.model_weights(vector[None])[0]
        result: np.ndarray = (features @ weights.T).argmax(axis=1)
        return result

    def rewards(
        self,
        vectors: np.ndarray,
        rows: np.ndarray,
        reward: Reward = "recorded",
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """Mean reward of each candidate's greedy choices on `rows`."""
        logits = np.einsum("nd,pmd->pnm", self.features[rows], self.model_weights(vectors))
        chosen = logits.argmax(axis=2)
        values = self.scores[rows][np.arange(len(rows))[None, :], chosen]
        if reward == "draw":
            values = (rng or np.random.default_rng(0)).random(values.shape) < values
        result: np.ndarray = values.mean(axis=1)
        return result

    def balanced_size(self, size: int) -> int:
        """How many questions `balanced_rows(size)` returns: `size` rounded down to a multiple
        of the number of datasets, and at least one question per dataset."""
        n_datasets = len(np.unique(self.datasets))
        return max(size // n_datasets, 1) * n_datasets

    def subset(self, rows: np.ndarray) -> RoutingProblem:
        return RoutingProblem(self.features[rows], self.scores[rows], self.datasets[rows])

    def balanced_reward(self, vector: np.ndarray) -> float:
        """Mean over datasets of the mean recorded score of the greedy choices."""
        values = self.scores[np.arange(len(self.scores)), self.choices(vector)]
        return float(np.mean([values[self.datasets == d].mean() for d in np.unique(self.datasets)]))

    def split(self, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(fit rows, validation rows): `fraction` of each dataset held out, seeded."""
        rng = np.random.default_rng(seed)
        held: list[np.ndarray] = []
        for name in np.unique(self.datasets):
            rows = rng.permutation(np.flatnonzero(self.datasets == name))
            held.append(rows[: round(fraction * len(rows))])
        validation = np.sort(np.concatenate(held))
        return np.setdiff1d(np.arange(len(self.datasets)), validation), validation

    def balanced_rows(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """`balanced_size(size)` questions, the same number from each dataset (the mix does not
        move rewards)."""
        names = np.unique(self.datasets)
        share = max(size // len(names), 1)
        picked = [
            rng.choice(np.flatnonzero(self.datasets == name), share, replace=True) for name in names
        ]
        return np.concatenate(picked)


def imitation(
    problem: RoutingProblem,
    l2: float = 1e-3,
    init: np.ndarray | None = None,
    *,
    question_weight: float = 0.2,
) -> np.ndarray:
    """Cross-entropy of the model softmax to imitation targets, each dataset weighing the same
    (the objective is a mean of dataset means).

    The target of a question mixes its best models (ties share the label; the paper's SFT
    labels), at `question_weight`, with its dataset's best model on the training split, at the
    rest. Per-question-best labels alone are mostly noise here (on multiple-choice sets every
    model that answered right is "best"), and a head that copies them forgets the strong default
    the dataset prior gives; the mix keeps the default and moves away from it only where the
    per-question evidence agrees.
    """
    best = problem.scores == problem.scores.max(axis=1, keepdims=True)
    per_question = best / best.sum(axis=1, keepdims=True)
    names, index, counts = np.unique(problem.datasets, return_inverse=True, return_counts=True)
    dataset_best = np.stack(
        [problem.scores[index == i].mean(axis=0).argmax() for i in range(len(names))]
    )
    prior = np.eye(problem.n_models)[dataset_best[index]]
    targets = question_weight * per_question + (1 - question_weight) * prior
    row_weights = 1.0 / (counts[index] * len(names))
    dim = problem.features.shape[1]
    m = problem.n_models

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        weights = flat.reshape(m, dim)
        logits = problem.features @ weights.T
        logits -= logits.max(axis=1, keepdims=True)
        log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        value = -(row_weights[:, None] * targets * log_p).sum() + 0.5 * l2 * float(flat @ flat)
        residual = (np.exp(log_p) - targets) * row_weights[:, None]
        gradient = residual.T @ problem.features + l2 * weights
        return float(value), gradient.reshape(-1)

    start = np.zeros(m * dim) if init is None else problem.model_weights(init[None])[0].reshape(-1)
    solution = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    vector = np.zeros((m + len(ROLES), dim))
    vector[:m] = solution.x.reshape(m, dim)
    return vector.reshape(-1)


@dataclass(frozen=True)
class RecordedObjective:
    """Rollouts are lookups: the recorded score of the chosen model (or a Bernoulli draw of it)."""

    problem: RoutingProblem
    reward: Reward

    @property
    def n_params(self) -> int:
        return self.problem.n_params

    def batch(self, size: int, step: int, rng: np.random.Generator) -> np.ndarray:
        return self.problem.balanced_rows(size, rng)

    async def score(
        self,
        candidates: np.ndarray,
        batch: np.ndarray,
        step: int,
        rng: np.random.Generator,
        *,
        sampled: bool,
    ) -> Outcome:
        if not sampled:
            return Outcome(self.problem.rewards(candidates, batch, self.reward, rng))
        return self._sampled(candidates, batch, rng)

    def _sampled(
        self, candidates: np.ndarray, rows: np.ndarray, rng: np.random.Generator
    ) -> Outcome:
        """Each candidate samples a model per question from its model softmax."""
        problem, features = self.problem, self.problem.features[rows]
        probabilities, chosen, values = [], [], []
        for weights in problem.model_weights(candidates):
            logits = features @ weights.T
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            choice = (p.cumsum(axis=1) > rng.random((len(rows), 1))).argmax(axis=1)
            value = problem.scores[rows, choice]
            if self.reward == "draw":
                value = (rng.random(len(value)) < value).astype(float)
            probabilities.append(p)
            chosen.append(choice)
            values.append(value)
        rewards = np.concatenate(values)
        advantages = np.split(rewards - rewards.mean(), len(candidates))
        gradient = np.zeros((len(candidates), problem.n_models + len(ROLES), features.shape[1]))
        for i, (p, choice, advantage) in enumerate(
            zip(probabilities, chosen, advantages, strict=True)
        ):
            indicator = np.zeros_like(p)
            indicator[np.arange(len(rows)), choice] = 1.0
            gradient[i, : problem.n_models] = ((indicator - p) * advantage[:, None]).T @ features
        return Outcome(rewards, gradient.sum(axis=0).reshape(-1), len(rewards))


def recorded_schedule(problem: RoutingProblem, config: RecordedConfig) -> Schedule:
    """As many steps as fit in `config.rollouts` (imitation: none)."""
    steps = 0
    if config.optimizer != "imitation":
        candidates = candidates_per_step(config.optimizer, config)
        size = config.popsize * config.minibatch // candidates
        steps = config.rollouts // (candidates * problem.balanced_size(size))
    return Schedule(steps, config.popsize, config.minibatch, config.seed, config.seeding, "step")


def train_recorded(
    problem: RoutingProblem,
    config: RecordedConfig,
    *,
    init: np.ndarray | None = None,
    on_step: Progress | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
) -> FitState:
    """Run `config.optimizer` within `config.rollouts`; `init` warm-starts (e.g. imitation)."""
    if config.optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {config.optimizer!r}; one of {', '.join(OPTIMIZERS)}")

    def make(start: np.ndarray) -> Optimizer:
        if config.optimizer == "imitation":
            return Fitted(
                imitation(problem, config.l2, start, question_weight=config.question_weight)
            )
        return make_optimizer(config.optimizer, start, config)

    settings = {k: v for k, v in asdict(config).items() if k != "rollouts"}
    run = fit(
        RecordedObjective(problem, config.reward),
        make,
        recorded_schedule(problem, config),
        settings,
        init=init,
        checkpoint=checkpoint,
        resume=resume,
        on_step=on_step,
    )
    return asyncio.run(run)
