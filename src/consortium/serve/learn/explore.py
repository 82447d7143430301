"""Which requests are explored: a seeded share ε of them, while the shadow calls' $ stays under
the caps (per rolling hour and in total, what the store spent before a restart included). A cap
is checked before a request is explored, so the last explored request may pass it by its own
shadow calls."""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Exploration:
    share: float = 0.0
    per_hour: float | None = None
    total: float | None = None
    seed: int = 0
    clock: Callable[[], float] = time.monotonic
    spent: float = 0.0
    _rng: random.Random = field(init=False)
    _recent: deque[tuple[float, float]] = field(init=False, default_factory=deque)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def chosen(self) -> bool:
        """Whether the next request is explored (one draw per request, so the choice is the
        seed's whatever the caps say)."""
        draw = self._rng.random()
        return self.share > 0 and draw < self.share and self._under_caps()

    def _under_caps(self) -> bool:
        if self.total is not None and self.spent >= self.total:
            return False
        if self.per_hour is None:
            return True
        hour_ago = self.clock() - 3600
        while self._recent and self._recent[0][0] < hour_ago:
            self._recent.popleft()
        return sum(cost for _, cost in self._recent) < self.per_hour

    def take_up(self, spent: float, recent: list[tuple[float, float]]) -> None:
        """What was spent before this process began: `spent` in all, and `recent` as (seconds
        ago, $) for the rolling hour."""
        now = self.clock()
        self.spent += spent
        self._recent.extendleft((now - ago, cost) for ago, cost in sorted(recent))

    def charge(self, cost: float) -> None:
        self.spent += cost
        self._recent.append((self.clock(), cost))
