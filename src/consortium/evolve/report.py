"""The evolve report: rounds, adopted changes with their evidence, rejected ones with the reason,
the final comparison (on tasks no decision saw, when given), and two PNGs (rounds; the
cost–accuracy Pareto frontier)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from consortium.core.costs import unit
from consortium.evaluation.tables import markdown_table, percent
from consortium.evolve.report_plots import plot

if TYPE_CHECKING:
    from consortium.evolve.state import (
        Candidate,
        EvolveState,
        FinalComparison,
        RoundSummary,
        SplitSummary,
    )


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
    lines = _header_lines(state)
    lines += _rounds_lines(state.rounds)
    lines += _adopted_lines(state.rounds, _measure(state))
    lines += _serving_lines(state)
    lines += _rejected_lines(state.rounds, _measure(state))
    if state.final:
        lines += _final_lines(state, state.final)
    if state.rounds:
        lines += _collaboration_lines(state.rounds[-1])
    return "\n".join(lines) + "\n"


def _header_lines(state: EvolveState) -> list[str]:
    """The title, the pool and tasks, and the run's batches, guards, cost measure and caps."""
    config = state.config
    guard = config["guard"]
    return [
        "# Evolve report",
        "",
        f"Pool: {state.pool}. Tasks: {state.tasks}.",
        f"Tuning batch {config['tuning_batch']}, held-out batch {config['heldout_batch']} per "
        f"round, seed {config['seed']}. Guards: {guard['test']} test, alpha {guard['alpha']}, "
        f"margin {guard['margin']}; cheaper-by {guard['cheaper_by']:.0%} with non-inferiority "
        f"{guard['noninferiority']}; cost measured in {unit(_measure(state))}; caps: cost/task "
        f"{guard['max_cost_per_task'] or 'none'}, "
        f"calls/task {guard['max_calls_per_task'] or 'none'}. Grading: the task set's external "
        "grader only.",
        "",
    ]


def _rounds_lines(rounds: list[RoundSummary]) -> list[str]:
    """One row per round: the incumbent's accuracy and cost, its candidates, what was adopted."""
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
    return [
        "## Rounds (incumbent at the start of each round)",
        "",
        *markdown_table([*header, "candidates", "adopted", "flag"], rows),
    ]


def _adopted_lines(rounds: list[RoundSummary], measure: str) -> list[str]:
    """Each adopted change with its rationale, its strategy, its paired evidence and the policy
    folders it was written as."""
    lines = ["", "## Adopted changes and their evidence", ""]
    any_adopted = False
    for summary in rounds:
        for candidate in summary.candidates:
            if not candidate.adopted:
                continue
            any_adopted = True
            lines += _adoption_lines(summary, candidate, measure)
    if not any_adopted:
        lines += ["No change passed the guards.", ""]
    return lines


def _adoption_lines(summary: RoundSummary, candidate: Candidate, measure: str) -> list[str]:
    e = candidate.evidence
    lines = [
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
    return lines


def _serving_lines(state: EvolveState) -> list[str]:
    """The `serve` command for each cluster's policy folder of the evolved strategy, if any."""
    serving = state.serving()
    if not serving:
        return []
    return [
        "## The evolved strategy as policy folders",
        "",
        *[
            f"- {cluster}: `consortium serve --pool POOL --policy {folder}`"
            for cluster, folder in sorted(serving.items())
        ],
        "",
    ]


def _rejected_lines(rounds: list[RoundSummary], measure: str) -> list[str]:
    """One row per rejected candidate: its differences, p, cost, overfit flag and the reason."""
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
    header = ["round", "proposer", "id", "tuning Δ", "held-out Δ", "p", "cost/task", "overfit"]
    table = markdown_table([*header, "reason"], rejected) if rejected else ["None."]
    return ["## Rejected candidates", "", *table]


def _final_lines(state: EvolveState, final: FinalComparison) -> list[str]:
    """Every strategy of the run and every single model on the final tasks, first vs final
    (paired), the verdict, the cost per extra point and the two plots."""
    pool = _final_pool(final, state.config.get("final_limit"))
    table = [
        _final_row(
            f"strategy {s.strategy_id}"
            + (" (first)" if i == 0 else "")
            + (" (final)" if i == len(final.strategies) - 1 else ""),
            s,
        )
        for i, s in enumerate(final.strategies)
    ]
    table += [_final_row(f"single:{m}", s) for m, s in final.singles.items()]
    header = ["policy", "accuracy %", "USD/task", "tokens/task", "s/task", "calls/task"]
    e = final.first_vs_final
    return [
        "",
        f"## Final comparison: the {pool} ({final.tasks} tasks)",
        "",
        *markdown_table([*header, "errors"], table),
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


def _final_row(name: str, s: SplitSummary) -> list[str]:
    return [
        name,
        percent(s.accuracy),
        _usd(s.cost_per_task),
        f"{s.tokens_per_task:,.0f}",
        f"{s.seconds_per_task:.2f}",
        f"{s.calls_per_task:.2f}",
        str(s.errors),
    ]


def _collaboration_lines(last: RoundSummary) -> list[str]:
    """How the incumbent's team worked in the last round, per cluster, on the held-out batch."""
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
    return [
        "",
        f"## Collaboration, round {last.round} (incumbent, held-out batch)",
        "",
        *markdown_table([*header, "right answers by", "verifier P / R %"], collab),
    ]


def _flag(summary: RoundSummary) -> str:
    count = summary.overfit_candidates
    if not count:
        return ""
    adopted = any(c.adopted and c.evidence.overfit for c in summary.candidates)
    return f"{count} with tuning ↑ held-out ↓" + (" (one adopted)" if adopted else "")


def write_report(state: EvolveState, out_dir: Path) -> Path:
    path = out_dir / "report.md"
    path.write_text(to_markdown(state))
    plot(state, out_dir, _measure(state))
    return path
