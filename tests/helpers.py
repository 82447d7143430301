from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from consortium.pool import Pool
from consortium.replay.data import ReplayData
from consortium.replay.pool import replay_pool
from consortium.runtime.budget import Budget
from consortium.runtime.cache import ResponseCache
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore


def replay_caller(
    data: ReplayData,
    base_url: str,
    store: TraceStore,
    models: list[str] | None = None,
    *,
    budget: Budget | None = None,
    cache: ResponseCache | None = None,
) -> Caller:
    pool = Pool(replay_pool(data, base_url, models or data.models["split2"]))
    run_id = store.start_run("test", pool=data.description())
    return Caller(pool, store, run_id, budget=budget, cache=cache)


def benchmarks_dir() -> Path:
    """The public benchmark files beside the checkout (or $CONSORTIUM_BENCHMARKS)."""
    default = Path(__file__).resolve().parents[1].parent / "shared/data/benchmarks"
    return Path(os.environ.get("CONSORTIUM_BENCHMARKS", default)).resolve()


WALL_TIME = {"seconds", "seconds_per_task"}


def untimed(value: Any) -> Any:
    """`value` (a report read from JSON) without its wall-clock figures: the one thing a rerun,
    a resumed run or the same run on another executor never repeats."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key not in WALL_TIME}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value
