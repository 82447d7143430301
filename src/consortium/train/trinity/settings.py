"""The training settings' configurations, with every default defined here once (the CLI reads
its defaults from these). Light on imports, so the CLI can read them at startup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Reward = Literal["recorded", "draw"]
Update = Literal["sgd", "adam"]
Seeding = Literal["per_step", "sequential"]
"""Where a step's randomness comes from: `per_step`, a generator (and the optimizer's reseed)
from (seed, step) alone; `sequential`, one generator from the seed drawn in order (minibatch,
candidates, reward draws), carried in the checkpoint."""

ENCODER_HELP = (
    "all-MiniLM-L6-v2-static (the default: all-MiniLM-L6-v2 distilled to static token vectors, "
    "a lookup, decisions in well under a millisecond); all-MiniLM-L6-v2 (the contextual "
    "encoder: a forward pass of tens of milliseconds on CPU, and it sees word order); "
    "SmolLM2-135M-Instruct; or a causal LM path / hub id (the paper: Qwen/Qwen3-0.6B). "
    "docs/performance.md compares them."
)


@dataclass(frozen=True)
class TrainConfig:
    """Online training on a pool; the defaults are `consortium train trinity`'s."""

    generations: int = 40
    popsize: int = 32
    sigma0: float = 0.5
    """sep-CMA-ES's initial step, for a start from zeros (a warm start wants far less: see
    `RETRAIN`)."""
    minibatch: int = 80
    seed: int = 0
    sample: bool = False
    """Sample (model, role) in training rollouts as the paper does; False: argmax, less noise."""
    concurrency: int = 64
    learning_rate: float = 0.1
    """REINFORCE's step size."""
    update: Update = "sgd"
    """REINFORCE's update rule."""
    shared_minibatch: bool = True
    """REINFORCE: `popsize` sampled rollouts of the policy on each question of one minibatch."""
    incumbent: bool = False
    """Random search: the current policy is not among the candidates (the best seen is kept)."""
    seeding: Seeding = "per_step"

    @property
    def budget(self) -> int:
        """Rollouts (atomic Bernoulli evaluations) spent on candidates."""
        return self.generations * self.popsize * self.minibatch


COMPARISON = TrainConfig(generations=30)
"""`consortium train compare`: fewer generations than one run, as it trains every optimizer over
several seeds."""
RETRAIN = TrainConfig(generations=3, popsize=16, sigma0=0.03, minibatch=40)
"""evolve's retrain-trinity: a warm start from a trained policy, so a small step around it."""


@dataclass(frozen=True)
class RecordedConfig:
    """Training on recorded outcomes, in process; the defaults are `consortium train router`'s."""

    optimizer: str = "es"
    rollouts: int = 2_000_000
    """Budget: questions answered by candidates, summed over the run."""
    popsize: int = 32
    minibatch: int = 250
    sigma0: float = 0.002
    """sep-CMA-ES's initial step; small by default, as it starts from an imitation warm start
    (from zeros, something like 0.5)."""
    learning_rate: float = 0.01
    """REINFORCE's step size."""
    update: Update = "adam"
    """REINFORCE's update rule."""
    shared_minibatch: bool = False
    """REINFORCE: one sampled rollout on each of popsize × minibatch questions (not `popsize`
    rollouts on each of `minibatch`): the same budget, less correlated."""
    incumbent: bool = True
    """Random search: candidate 0 is the current policy, so a warm start is kept unless beaten
    on the same minibatch."""
    l2: float = 1e-3
    """Imitation's weight decay (per weight, on the mean cross-entropy)."""
    question_weight: float = 0.2
    """Imitation's share of the per-question-best label (the rest: the dataset's best model)."""
    reward: Reward = "recorded"
    seed: int = 0
    seeding: Seeding = "sequential"


@dataclass(frozen=True)
class RouterTraining:
    """What `train_router` does, all of it recorded in the policy's metadata."""

    optimizer: RecordedConfig
    warm_start: str = "imitation"
    """"imitation" (the paper's SFT baseline first, then the optimizer) or "none"."""
    components: int | None = None
    """Project the standardized feature on this many principal axes; None: the full feature."""
    constant: bool = True
    """Append a constant feature, so the head can express a default model (a bias)."""
    validation: float = 0.2
    """With a warm start: this share of each dataset's training questions decides whether the
    optimizer's head beats the warm start's; if not, the warm start alone is kept (0: always
    keep the optimizer's). The chosen recipe is then refitted on every training question."""
