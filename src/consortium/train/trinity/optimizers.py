"""The optimizers of the TRINITY head behind one ask/tell interface (as `cmaes` has): each step
the fit loop asks for candidate weight vectors, scores them in its setting and tells the outcome
back. An optimizer's state pickles whole, so a checkpoint resumes it exactly."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from cmaes import SepCMA

from consortium.train.trinity.settings import Update

OPTIMIZERS = ("es", "reinforce", "random")
"""The optimizers that spend rollouts (the recorded setting adds imitation, which spends none)."""
TITLES = {
    "es": "sep-CMA-ES",
    "reinforce": "REINFORCE",
    "random": "random search",
    "imitation": "imitation",
}
"""Every optimizer's name in tables and plots (imitation is the recorded setting's fourth)."""


class OptimizerOptions(Protocol):
    """What the optimizers read from a setting's config (`TrainConfig`, `RecordedConfig`)."""

    @property
    def popsize(self) -> int: ...
    @property
    def sigma0(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def learning_rate(self) -> float: ...
    @property
    def update(self) -> Update: ...
    @property
    def shared_minibatch(self) -> bool: ...
    @property
    def incumbent(self) -> bool: ...


@dataclass(frozen=True)
class Outcome:
    """What a setting's objective reports on the candidates of one step."""

    rewards: np.ndarray
    """Each candidate's mean reward on the minibatch (for REINFORCE: each sampled copy's, or each
    question's when there is one copy); the curve's mean and best are taken over these."""
    gradient: np.ndarray | None = None
    """REINFORCE: the score-function gradient (mean-reward baseline) summed over rollouts."""
    count: int = 1
    """How many rollouts `gradient` sums."""


class Optimizer(ABC):
    policy: np.ndarray
    """The head's weights so far (for sep-CMA-ES, the distribution's mean)."""
    n_candidates: int
    """Vectors asked per step; the step's minibatch has popsize × minibatch / n_candidates
    questions, so every optimizer spends the same rollouts per step."""
    sampled = False
    """Whether the candidates act by sampling and `tell` needs the score-function gradient."""

    def reseed(self, seed: int) -> None:  # noqa: B027 (only optimizers with their own RNG)
        """Per-step seeding: the step's seed, before `ask`."""

    @abstractmethod
    def ask(self, rng: np.random.Generator) -> np.ndarray:
        """(n_candidates, n_params) vectors to score."""

    @abstractmethod
    def tell(self, candidates: np.ndarray, outcome: Outcome) -> None: ...


class SepCmaEs(Optimizer):
    """sep-CMA-ES (`cmaes.SepCMA`), maximizing reward; it draws from its own RNG."""

    def __init__(self, start: np.ndarray, options: OptimizerOptions) -> None:
        # cmaes moves the mean array it is given in place; the caller's warm start must stay put.
        self.cma = SepCMA(
            mean=start.copy(),
            sigma=options.sigma0,
            population_size=options.popsize,
            seed=options.seed,
        )
        self.policy = start.copy()
        self.n_candidates = options.popsize

    def reseed(self, seed: int) -> None:
        self.cma.reseed_rng(seed)

    def ask(self, rng: np.random.Generator) -> np.ndarray:
        return np.stack([self.cma.ask() for _ in range(self.n_candidates)])

    def tell(self, candidates: np.ndarray, outcome: Outcome) -> None:
        self.cma.tell([(c, -float(r)) for c, r in zip(candidates, outcome.rewards, strict=True)])
        self.policy = np.array(self.cma.mean)

    def __getstate__(self) -> dict[str, Any]:
        # cmaes leaves its RNG out of a pickle; carried here, a resumed run draws what it would have
        return {**self.__dict__, "rng_state": self.cma._rng.get_state()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        rng_state = state.pop("rng_state")
        self.__dict__.update(state)
        self.cma._rng.set_state(rng_state)


class Reinforce(Optimizer):
    """The current policy, run with sampled actions; a step along the score-function gradient
    (plain SGD or Adam)."""

    sampled = True

    def __init__(self, start: np.ndarray, options: OptimizerOptions) -> None:
        self.policy = start.copy()
        self.n_candidates = candidates_per_step("reinforce", options)
        self.learning_rate = options.learning_rate
        self.update = options.update
        self.moment = np.zeros_like(self.policy)
        self.second = np.zeros_like(self.policy)
        self.steps = 0

    def ask(self, rng: np.random.Generator) -> np.ndarray:
        return np.stack([self.policy] * self.n_candidates)

    def tell(self, candidates: np.ndarray, outcome: Outcome) -> None:
        if outcome.gradient is None:
            raise ValueError("REINFORCE needs the score-function gradient")
        if self.update == "sgd":
            self.policy = self.policy + self.learning_rate * outcome.gradient / outcome.count
            return
        gradient = outcome.gradient / outcome.count
        self.steps += 1
        self.moment = 0.9 * self.moment + 0.1 * gradient
        self.second = 0.999 * self.second + 0.001 * gradient**2
        self.policy = self.policy + (
            self.learning_rate
            * (self.moment / (1 - 0.9**self.steps))
            / (np.sqrt(self.second / (1 - 0.999**self.steps)) + 1e-8)
        )


class RandomSearch(Optimizer):
    """The paper's: candidates uniform in [-0.5, 0.5]^n, the best seen kept. With `incumbent`,
    candidate 0 is the current policy, so a warm start is kept unless beaten on the same
    minibatch."""

    def __init__(self, start: np.ndarray, options: OptimizerOptions) -> None:
        self.policy = start.copy()
        self.n_candidates = options.popsize
        self.incumbent = options.incumbent
        self.best = -1.0

    def ask(self, rng: np.random.Generator) -> np.ndarray:
        candidates = rng.uniform(-0.5, 0.5, (self.n_candidates, self.policy.size))
        if self.incumbent:
            candidates[0] = self.policy
        return candidates

    def tell(self, candidates: np.ndarray, outcome: Outcome) -> None:
        index = int(np.argmax(outcome.rewards))
        if (index > 0 or not self.incumbent) and outcome.rewards[index] > self.best:
            self.policy, self.best = candidates[index].copy(), float(outcome.rewards[index])


class Fitted(Optimizer):
    """A policy fitted before the loop (imitation): it asks for nothing, so it runs no steps."""

    n_candidates = 1

    def __init__(self, policy: np.ndarray) -> None:
        self.policy = policy

    def ask(self, rng: np.random.Generator) -> np.ndarray:
        raise ValueError("a fitted policy takes no steps")

    def tell(self, candidates: np.ndarray, outcome: Outcome) -> None:
        raise ValueError("a fitted policy takes no steps")


def make_optimizer(name: str, start: np.ndarray, options: OptimizerOptions) -> Optimizer:
    kinds: dict[str, type[SepCmaEs | Reinforce | RandomSearch]] = {
        "es": SepCmaEs,
        "reinforce": Reinforce,
        "random": RandomSearch,
    }
    if name not in kinds:
        raise ValueError(f"unknown optimizer {name!r}; one of {', '.join(OPTIMIZERS)}")
    return kinds[name](start, options)


def candidates_per_step(name: str, options: OptimizerOptions) -> int:
    """`n_candidates` of the optimizer `make_optimizer(name, ...)` builds."""
    return 1 if name == "reinforce" and not options.shared_minibatch else options.popsize
