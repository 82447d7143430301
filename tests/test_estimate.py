"""The estimate of a training run before it starts: rollouts × seconds per rollout ÷ concurrency."""

from __future__ import annotations

from consortium.pool.config import parse_pool
from consortium.train.trinity.estimate import Estimate, duration, pool_concurrency


def test_the_estimate_scales_the_probe_to_the_budget() -> None:
    # the case: the default budget on two llama.cpp models, ~1.3 s per rollout
    estimate = Estimate(102_400, 3, 1.3, 0.0, 300.0, concurrency=2)
    assert round(estimate.seconds) == 66_560 and duration(estimate.seconds) == "18.5 h"
    assert estimate.large and estimate.usd == 0.0 and estimate.tokens == 30_720_000
    assert "102,400 rollouts × 1.30 s ÷ 2 at once ≈ 18.5 h" in estimate.line()
    assert not Estimate(160, 3, 1.3, 0.0, 300.0, concurrency=2).large
    assert Estimate(160, 3, 0.1, 0.05, 300.0, concurrency=8).large  # 8 USD


def test_the_pool_caps_the_concurrency() -> None:
    pool = parse_pool(
        {
            "models": [
                {"name": "a", "base_url": "http://x/v1", "model": "a", "max_concurrency": 1},
                {"name": "b", "base_url": "http://x/v1", "model": "b", "max_concurrency": 1},
            ]
        }
    )
    assert pool_concurrency(pool, 64) == 2 and pool_concurrency(pool, 1) == 1
