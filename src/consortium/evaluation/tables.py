"""Evaluation tables as Markdown, rich tables and JSON. Every report names the pool it ran on."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table

from consortium.evaluation.results import ORACLE, EvalReport, PolicySummary


def percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal; "–" for none."""
    return "–" if value is None else f"{100 * value:.1f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _row(report: EvalReport, summary: PolicySummary) -> list[str]:
    cells = [summary.policy]
    cells += [percent(summary.accuracy.get(d)) for d in report.datasets]
    cells += [percent(summary.mean(group)) for group in report.groups.values()]
    if report.recorded:
        recorded = report.recorded.get(summary.policy)
        cells.append(percent(sum(recorded.values()) / len(recorded)) if recorded else "–")
    per_task = max(summary.tasks, 1)
    cells += [
        f"{summary.calls / per_task:.2f}",
        f"{summary.tokens / per_task:.0f}",
        f"{summary.cost / per_task:.6f}",
        str(summary.errors),
    ]
    return cells


PER_TASK = ["calls/task", "tokens/task", "$/task"]
"""The spending columns: each a mean per task (the viewer's names); the run's totals go under the
table."""


def _header(report: EvalReport) -> list[str]:
    header = ["policy", *report.datasets, *(f"{name} mean" for name in report.groups)]
    if report.recorded:
        header.append("recorded mean")
    return [*header, *PER_TASK, "errors"]


def run_totals(report: EvalReport) -> tuple[int, int, float, int]:
    """Calls, tokens, $ and errors of every policy's tasks together."""
    summaries = report.summaries
    return (
        sum(s.calls for s in summaries),
        sum(s.tokens for s in summaries),
        sum(s.cost for s in summaries),
        sum(s.errors for s in summaries),
    )


def _totals_line(report: EvalReport) -> str:
    calls, tokens, cost, _ = run_totals(report)
    return f"Run total, every policy: {calls:,} calls, {tokens:,} tokens, ${cost:.4f}."


def to_markdown(report: EvalReport) -> str:
    header = _header(report)
    lines = [
        f"Pool: {report.pool}",
        "",
        f"Tasks: {report.tasks}",
        "",
        "Accuracy in % per dataset; `recorded mean` is the mean over datasets that the recorded "
        "data predict for the same questions."
        if report.recorded
        else "Accuracy in % per dataset.",
        "",
        *markdown_table(header, [_row(report, s) for s in report.summaries]),
        "",
        _totals_line(report),
    ]
    failures = failure_lines(report)
    if failures:
        lines += ["", "Why tasks failed:", "", *(f"- {line}" for line in failures)]
    if report.run_id:
        lines += ["", f"Traces: run `{report.run_id}` (`consortium traces show {report.run_id}`)."]
    return "\n".join(lines) + "\n"


COLUMN_WIDTH = 8
"""Terminal width of one policy's column: "100.0" plus padding and a border."""


def failure_lines(report: EvalReport, shown: int = 3) -> list[str]:
    """Why tasks failed, per policy: each distinct reason with how many tasks it stopped."""
    lines = []
    for summary in report.summaries:
        reasons = Counter(summary.failures.values())
        for text, count in reasons.most_common(shown):
            lines.append(f"{summary.policy}: {count} task(s) failed: {text}")
        if len(reasons) > shown:
            lines.append(f"{summary.policy}: {len(reasons) - shown} more reason(s) in the JSON")
    return lines


