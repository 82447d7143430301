"""A pool configuration for the models behind a replay server, with declared prices.

The prices are declarations, not recordings: the open 7–8B models at a typical serverless price,
the RouterBench API models at their late-2023 public list prices (USD per million tokens).
Each model's `max_tokens` lets its longest recorded answer through whole (`answer_token_limits`).
"""

from __future__ import annotations

from pathlib import Path

from consortium.core.tokens import estimate_tokens
from consortium.pool.config import (
    DEFAULT_MAX_TOKENS,
    ModelConfig,
    PoolConfig,
    dump_pool,
    parse_pool,
)
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


def answer_token_limits(data: ReplayData) -> dict[str, int]:
    """Each model's `max_tokens` in a pool of this replay: the pool's default, raised to the
    model's longest recorded answer in the token estimate the replay server cuts answers by, so
    that over HTTP every answer comes back whole, as the records runner reads it."""
    limits = dict.fromkeys(data.all_models, DEFAULT_MAX_TOKENS)
    for record in data.records:
        for model, text in record.recorded_texts():
            limits[model] = max(limits[model], estimate_tokens(text))
    return limits


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
    token_limits = answer_token_limits(data)
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
                "max_tokens": token_limits.get(model, DEFAULT_MAX_TOKENS),
                "strengths": "replay of recorded outcomes",
            }
        )
    return parse_pool({"models": entries}, "replay pool")


def write_pool_file(path: Path, data: ReplayData, base_url: str) -> None:
    """The pool file of a replay server's models, written atomically, so that `pool check
    --wait` never reads half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(dump_pool(replay_pool(data, base_url)))
    partial.replace(path)
