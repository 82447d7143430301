"""How long and how much a training run will take, from a short probe on the real pool.

The probe runs a few rollouts of the starting head one after another through the run's own
caller (traced, cached), and times them. The estimate scales that to the run's budget:
rollouts × measured seconds per rollout ÷ the calls the pool serves at once, and rollouts × the
measured dollars and tokens per rollout. It is a rough figure: later heads route differently, a
multi-turn head's rollouts grow as it learns to take more turns, and a response cache makes
repeated questions free.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.trinity.policy import HeadSetup
from consortium.evaluation.runner import run_policy
from consortium.pool.config import PoolConfig
from consortium.runtime.caller import Caller
from consortium.tasks.base import Grader, Task

LARGE_BUDGET = 2_000
"""Rollouts from which a run is probed and estimated before it starts."""
CONFIRM_SECONDS = 15 * 60.0
"""An estimate longer than this asks for a confirmation (or `--yes`)."""
CONFIRM_USD = 5.0
"""An estimate dearer than this asks for a confirmation (or `--yes`)."""


@dataclass(frozen=True)
class Estimate:
    rollouts: int
    """The run's budget."""
    probed: int
    """Rollouts the probe ran."""
    seconds_per_rollout: float
    usd_per_rollout: float
    tokens_per_rollout: float
    concurrency: int
    """Calls in flight at once: the run's concurrency, capped by the pool's."""

    @property
    def seconds(self) -> float:
        return self.rollouts * self.seconds_per_rollout / max(self.concurrency, 1)

    @property
    def usd(self) -> float:
        return self.rollouts * self.usd_per_rollout

    @property
    def tokens(self) -> float:
        return self.rollouts * self.tokens_per_rollout

    @property
    def large(self) -> bool:
        return self.seconds > CONFIRM_SECONDS or self.usd > CONFIRM_USD

    def line(self) -> str:
        return (
            f"estimate from {self.probed} probe rollout(s): {self.rollouts:,} rollouts × "
            f"{self.seconds_per_rollout:.2f} s ÷ {self.concurrency} at once ≈ "
            f"{duration(self.seconds)}, {self.usd:.2f} USD, {self.tokens:,.0f} tokens"
        )


def duration(seconds: float) -> str:
    """12 s, 7.5 min, 70.2 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def pool_concurrency(pool: PoolConfig, wanted: int) -> int:
    """Calls the pool serves at once for a run that wants `wanted` in flight."""
    return max(1, min(wanted, sum(model.max_concurrency for model in pool.models)))


async def probe(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    budget: int,
    concurrency: int,
    size: int = 3,
) -> Estimate:
    """`size` rollouts of the starting head (zeros), one at a time, timed."""
    chosen = list(tasks[:size])
    coordinator = setup.coordinator(np.zeros(setup.n_params), None, name="probe")
    started = time.perf_counter()
    results = await run_policy(coordinator, chosen, grader, caller, concurrency=1)
    elapsed = time.perf_counter() - started
    n = max(len(results), 1)
    return Estimate(
        rollouts=budget,
        probed=len(results),
        seconds_per_rollout=elapsed / n,
        usd_per_rollout=sum(r.cost for r in results) / n,
        tokens_per_rollout=sum(r.tokens for r in results) / n,
        concurrency=concurrency,
    )
