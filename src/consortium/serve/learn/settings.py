"""What `serve --learn` is told: the folder it learns into, how often it refits, how much it
explores, and the guard its candidates must pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from consortium.core.errors import ConfigError
from consortium.evolve.guards import GuardConfig

ExploreOn = Literal["answer", "label"]
"""When a request is explored: once its answer is sent (its headers say so), or once its label
arrives (only labelled requests teach a refit, so the same refit data costs the label share)."""


@dataclass(frozen=True)
class LearnSettings:
    folder: Path
    refit_every: int = 50
    """Labelled requests between two refits."""
    explore: float = 0.0
    """Share of requests explored with shadow calls (seeded by `seed`): of those answered, or of
    those labelled (`explore_on`)."""
    explore_on: ExploreOn = "answer"
    explore_per_hour: float | None = None
    """Cap on the shadow calls' USD in a rolling hour; None: no cap."""
    explore_total: float | None = None
    """Cap on the shadow calls' USD in all, what DIR's store held at start included; None:
    no cap."""
    lam: float = 0.0
    """Cost weight of the refit's fit (`train coordinator --lam`)."""
    seed: int = 0
    follow_every: float = 2.0
    """Seconds between two looks in DIR for a version another replica adopted and for labels
    others added to the store."""
    guard: GuardConfig = field(default_factory=GuardConfig)

    def __post_init__(self) -> None:
        if self.refit_every < 1:
            raise ConfigError(f"--refit-every must be >= 1, got {self.refit_every}")
        if not 0 <= self.explore <= 1:
            raise ConfigError(f"--explore must be from 0 to 1, got {self.explore}")
        if self.explore_on not in get_args(ExploreOn):
            raise ConfigError(f"--explore-on must be answer or label, got {self.explore_on!r}")
        if self.lam < 0:
            raise ConfigError(f"--learn-lam must be >= 0, got {self.lam}")

    @classmethod
    def of(
        cls,
        folder: Path | None,
        refit_every: int,
        explore: float,
        explore_on: ExploreOn,
        explore_budget: tuple[float, float] | None,
        lam: float,
        seed: int,
    ) -> LearnSettings | None:
        """The settings of `serve`'s options; None without --learn."""
        if folder is None:
            return None
        per_hour, total = explore_budget if explore_budget is not None else (None, None)
        return cls(folder, refit_every, explore, explore_on, per_hour, total, lam, seed)
