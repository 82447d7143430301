"""What a run's cost is measured in: dollars, tokens or wall-clock seconds.

A pool of local or self-hosted models declares prices of 0, so dollars say nothing there: their
users pay in tokens (the load on their servers) and seconds (the wait). Evolve's guards, its
frontier plots and its reports take any of the three (`--cost usd|tokens|seconds`).
"""

from __future__ import annotations

from typing import Literal, Protocol

CostMeasure = Literal["usd", "tokens", "seconds"]
COST_MEASURES: tuple[CostMeasure, ...] = ("usd", "tokens", "seconds")
UNITS: dict[str, str] = {"usd": "USD", "tokens": "tokens", "seconds": "s"}


class Costed(Protocol):
    """A task's result: what it spent, in each measure."""

    @property
    def cost(self) -> float: ...

    @property
    def tokens(self) -> int: ...

    @property
    def seconds(self) -> float: ...


def cost_of(result: Costed, measure: CostMeasure) -> float:
    if measure == "tokens":
        return float(result.tokens)
    if measure == "seconds":
        return result.seconds
    return result.cost


def unit(measure: str) -> str:
    """`USD`, `tokens` or `s`: how a figure in `measure` is labelled."""
    return UNITS.get(measure, measure)
