"""The left-out answer-text cascade (`reports.answer_text_scorer`): where it stops, what it pays,
which answer it submits, and the AUC it reports."""

from __future__ import annotations

import numpy as np

from consortium.reports.answer_text_scorer import auc, cascade


def answer(value: str | None, correct: bool, cost: float) -> dict[str, object]:
    return {"answer": value, "correct": correct, "cost_usd": cost}


def test_a_confident_first_answer_stops_at_its_cost() -> None:
    assert cascade(answer("1", True, 1), answer("2", False, 10), answer("3", False, 100), True) == (
        True,
        1.0,
    )


def test_agreement_of_the_first_two_stops_before_the_third() -> None:
    assert cascade(
        answer("7", False, 1), answer("7", False, 10), answer("8", True, 100), False
    ) == (
        False,
        11.0,
    )


def test_the_majority_of_three_is_submitted_else_the_third() -> None:
    majority = cascade(answer("5", True, 1), answer("6", False, 10), answer("5", True, 100), False)
    assert majority == (True, 111.0)
    all_differ = cascade(
        answer("1", True, 1), answer("2", True, 10), answer("3", False, 100), False
    )
    assert all_differ == (False, 111.0)


def test_auc_orders_right_above_wrong() -> None:
    labels = np.array([0.0, 0.0, 1.0, 1.0])
    assert auc(np.array([0.1, 0.2, 0.8, 0.9]), labels) == 1.0
    assert auc(np.array([0.9, 0.8, 0.2, 0.1]), labels) == 0.0
