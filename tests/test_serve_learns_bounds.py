"""The report's bounds of what a guarded learner could show on a stream
(`demo.serve_learns.ceiling`): the guard's decision on the offline fit, and the least exploration
for adopting the team."""

from __future__ import annotations

import numpy as np
import pytest

from consortium.demo.serve_learns.ceiling import exploration_floor, guard_ceiling
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evolve.guards import GuardConfig


def _run(name: str, correct: list[bool], cost: float) -> PolicyRun:
    n = len(correct)
    return PolicyRun(name, np.array(correct), np.full(n, cost), np.ones(n), np.zeros(n))


def test_the_ceiling_is_the_guards_decision_on_the_labelled_rows_only() -> None:
    # the team wins rows 0-5; the cheap model loses them. Labelled: 4 of the wins (p = 1/16,
    # refused at α = 0.05) or all 6 (p = 1/64, adopted)
    cheap = _run("cheap", [False] * 6 + [True] * 4, 1.0)
    team = _run("team", [True] * 10, 5.0)
    assert not guard_ceiling(cheap, team, [0, 1, 2, 3, 8, 9], GuardConfig()).adopted
    decided = guard_ceiling(cheap, team, [0, 1, 2, 3, 4, 5], GuardConfig())
    assert decided.adopted and decided.evidence.wins == 6


def test_the_floor_explores_labelled_requests_until_the_guard_adopts_then_stops() -> None:
    cheap = _run("cheap", [False] * 12, 1.0)
    team = _run("team", [True] * 12, 11.0)
    order = list(range(12))
    labelled = {0, 2, 4, 6, 8, 10}  # the sign test needs 5 straight wins: the fifth is row 8
    floor = exploration_floor(cheap, team, order, labelled, delay=2, guard=GuardConfig())
    assert floor is not None and floor.labels == 5
    assert floor.adopted_at == 10  # row 8's label comes 2 answers later
    assert floor.explore_usd == pytest.approx(5 * 10.0)  # the team's calls beyond the cheap one's
    assert floor.stream_usd == pytest.approx(10 * 1.0 + 2 * 11.0)
    assert floor.share == pytest.approx(50 / 82)


def test_the_floor_is_none_when_the_guard_never_adopts() -> None:
    cheap = _run("cheap", [True] * 6, 1.0)
    team = _run("team", [True] * 6, 3.0)  # no more accurate, and dearer
    assert exploration_floor(cheap, team, range(6), {0, 1, 2, 3, 4, 5}, 1, GuardConfig()) is None
