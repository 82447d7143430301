"""A per-model circuit breaker: after `threshold` failures in a row the model is skipped for
`cooldown` seconds; then calls go out again, and the first success closes the circuit while the
first failure opens it for another `cooldown`."""

from __future__ import annotations

import time


class CircuitBreaker:
    def __init__(self, threshold: int = 5, cooldown: float = 30.0) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self.failures = 0
        self.opened_at: float | None = None

    def allow(self) -> bool:
        """Whether a call may go out now (closed, or open long enough for a trial)."""
        if self.opened_at is None:
            return True
        return time.monotonic() - self.opened_at >= self.cooldown

    def retry_in(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.cooldown - (time.monotonic() - self.opened_at))

    def record(self, ok: bool) -> None:
        if ok:
            self.failures, self.opened_at = 0, None
            return
        self.failures += 1
        if self.failures >= self.threshold:
            self.opened_at = time.monotonic()
