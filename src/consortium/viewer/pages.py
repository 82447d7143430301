"""The bodies of the runs list, the task page and the frontier page."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import Engine

from consortium.viewer import queries
from consortium.viewer.charts import frontier_svg
from consortium.viewer.frontier import axis_of, frontier, points
from consortium.viewer.html import Palette, num, table
from consortium.viewer.memo import AggregateMemo, RunAggregates
from consortium.viewer.transcript import policy_section


def runs_body(engine: Engine, memo: AggregateMemo) -> str:
    """Every run with its calls and cost (each run's totals kept until it changes)."""
    rows = []
    for run in queries.run_headers(engine):
        calls, cost = memo.of(run["run_id"]).totals()
        rows.append(
            [
                f"<a class='run' href='/runs/{quote(run['run_id'])}'>{escape(run['run_id'])}</a>",
                escape(run["kind"]),
                escape(run["status"]),
                escape(run["pool"] or ""),
                num(str(calls)),
                num(f"{cost:.6f}"),
            ]
        )
    header = ["run", "kind", "status", "pool", "calls", "cost $"]
    return table(header, rows, "runs") if rows else "<p>No runs.</p>"


def task_body(
    engine: Engine, aggregates: RunAggregates, task_id: str, policy: str | None
) -> str | None:
    """Per policy (or the one asked for): grade, workflow, transcript; None when the task has
    neither calls nor results in the run."""
    run_id = aggregates.run_id
    calls = queries.task_calls(engine, run_id, task_id)
    graded = queries.task_results(engine, run_id, task_id)
    by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_policy[call["policy"] or ""].append(call)
    stages_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for stage in queries.task_stages(engine, run_id, task_id):
        stages_of[stage["policy"] or ""].append(stage)
    result_of = {r["policy"]: r for r in graded}
    policies = list(dict.fromkeys([*by_policy, *result_of]))
    if not policies:
        return None
    shown = [policy] if policy is not None and policy in policies else policies
    palette = Palette(aggregates.models())
    base = f"/runs/{quote(run_id)}/tasks/{quote(task_id)}"
    links = " · ".join(
        f"<a class='task-policy' href='{base}?policy={quote(p)}'>{escape(p)}</a>" for p in policies
    )
    dataset = next((r["dataset"] for r in graded if r["dataset"]), "")
    head = (
        f"<p>run <a href='/runs/{quote(run_id)}'>{escape(run_id)}</a> · dataset "
        f"{escape(dataset or '')} · policies: {links} · <a href='{base}'>all</a></p>"
    )
    sections = "".join(
        policy_section(p, by_policy.get(p, []), result_of.get(p), palette, stages_of.get(p, []))
        for p in shown
    )
    return head + palette.legend() + f"<div id='timeline'>{sections}</div>"


def frontier_body(aggregates: RunAggregates) -> str:
    run_id = aggregates.run_id
    found = points(aggregates.stats())
    if not found:
        return "<p>No task results in this run yet.</p>"
    axis = axis_of(found)
    line = frontier(found, axis)
    note = (
        ""
        if axis == "cost"
        else "<p id='zero-cost' class='muted'>Every policy of this run cost $0 (its pool has no "
        "prices), so the x axis shows tokens per task instead.</p>"
    )
    rows = [
        [
            escape(p.policy),
            num(f"{100 * p.accuracy:.1f}"),
            num(f"{100 * p.low:.1f}–{100 * p.high:.1f}"),
            num(f"{p.cost:.6f}"),
            num(f"{p.tokens:,.0f}"),
            num(f"{p.calls:.2f}"),
            num(str(p.tasks)),
            "single model" if p.single else "",
            "<b class='ok'>yes</b>" if p in line else "",
        ]
        for p in sorted(found, key=lambda p: (p.x(axis), -p.accuracy))
    ]
    header = [
        "policy", "accuracy %", "95% interval", "$/task", "tokens/task", "calls/task", "tasks",
        "", "on the frontier",
    ]  # fmt: skip
    return (
        f"<p>run <a href='/runs/{quote(run_id)}'>{escape(run_id)}</a>: every policy as a point "
        "(accuracy = mean of the per-dataset accuracies; bars: 95% interval, normal "
        "approximation at Agresti–Coull-adjusted rates); squares are single models; the dashed "
        "line joins the policies no other beats at the same or lower cost.</p>"
        + note
        + frontier_svg(found, axis)
        + table(header, rows, "frontier")
    )
