"""Cost as dollars, tokens or seconds: evolve's guards and plots take the run's measure."""

from __future__ import annotations

import warnings

import numpy as np

from consortium.evaluation.results import TaskResult
from consortium.evolve.guards import GuardConfig, Measured, judge
from consortium.evolve.measure import measured
from consortium.evolve.report_plots import _readable_scale
from consortium.tasks.base import Grade, Task


def result(cost: float, tokens: int, seconds: float) -> TaskResult:
    task = Task("t", "q", "d", "test", "1")
    return TaskResult("p", task, "1", Grade(True, 1.0), 1, tokens, cost, seconds=seconds)


def test_the_measure_picks_the_cost() -> None:
    rows = [result(0.0, 300, 2.0), result(0.0, 100, 4.0)]
    assert measured(rows).cost.tolist() == [0.0, 0.0]
    assert measured(rows, "tokens").cost.tolist() == [300.0, 100.0]
    assert measured(rows, "seconds").cost_per_task == 3.0


def test_a_zero_price_pool_can_adopt_a_change_that_saves_tokens() -> None:
    correct, calls = np.ones(200), np.ones(200)
    incumbent = Measured.of(correct, np.full(200, 400.0), calls)
    candidate = Measured.of(correct, np.full(200, 200.0), calls)
    decision = judge(incumbent, candidate, GuardConfig(cost="tokens"))
    assert decision.adopted and "50% cheaper (tokens)" in decision.reason
    zero = Measured.of(correct, np.zeros(50), calls)
    assert not judge(zero, zero, GuardConfig()).adopted  # in USD nothing is ever cheaper


def test_all_zero_costs_get_a_linear_axis_without_warnings() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _readable_scale(axis, [0.0, 0.0], "x") == "linear"
        axis.scatter([0.0, 0.0], [10, 20])
        figure.canvas.draw()
    assert axis.get_xlim() == (0.0, 1.0)
    assert _readable_scale(axis, [1e-4, 1e-2], "y") == "log"
    plt.close(figure)
