"""The evolve report's two PNGs: rounds.png (held-out accuracy and cost per round) and
pareto.png (the cost–accuracy Pareto frontier of the final comparison)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from consortium.core.costs import unit

if TYPE_CHECKING:
    from consortium.evolve.state import EvolveState


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Points (name, cost, accuracy) no other point beats on both (cheaper-or-equal and more
    accurate, or strictly cheaper and as accurate), by increasing cost."""
    front = [
        p
        for p in points
        if not any((q[1] <= p[1] and q[2] > p[2]) or (q[1] < p[1] and q[2] >= p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def plot(state: EvolveState, out_dir: Path, measure: str) -> None:
    """rounds.png (held-out accuracy and cost per round) and pareto.png (final held-out pool)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = state.rounds
    if rounds:
        figure, accuracy_axis = plt.subplots(figsize=(6, 3.5))
        steps = [r.round for r in rounds]
        accuracy_axis.plot(
            steps, [100 * r.heldout.accuracy for r in rounds], "o-", label="held-out accuracy"
        )
        accuracy_axis.plot(
            steps,
            [100 * r.tuning.accuracy for r in rounds],
            "s--",
            alpha=0.6,
            label="tuning accuracy",
        )
        accuracy_axis.set_xlabel("round")
        accuracy_axis.set_ylabel("accuracy %")
        cost_axis = accuracy_axis.twinx()
        cost_axis.plot(
            steps,
            [r.heldout.per_task(measure) for r in rounds],
            "^:",
            color="grey",
            label=f"{unit(measure)}/task",
        )
        cost_axis.set_ylabel(f"{unit(measure)} per task")
        _readable_scale(cost_axis, [r.heldout.per_task(measure) for r in rounds], "y")
        handles = accuracy_axis.get_legend_handles_labels()
        more = cost_axis.get_legend_handles_labels()
        accuracy_axis.legend(handles[0] + more[0], handles[1] + more[1], fontsize=8)
        accuracy_axis.set_title("Incumbent strategy per round")
        figure.tight_layout()
        figure.savefig(out_dir / "rounds.png", dpi=110)
        plt.close(figure)
    final = state.final
    if final:
        points = [
            (f"single:{m}", s.per_task(measure), 100 * s.accuracy) for m, s in final.singles.items()
        ]
        points += [
            (f"strategy {s.strategy_id}", s.per_task(measure), 100 * s.accuracy)
            for s in final.strategies
        ]
        front = pareto_front(points)
        figure, axis = plt.subplots(figsize=(7, 4.5))
        for name, cost, acc in points:
            marker = "o" if name.startswith("single:") else "*"
            axis.scatter(cost, acc, marker=marker, s=60 if marker == "o" else 160)
            axis.annotate(
                name.removeprefix("single:"),
                (cost, acc),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        axis.plot(
            [p[1] for p in front],
            [p[2] for p in front],
            "k--",
            linewidth=1,
            label="Pareto frontier",
        )
        scale = _readable_scale(axis, [p[1] for p in points], "x")
        axis.set_xlabel(f"{unit(measure)} per task" + (" (log)" if scale == "log" else ""))
        if not any(p[1] for p in points):
            axis.set_xlabel(
                f"{unit(measure)} per task: all 0 (the pool's prices are 0; try --cost)"
            )
        axis.set_ylabel("held-out accuracy %")
        axis.set_title("Cost–accuracy: single models (o) and evolved strategies (*)")
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out_dir / "pareto.png", dpi=110)
        plt.close(figure)


def _readable_scale(axis: Any, values: list[float], which: str) -> str:
    """A log axis only where every value is positive and they span more than a factor of 10;
    otherwise linear (all-zero costs get a small positive range, never -0.04…0.04)."""
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values) and max(positive) > 10 * min(positive):
        (axis.set_xscale if which == "x" else axis.set_yscale)("log")
        return "log"
    top = max(values, default=0.0)
    (axis.set_xlim if which == "x" else axis.set_ylim)(0, top * 1.15 if top > 0 else 1)
    return "linear"
