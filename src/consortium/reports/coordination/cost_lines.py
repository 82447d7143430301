"""The coordination report's cost lines: the cost target (within TOLERANCE of the best single
model at ≤ 30 % of its cost, on test and train), the weighted vote matched for less, and how a
cost figure is labelled in the run's measure (dollars, tokens or seconds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from consortium.core.costs import CostMeasure
from consortium.evaluation.recorded.cost_measure import figure_label
from consortium.evaluation.recorded.scorer import MATCHES_THE_VOTE
from consortium.evaluation.recorded.selection import TOLERANCE


def cost_label(summary: Mapping[str, Any]) -> str:
    measure: CostMeasure = summary.get("cost_measure", "usd")
    return figure_label(measure)


def cost_lines(summary: Mapping[str, Any]) -> list[str]:
    """The cost target, met by a policy within TOLERANCE of the best single model at ≤ 30 % of its
    cost on the test split *and* on the train split (a test figure alone is not counted: on a
    small split a policy the train split rules out can tie by luck). Not judged when the best
    single costs nothing in the measure (every price 0, in dollars): no share can be taken; nor
    when it scores within TOLERANCE of 0 % on test: a policy that asks nothing would meet it."""
    label = cost_label(summary)
    head = f"- cost (within {TOLERANCE} pts at ≤ 30 % of the best single's {label})"
    if summary.get("best_single_untold"):
        return [f"{head}: not judged, the train split names no best single (all tie)"]
    if summary.get("best_single_cost_per_question", 1.0) == 0:
        return [
            f"{head}: not judged, the best single costs 0 {label} per question on test (prices "
            "of 0: --cost tokens or seconds measures what these models spend)"
        ]
    if summary["best_single_accuracy"] <= TOLERANCE:  # the target asks for no right answer
        return [f"{head}: not judged, {_nothing_to_keep(summary)}"]
    single, single_train = summary["best_single_accuracy"], summary["best_single_train_accuracy"]
    candidates = [p for p in summary["policies"] if p["family"] not in ("oracle", "single")]
    close = [p for p in candidates if p["accuracy"] >= single - TOLERANCE]
    on_test = [p for p in close if p["cost_vs_best_single"] <= 0.30]
    backed = [
        p
        for p in on_test
        if p["train_accuracy"] >= single_train - TOLERANCE
        and p["train_cost_vs_best_single"] <= 0.30
    ]
    if backed:
        line = f"{head}: met by {_priced(backed)} (within it on the train split too)"
    else:
        dearer = [p for p in close if p not in on_test]
        cheapest = min(dearer, key=lambda p: p["cost_vs_best_single"]) if dearer else None
        line = f"{head}: missed"
        if cheapest is not None:
            line += (
                f"; the cheapest policy within {TOLERANCE} pts above 30 % is {cheapest['name']} "
                f"({cheapest['accuracy']:.2f}) at {100 * cheapest['cost_vs_best_single']:.1f} %"
            )
        line += _floor_text(summary.get("cost_floor_vs_best_single"), label)
    unbacked = [p for p in on_test if p not in backed]
    if unbacked:
        line += f"; on the test split only, not counted (outside it on train): {_priced(unbacked)}"
    return [line]


def _nothing_to_keep(summary: Mapping[str, Any]) -> str:
    """Why a best single within TOLERANCE of 0 % leaves the cost target nothing to judge."""
    if all(p["accuracy"] == 0 for p in summary["policies"] if p["family"] != "oracle"):
        return "every policy scores 0 % on test: there is no accuracy to keep at a lower cost"
    return (
        f"the best single scores {summary['best_single_accuracy']:.2f} % on test, within "
        f"{TOLERANCE} pts of a policy that asks no model"
    )


def _priced(policies: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(
        f"{p['name']} {p['accuracy']:.2f} at {100 * p['cost_vs_best_single']:.1f} %"
        for p in policies
    )


def _floor_text(floor: float | None, label: str) -> str:
    """What an oracle that pays only for the cheapest right answer needs (baselines.cost_floor)."""
    if floor is None:
        return ""
    verdict = (
        "so no policy over this pool can meet the target"
        if floor > 0.30
        else "so the pool allows it and no policy here finds it"
    )
    return (
        f"; the floor, an oracle paying only for the cheapest right answer on just enough "
        f"questions, is {100 * floor:.1f} % of the best single's {label}, {verdict}"
    )


def vote_match_lines(summary: Mapping[str, Any]) -> list[str]:
    """The honest bar matched for less: the train-selected cascade against the weighted vote."""
    policies = summary["policies"]
    vote = next((p for p in policies if p["name"].startswith("weighted vote")), None)
    match = next((p for p in policies if p["note"] == MATCHES_THE_VOTE), None)
    if vote is None or match is None:
        return []
    share = match["cost_per_question"] / (vote["cost_per_question"] or 1.0)
    return [
        f"- the weighted vote matched for less: {match['name']} {match['accuracy']:.2f}, "
        f"Δ vs weighted vote {interval_text(match['vs_weighted_vote'])}, at {100 * share:.1f} % of "
        f"the vote's {cost_label(summary)} ({100 * match['cost_vs_best_single']:.1f} % of the best "
        "single's)"
    ]


def cost_text(value: float, label: str) -> str:
    return f"{value:.5f}" if label == "$" else f"{value:.2f}"


def interval_text(d: Mapping[str, float]) -> str:
    return f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"
