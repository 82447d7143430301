"""The evolve report: rounds, adopted changes with their evidence, rejected ones with the reason,
the final comparison (on tasks no decision saw, when given), and two PNGs (rounds; the
cost–accuracy Pareto frontier)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from consortium.core.costs import unit
from consortium.evaluation.tables import markdown_table, percent

if TYPE_CHECKING:
    from consortium.evolve.state import EvolveState, FinalComparison, RoundSummary


def _usd(value: float) -> str:
    return f"{value:.2e}"


def _measure(state: EvolveState) -> str:
    """What the run's cost is in (`GuardConfig.cost`): usd, tokens or seconds."""
    return str(state.config.get("guard", {}).get("cost", "usd"))


def _amount(value: float, measure: str) -> str:
    """A cost per task in its measure: 1.23e-03 USD, 412 tokens, 3.1 s."""
    if measure == "tokens":
        return f"{value:,.0f} tokens"
    if measure == "seconds":
        return f"{value:.1f} s"
    return f"{_usd(value)} USD"


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Points (name, cost, accuracy) no other point beats on both (cheaper-or-equal and more
    accurate, or strictly cheaper and as accurate), by increasing cost."""
    front = [
        p
        for p in points
        if not any((q[1] <= p[1] and q[2] > p[2]) or (q[1] < p[1] and q[2] >= p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def _final_pool(final: FinalComparison, final_limit: int | None = None) -> str:
    pool = "final tasks, which no decision saw" if final.independent else "whole held-out pool"
    if final_limit is not None:
        return f"{pool}, sampled to {final_limit} per dataset (--final-limit)"
    return pool


def _verdict(final: FinalComparison, measure: str = "usd") -> str:
    evidence = final.first_vs_final
    gain = evidence.difference
    cost_first, cost_final = evidence.incumbent_cost, evidence.candidate_cost
    more_cost = cost_final > cost_first * 1.0001
    if gain >= 0 and not more_cost:
        return (
            f"The final strategy is at least as accurate as the first on the {_final_pool(final)} "
            f"({gain * 100:+.1f} points) at no more cost per task ({_amount(cost_first, measure)}"
            f" → {_amount(cost_final, measure)})."
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


def _cost_per_point(final: FinalComparison, measure: str = "usd") -> str:
    singles = final.singles
    best = max(singles, key=lambda m: (singles[m].accuracy, -singles[m].per_task(measure)))
    last = final.strategies[-1]
    gain = (last.accuracy - singles[best].accuracy) * 100
    extra = last.per_task(measure) - singles[best].per_task(measure)
    head = (
        f"Best single model on the final tasks: {best} ({percent(singles[best].accuracy)}%, "
        f"{_amount(singles[best].per_task(measure), measure)}/task). Final strategy: "
        f"{percent(last.accuracy)}%, {_amount(last.per_task(measure), measure)}/task. "
    )
    if gain <= 0:
        return head + "No extra accuracy over the best single model, so no cost per extra point."
    per_point = _amount(extra / gain, measure)
    return head + f"Cost per extra point of accuracy: {per_point} per task per point."


def to_markdown(state: EvolveState) -> str:
    config, rounds, final = state.config, state.rounds, state.final
    guard, measure = config["guard"], _measure(state)
    lines = [
        "# Evolve report",
        "",
        f"Pool: {state.pool}. Tasks: {state.tasks}.",
        f"Tuning batch {config['tuning_batch']}, held-out batch {config['heldout_batch']} per "
        f"round, seed {config['seed']}. Guards: {guard['test']} test, alpha {guard['alpha']}, "
        f"margin {guard['margin']}; cheaper-by {guard['cheaper_by']:.0%} with non-inferiority "
        f"{guard['noninferiority']}; cost measured in {unit(measure)}; caps: cost/task "
        f"{guard['max_cost_per_task'] or 'none'}, "
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
                f"{_amount(e.incumbent_cost, measure)} → "
                f"{_amount(e.candidate_cost, measure)}/task, calls "
                f"{e.incumbent_calls:.2f} → {e.candidate_calls:.2f}; tuning difference "
                f"{(e.tuning_difference or 0) * 100:+.1f} points. "
                f"Adopted: {candidate.reason}.",
                "",
            ]
            lines += [
                f"Written as a policy folder for {cluster}: `{folder}` "
                f"(`consortium serve --pool POOL --policy {folder}`).\n"
                for cluster, folder in sorted(summary.served.items())
            ]
    if not any_adopted:
        lines += ["No change passed the guards.", ""]
    serving = state.serving()
    if serving:
        lines += ["## The evolved strategy as policy folders", ""]
        lines += [
            f"- {cluster}: `consortium serve --pool POOL --policy {folder}`"
            for cluster, folder in sorted(serving.items())
        ]
        lines += [""]
    lines += ["## Rejected candidates", ""]
    rejected = [
        [
            str(s.round),
            c.proposer,
            c.strategy_id,
            f"{(c.evidence.tuning_difference or 0) * 100:+.1f}",
            f"{c.evidence.difference * 100:+.1f}",
            f"{c.evidence.p_value:.3g}",
            _amount(c.evidence.candidate_cost, measure),
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
                "cost/task",
                "overfit",
                "reason",
            ],
            rejected,
        )
        if rejected
        else ["None."]
    )
    if final:
        pool = _final_pool(final, config.get("final_limit"))
        lines += ["", f"## Final comparison: the {pool} ({final.tasks} tasks)", ""]
        table = [
            [
                f"strategy {s.strategy_id}"
                + (" (first)" if i == 0 else "")
                + (" (final)" if i == len(final.strategies) - 1 else ""),
                percent(s.accuracy),
                _usd(s.cost_per_task),
                f"{s.tokens_per_task:,.0f}",
                f"{s.seconds_per_task:.2f}",
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
                f"{s.tokens_per_task:,.0f}",
                f"{s.seconds_per_task:.2f}",
                f"{s.calls_per_task:.2f}",
                str(s.errors),
            ]
            for m, s in final.singles.items()
        ]
        header = ["policy", "accuracy %", "USD/task", "tokens/task", "s/task", "calls/task"]
        lines += markdown_table([*header, "errors"], table)
        e = final.first_vs_final
        lines += [
            "",
            f"First vs final (paired): {e.difference * 100:+.1f} points, 95% CI "
            f"[{e.ci_low * 100:+.1f}, {e.ci_high * 100:+.1f}], p = {e.p_value:.3g} "
            f"({e.test}).",
            "",
            _verdict(final, _measure(state)),
            "",
            _cost_per_point(final, _measure(state)),
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

    rounds, measure = state.rounds, _measure(state)
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


def write_report(state: EvolveState, out_dir: Path) -> Path:
    path = out_dir / "report.md"
    path.write_text(to_markdown(state))
    plot(state, out_dir)
    return path
