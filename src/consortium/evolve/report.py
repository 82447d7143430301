"""The evolve report: rounds, adopted changes with their evidence, rejected ones with the reason,
the final comparison (on tasks no decision saw, when given), and two PNGs (rounds; the
cost–accuracy Pareto frontier)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from consortium.evaluation.tables import markdown_table, percent

if TYPE_CHECKING:
    from consortium.evolve.state import EvolveState, FinalComparison, RoundSummary


def _usd(value: float) -> str:
    return f"{value:.2e}"


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Points (name, cost, accuracy) no other point beats on both (cheaper-or-equal and more
    accurate, or strictly cheaper and as accurate), by increasing cost."""
    front = [
        p
        for p in points
        if not any((q[1] <= p[1] and q[2] > p[2]) or (q[1] < p[1] and q[2] >= p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def _final_pool(final: FinalComparison) -> str:
    if final.independent:
        return "final tasks, which no decision saw"
    return "whole held-out pool"


def _verdict(final: FinalComparison) -> str:
    evidence = final.first_vs_final
    gain = evidence.difference
    cost_first, cost_final = evidence.incumbent_cost, evidence.candidate_cost
    more_cost = cost_final > cost_first * 1.0001
    if gain >= 0 and not more_cost:
        return (
            f"The final strategy is at least as accurate as the first on the {_final_pool(final)} "
            f"({gain * 100:+.1f} points) at no more cost per task ({_usd(cost_first)} → "
            f"{_usd(cost_final)} USD)."
        )
    why = []
    if gain < 0:
        why.append(f"it is {abs(gain) * 100:.1f} points less accurate")
    if more_cost:
        why.append(
            f"it costs {cost_final / cost_first - 1:.0%} more per task"
            if cost_first
            else "it costs more"
        )
    if not more_cost and cost_first:
        why.append(f"it costs {1 - cost_final / cost_first:.0%} less per task")
    return (
        "The final strategy is not both as accurate and as cheap as the first: "
        + " and ".join(why)
        + ". Each adoption passed the guards on its round's held-out batch"
        + (
            "; the final tasks were never used by any decision."
            if final.independent
            else "; the whole held-out pool contains those batches, so this comparison is not "
            "independent of the decisions (give --final for one that is)."
        )
    )


def _cost_per_point(final: FinalComparison) -> str:
    singles = final.singles
    best = max(singles, key=lambda m: (singles[m].accuracy, -singles[m].cost_per_task))
    last = final.strategies[-1]
    gain = (last.accuracy - singles[best].accuracy) * 100
    extra = last.cost_per_task - singles[best].cost_per_task
    head = (
        f"Best single model on the final tasks: {best} ({percent(singles[best].accuracy)}%, "
        f"{_usd(singles[best].cost_per_task)} USD/task). Final strategy: "
        f"{percent(last.accuracy)}%, {_usd(last.cost_per_task)} USD/task. "
    )
    if gain <= 0:
        return head + "No extra accuracy over the best single model, so no cost per extra point."
    return head + f"Cost per extra point of accuracy: {_usd(extra / gain)} USD per task per point."


def to_markdown(state: EvolveState) -> str:
    config, rounds, final = state.config, state.rounds, state.final
    guard = config["guard"]
    lines = [
        "# Evolve report",
        "",
        f"Pool: {state.pool}. Tasks: {state.tasks}.",
        f"Tuning batch {config['tuning_batch']}, held-out batch {config['heldout_batch']} per "
        f"round, seed {config['seed']}. Guards: {guard['test']} test, alpha {guard['alpha']}, "
        f"margin {guard['margin']}; cheaper-by {guard['cheaper_by']:.0%} with non-inferiority "
        f"{guard['noninferiority']}; caps: cost/task {guard['max_cost_per_task'] or 'none'}, "
        f"calls/task {guard['max_calls_per_task'] or 'none'}. Grading: the task set's external "
        "grader only.",
        "",
        "## Rounds (incumbent at the start of each round)",
        "",
    ]
    rows = []
    for summary in rounds:
        adopted = next((c for c in summary.candidates if c.adopted), None)
        rows.append(
            [
                str(summary.round),
                summary.incumbent_id,
                percent(summary.tuning.accuracy),
                percent(summary.heldout.accuracy),
                _usd(summary.heldout.cost_per_task),
                f"{summary.heldout.calls_per_task:.2f}",
                str(len(summary.candidates)),
                f"{adopted.strategy_id} ({adopted.proposer})" if adopted else "none",
                _flag(summary),
            ]
        )
    header = ["round", "incumbent", "tuning %", "held-out %", "USD/task", "calls/task"]
    lines += markdown_table([*header, "candidates", "adopted", "flag"], rows)
    lines += ["", "## Adopted changes and their evidence", ""]
    any_adopted = False
    for summary in rounds:
        for candidate in summary.candidates:
            if not candidate.adopted:
                continue
            any_adopted = True
            e = candidate.evidence
            lines += [
                f"### Round {summary.round}: {candidate.proposer} → {candidate.strategy_id}",
                "",
                candidate.rationale,
                "",
                *[f"- {line}" for line in candidate.strategy.describe()],
                "",
                f"Evidence ({e.tasks} held-out tasks, paired): "
                f"{percent(e.incumbent_accuracy)}% → {percent(e.candidate_accuracy)}% "
                f"({e.difference * 100:+.1f} points, 95% CI "
                f"[{e.ci_low * 100:+.1f}, {e.ci_high * 100:+.1f}], {e.wins} wins / "
                f"{e.losses} losses, p = {e.p_value:.3g} {e.test}); cost "
                f"{_usd(e.incumbent_cost)} → {_usd(e.candidate_cost)} USD/task, calls "
                f"{e.incumbent_calls:.2f} → {e.candidate_calls:.2f}; tuning difference "
                f"{(e.tuning_difference or 0) * 100:+.1f} points. "
                f"Adopted: {candidate.reason}.",
                "",
            ]
    if not any_adopted:
        lines += ["No change passed the guards.", ""]
    lines += ["## Rejected candidates", ""]
    rejected = [
        [
            str(s.round),
            c.proposer,
            c.strategy_id,
            f"{(c.evidence.tuning_difference or 0) * 100:+.1f}",
            f"{c.evidence.difference * 100:+.1f}",
            f"{c.evidence.p_value:.3g}",
            _usd(c.evidence.candidate_cost),
            "yes" if c.evidence.overfit else "",
            c.reason,
        ]
        for s in rounds
        for c in s.candidates
        if not c.adopted
    ]
    lines += (
        markdown_table(
            [
                "round",
                "proposer",
                "id",
                "tuning Δ",
                "held-out Δ",
                "p",
                "USD/task",
                "overfit",
                "reason",
            ],
            rejected,
        )
        if rejected
        else ["None."]
    )
    if final:
        lines += ["", f"## Final comparison: the {_final_pool(final)} ({final.tasks} tasks)", ""]
        table = [
            [
                f"strategy {s.strategy_id}"
                + (" (first)" if i == 0 else "")
                + (" (final)" if i == len(final.strategies) - 1 else ""),
                percent(s.accuracy),
                _usd(s.cost_per_task),
                f"{s.calls_per_task:.2f}",
                str(s.errors),
            ]
            for i, s in enumerate(final.strategies)
        ]
        table += [
            [
                f"single:{m}",
                percent(s.accuracy),
                _usd(s.cost_per_task),
                f"{s.calls_per_task:.2f}",
                str(s.errors),
            ]
            for m, s in final.singles.items()
        ]
        lines += markdown_table(["policy", "accuracy %", "USD/task", "calls/task", "errors"], table)
        e = final.first_vs_final
        lines += [
            "",
            f"First vs final (paired): {e.difference * 100:+.1f} points, 95% CI "
            f"[{e.ci_low * 100:+.1f}, {e.ci_high * 100:+.1f}], p = {e.p_value:.3g} "
            f"({e.test}).",
            "",
            _verdict(final),
            "",
            _cost_per_point(final),
            "",
            "![held-out accuracy and cost per round](rounds.png)",
            "",
            "![cost–accuracy Pareto frontier](pareto.png)",
        ]
    if rounds:
        last = rounds[-1]
        lines += ["", f"## Collaboration, round {last.round} (incumbent, held-out batch)", ""]
        collab = [
            [
                cluster,
                percent(c.accuracy),
                _usd(c.cost_per_task),
                f"{c.calls_per_task:.2f}",
                percent(c.escalation_rate),
                percent(c.disagreement_rate),
                ", ".join(f"{k} {v}" for k, v in sorted(c.right_answers_by.items())),
                f"{percent(c.verifier_precision)} / {percent(c.verifier_recall)}",
            ]
            for cluster, c in last.collaboration.items()
        ]
        header = ["cluster", "accuracy %", "USD/task", "calls/task", "escalated %", "disagree %"]
        lines += markdown_table([*header, "right answers by", "verifier P / R %"], collab)
    return "\n".join(lines) + "\n"


def _flag(summary: RoundSummary) -> str:
    count = summary.overfit_candidates
    if not count:
        return ""
    adopted = any(c.adopted and c.evidence.overfit for c in summary.candidates)
    return f"{count} with tuning ↑ held-out ↓" + (" (one adopted)" if adopted else "")


def plot(state: EvolveState, out_dir: Path) -> None:
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
            [r.heldout.cost_per_task for r in rounds],
            "^:",
            color="grey",
            label="USD/task",
        )
        cost_axis.set_ylabel("USD per task")
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
            (f"single:{m}", s.cost_per_task, 100 * s.accuracy) for m, s in final.singles.items()
        ]
        points += [
            (f"strategy {s.strategy_id}", s.cost_per_task, 100 * s.accuracy)
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
        axis.set_xscale("log")
        axis.set_xlabel("USD per task (log)")
        axis.set_ylabel("held-out accuracy %")
        axis.set_title("Cost–accuracy: single models (o) and evolved strategies (*)")
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out_dir / "pareto.png", dpi=110)
        plt.close(figure)


def write_report(state: EvolveState, out_dir: Path) -> Path:
    path = out_dir / "report.md"
    path.write_text(to_markdown(state))
    plot(state, out_dir)
    return path
