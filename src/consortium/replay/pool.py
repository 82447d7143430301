"""A pool configuration for the models behind a replay server, with declared prices.

The prices are declarations, not recordings: the open 7–8B models at a typical serverless price,
the RouterBench API models at their late-2023 public list prices (USD per million tokens).
"""

from __future__ import annotations

from consortium.pool.config import ModelConfig, PoolConfig, parse_pool
from consortium.records.names import short_name
from consortium.replay.data import ReplayData

OPEN_MODEL_PRICE = (0.20, 0.20)
LIST_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4-1106-preview": (10.0, 30.0),
    "gpt-3.5-turbo-1106": (1.0, 2.0),
    "claude-v2": (8.0, 24.0),
    "claude-v1": (8.0, 24.0),
    "claude-instant-v1": (0.8, 2.4),
    "meta/llama-2-70b-chat": (0.9, 0.9),
    "mistralai/mixtral-8x7b-chat": (0.6, 0.6),
    "zero-one-ai/Yi-34B-Chat": (0.8, 0.8),
    "WizardLM/WizardLM-13B-V1.2": (0.3, 0.3),
    "meta/code-llama-instruct-34b-chat": (0.776, 0.776),
    "mistralai/mistral-7b-chat": (0.2, 0.2),
}


def replay_pool(
    data: ReplayData,
    base_url: str,
    models: list[str] | None = None,
    *,
    max_concurrency: int = 64,
    timeout: float = 30.0,
    max_retries: int = 3,
) -> PoolConfig:
    entries: list[ModelConfig | dict[str, object]] = []
    for model in models if models is not None else data.all_models:
        price_in, price_out = data.prices.get(model) or LIST_PRICES.get(model, OPEN_MODEL_PRICE)
        entries.append(
            {
                "name": short_name(model),
                "base_url": base_url,
                "model": model,
                "price_in": price_in,
                "price_out": price_out,
                "max_concurrency": max_concurrency,
                "timeout": timeout,
                "max_retries": max_retries,
                "strengths": "replay of recorded outcomes",
            }
        )
    return parse_pool({"models": entries}, "replay pool")