def to_rich(report: EvalReport, title: str = "", width: int = 100) -> Group:
    """Tables that fit `width` columns: the summary per policy (numbered), then the accuracy per
    dataset with datasets as rows and the policies by number as columns, split over as many
    tables as the width needs. The Markdown and JSON reports keep the one wide table."""
    summary = Table(
        title=title or None,
        # Wrapped here: the CLI's console never breaks lines itself (paths stay whole).
        caption=textwrap.fill(
            f"{_totals_line(report)} Means of the per-dataset accuracy in %; pool: {report.pool}",
            width,
            break_on_hyphens=False,  # a pool's path stays whole
        ),
        caption_justify="left",
    )
    summary.add_column("#", justify="right", no_wrap=True)
    summary.add_column("policy", overflow="fold", min_width=20)
    means = list(report.groups)
    if report.recorded:
        means.append("recorded")
    # "calls/task" on two lines: the table fits 100 columns with every figure whole
    for name in [*means, *(n.replace("/", "\n/", 1) for n in PER_TASK[:2]), PER_TASK[2]]:
        summary.add_column(name, justify="right", no_wrap=True)
    summary.add_column("errors", justify="right", no_wrap=True)
    skipped = len(report.datasets)  # the per-dataset cells go to the second table
    for number, policy in enumerate(report.summaries, 1):
        row = _row(report, policy)
        summary.add_row(str(number), row[0], *row[1 + skipped :])
    # Datasets as rows, policies by number as columns: as many columns per table as fit.
    label_width = max(len("dataset"), *(len(d) for d in report.datasets)) + 3
    per_table = max(1, (width - label_width - 1) // COLUMN_WIDTH)
    numbers = list(range(1, len(report.summaries) + 1))
    tables = []
    for start in range(0, len(numbers), per_table):
        chunk = numbers[start : start + per_table]
        table = Table(
            title="accuracy in % per dataset (columns: the policies' #)" if not start else None
        )
        table.add_column("dataset", no_wrap=True)
        for number in chunk:
            table.add_column(f"#{number}", justify="right", no_wrap=True)
        for dataset in report.datasets:
            table.add_row(
                dataset,
                *(percent(report.summaries[n - 1].accuracy.get(dataset)) for n in chunk),
            )
        tables.append(table)
    return Group(summary, *tables)


def _entry(report: EvalReport, summary: PolicySummary) -> dict[str, Any]:
    return {
        "per_dataset": summary.accuracy,
        **{f"{name.lower()}_mean": summary.mean(group) for name, group in report.groups.items()},
        "tasks": summary.tasks,
        "calls": summary.calls,
        "tokens": summary.tokens,
        "cost": summary.cost,
        "seconds": summary.seconds,
        "errors": summary.errors,
        "failures": summary.failures,
        **(
            {"recorded": report.recorded[summary.policy]}
            if summary.policy in report.recorded
            else {}
        ),
    }


def best_single(report: EvalReport) -> PolicySummary | None:
    """The single model with the best mean over the first dataset group (ID when present)."""
    singles = [s for s in report.summaries if s.policy.startswith("single:")]
    if not singles:
        return None
    group = next(iter(report.groups.values()), report.datasets)
    return max(singles, key=lambda s: s.mean(group) or 0.0)


def to_json(report: EvalReport) -> dict[str, Any]:
    """Every policy by name, plus the keys `coordinator` (the first trained policy), `best_single`,
    `random` and `oracle` where they were evaluated."""
    policies = {s.policy: _entry(report, s) for s in report.summaries}
    result: dict[str, Any] = {
        "pool": report.pool,
        "tasks": report.tasks,
        "run_id": report.run_id,
        "policies": policies,
    }
    trained = [s for s in report.summaries if s.policy.startswith("trinity")]
    if trained:
        result["coordinator"] = {"policy": trained[0].policy, **policies[trained[0].policy]}
    best = best_single(report)
    if best is not None:
        result["best_single"] = {"policy": best.policy, **policies[best.policy]}
    for key, name in (("random", "random"), ("oracle", ORACLE)):
        if name in policies:
            result[key] = policies[name]
    return result


def plot_report(report: dict[str, Any], path: Path) -> None:
    """A bar chart of each policy's mean per dataset group, from `to_json`'s output."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies: dict[str, dict[str, Any]] = report["policies"]
    groups = [k.removesuffix("_mean") for k in next(iter(policies.values())) if k.endswith("_mean")]
    names = list(policies)
    figure, axis = plt.subplots(figsize=(max(6.0, 0.8 * len(names)), 4))
    width = 0.8 / max(len(groups), 1)
    for index, group in enumerate(groups):
        values = [100 * (policies[n][f"{group}_mean"] or 0.0) for n in names]
        axis.bar([i + index * width for i in range(len(names))], values, width, label=group.upper())
    axis.set_xticks([i + width * (len(groups) - 1) / 2 for i in range(len(names))])
    axis.set_xticklabels(
        [n.removeprefix("single:")[:22] for n in names], rotation=35, ha="right", fontsize=8
    )
    axis.set_ylabel("accuracy (%)")
    axis.set_ylim(0, 100)  # all-zero accuracies otherwise get an axis of -0.04…0.04
    axis.set_title(str(report["pool"])[:70], fontsize=8)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
