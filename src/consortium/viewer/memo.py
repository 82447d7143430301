"""A run's aggregates (per-dataset stats, the oracle's and a policy's choices, token sums), kept
while the run's rows are unchanged: a run of 100,000 calls is aggregated once per change, then
each view of its pages costs the fingerprint and the page's own rows."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.engine import Engine

from consortium.viewer import queries
from consortium.viewer.queries import Choice, DatasetStats

T = TypeVar("T")


class RunAggregates:
    """The aggregates of one run at one fingerprint, computed on first use."""

    def __init__(self, engine: Engine, run_id: str) -> None:
        self.engine = engine
        self.run_id = run_id
        self._values: dict[tuple[str, ...], Any] = {}

    def _once(self, key: tuple[str, ...], compute: Callable[[], T]) -> T:
        if key not in self._values:
            self._values[key] = compute()
        value: T = self._values[key]
        return value

    def stats(self) -> list[DatasetStats]:
        return self._once(("stats",), lambda: queries.dataset_stats(self.engine, self.run_id))

    def oracle(self) -> list[Choice]:
        return self._once(("oracle",), lambda: queries.oracle_choices(self.engine, self.run_id))

    def totals(self) -> tuple[int, float]:
        return self._once(("totals",), lambda: queries.run_totals(self.engine, self.run_id))

    def models(self) -> list[str]:
        return self._once(("models",), lambda: queries.run_models(self.engine, self.run_id))

    def choices(self, policy: str) -> list[Choice]:
        return self._once(
            ("choices", policy), lambda: queries.policy_choices(self.engine, self.run_id, policy)
        )

    def tokens(self, policy: str) -> tuple[int, int]:
        return self._once(
            ("tokens", policy), lambda: queries.policy_tokens(self.engine, self.run_id, policy)
        )


class AggregateMemo:
    """The latest aggregates of the `size` runs viewed last."""

    def __init__(self, engine: Engine, size: int = 64) -> None:
        self.engine = engine
        self.size = size
        self._runs: OrderedDict[tuple[Any, ...], RunAggregates] = OrderedDict()
        self._lock = threading.Lock()  # pages are built in worker threads

    def of(self, run_id: str) -> RunAggregates:
        key = (run_id, *queries.fingerprint(self.engine, run_id))
        with self._lock:
            found = self._runs.pop(key, None) or RunAggregates(self.engine, run_id)
            self._runs[key] = found
            while len(self._runs) > self.size:
                self._runs.popitem(last=False)
        return found
