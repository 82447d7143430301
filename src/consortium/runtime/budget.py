"""Caps on calls, tokens and cost, checked before a call is made.

A call is admitted only if its worst case fits: its estimated prompt tokens plus `max_tokens`,
priced at the model's rates, must fit in what is left after spending and in-flight reservations.
After the call the reservation is settled with the real usage, so concurrent calls cannot overshoot
together.
"""

from __future__ import annotations

from dataclasses import dataclass

from consortium.core.errors import BudgetExceeded


@dataclass(frozen=True)
class Limits:
    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None

    @property
    def unlimited(self) -> bool:
        return self.max_calls is None and self.max_tokens is None and self.max_cost is None


@dataclass(frozen=True)
class Reservation:
    tokens: int
    cost: float


class Budget:
    def __init__(
        self, limits: Limits | None = None, *, label: str = "run", parent: Budget | None = None
    ) -> None:
        self.limits = limits or Limits()
        self.label = label
        self.parent = parent
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self._pending_calls = 0
        self._pending_tokens = 0
        self._pending_cost = 0.0

    def child(self, limits: Limits | None, label: str) -> Budget:
        return Budget(limits, label=label, parent=self)

    def _check(self, tokens: int, cost: float) -> None:
        limits = self.limits
        if limits.max_calls is not None and self.calls + self._pending_calls + 1 > limits.max_calls:
            raise BudgetExceeded(f"{self.label} call cap reached ({limits.max_calls} calls)")
        if (
            limits.max_tokens is not None
            and self.tokens + self._pending_tokens + tokens > limits.max_tokens
        ):
            raise BudgetExceeded(
                f"{self.label} token cap: {self.tokens + self._pending_tokens} used or reserved "
                f"+ up to {tokens} for this call > {limits.max_tokens}"
            )
        if limits.max_cost is not None and self.cost + self._pending_cost + cost > limits.max_cost:
            raise BudgetExceeded(
                f"{self.label} cost cap: ${self.cost + self._pending_cost:.6f} used or reserved "
                f"+ up to ${cost:.6f} for this call > ${limits.max_cost:g}"
            )
        if self.parent is not None:
            self.parent._check(tokens, cost)

    def reserve(self, tokens: int, cost: float) -> Reservation:
        """Admit a call whose worst case is `tokens` and `cost`, or raise BudgetExceeded."""
        self._check(tokens, cost)
        budget: Budget | None = self
        while budget is not None:
            budget._pending_calls += 1
            budget._pending_tokens += tokens
            budget._pending_cost += cost
            budget = budget.parent
        return Reservation(tokens, cost)

    def settle(self, reservation: Reservation, tokens: int, cost: float, *, made: bool) -> None:
        """Replace a reservation by what the call really used (`made=False`: it never went out)."""
        budget: Budget | None = self
        while budget is not None:
            budget._pending_calls -= 1
            budget._pending_tokens -= reservation.tokens
            budget._pending_cost -= reservation.cost
            if made:
                budget.calls += 1
                budget.tokens += tokens
                budget.cost += cost
            budget = budget.parent
