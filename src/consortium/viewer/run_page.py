"""The run page: its policies, a selector, and the selected policy's choices by dataset (model ×
role shares) beside each dataset's best single model and the oracle's choices; calls, tokens and
$ per task; the policy's tasks, paged."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import Engine

from consortium.coord.strategy import Strategy
from consortium.viewer import queries
from consortium.viewer.html import Palette, num, pager, shares_bar, shares_text, table
from consortium.viewer.memo import RunAggregates
from consortium.viewer.queries import SINGLE, Choice, DatasetStats

ANCHORS = ("random", "oracle")


def default_policy(policies: Sequence[str]) -> str | None:
    """The policy a user opens the run for: the first that is neither a single model, random nor
    an oracle; else the first."""
    for policy in policies:
        if not policy.startswith(SINGLE) and not policy.startswith(ANCHORS):
            return policy
    return policies[0] if policies else None


def best_singles(stats: Sequence[DatasetStats]) -> dict[str, DatasetStats]:
    """Per dataset, the single-model policy with the best accuracy (ties: the cheaper)."""
    best: dict[str, DatasetStats] = {}
    for row in stats:
        if not row.policy.startswith(SINGLE):
            continue
        held = best.get(row.dataset)
        if held is None or (row.accuracy, -row.cost) > (held.accuracy, -held.cost):
            best[row.dataset] = row
    return best


def _parts(choices: Sequence[Choice], dataset: str) -> list[tuple[str, str, int]]:
    return [(c.model, c.role, c.count) for c in choices if c.dataset == dataset]


def _totals(stats: Sequence[DatasetStats], policy: str) -> tuple[float, float, int]:
    """A policy's mean accuracy over its datasets, its $ per task and its tasks."""
    rows = [s for s in stats if s.policy == policy and s.tasks]
    tasks = sum(r.tasks for r in rows)
    if not rows:
        return 0.0, 0.0, 0
    return sum(r.accuracy for r in rows) / len(rows), sum(r.cost for r in rows) / tasks, tasks


def versus_its_favourite(
    stats: Sequence[DatasetStats], selected: str, choices: Sequence[Choice]
) -> str:
    """The policy beside the model it calls most, run alone in the same run (when it was)."""
    calls: dict[str, int] = defaultdict(int)
    for choice in choices:
        calls[choice.model] += choice.count
    if not calls or selected.startswith(SINGLE):
        return ""
    favourite = max(calls, key=lambda m: calls[m])
    alone = SINGLE + favourite
    if not any(s.policy == alone for s in stats):
        return ""
    share = 100 * calls[favourite] / sum(calls.values())
    mine, theirs = _totals(stats, selected), _totals(stats, alone)
    return (
        f"<p id='versus'>It sends {share:.0f}% of its calls to <b>{escape(favourite)}</b>. "
        f"{escape(selected)}: {100 * mine[0]:.1f}% at ${mine[1]:.6f} per task; "
        f"{escape(favourite)} alone: {100 * theirs[0]:.1f}% at ${theirs[1]:.6f} per task.</p>"
    )


def _selector(base: str, policies: Sequence[str], selected: str) -> str:
    options = "".join(
        f"<option value='{escape(p)}'{' selected' if p == selected else ''}>{escape(p)}</option>"
        for p in policies
    )
    return (
        f"<form id='policy-form' method='get' action='{base}'><label>policy "
        f"<select id='policy' name='policy' onchange='this.form.submit()'>{options}</select>"
        "</label> <noscript><button>show</button></noscript></form>"
    )


def strategy_names(engine: Engine, policies: Sequence[str]) -> dict[str, str]:
    """What an evolved strategy's policy name (`<strategy id>@<split>`) stands for: its plans
    in words, read from the strategy's stored spec."""
    ids = {p: p.split("@", 1)[0] for p in policies if "@" in p}
    specs = queries.strategy_specs(engine, sorted(set(ids.values())))
    return {
        policy: "; ".join(Strategy.model_validate_json(specs[sid]).describe())
        for policy, sid in ids.items()
        if sid in specs
    }


def _policy_table(
    base: str, stats: Sequence[DatasetStats], selected: str, described: dict[str, str]
) -> str:
    totals: dict[str, list[DatasetStats]] = defaultdict(list)
    for row in stats:
        totals[row.policy].append(row)
    rows = []
    for policy, parts in totals.items():
        tasks = sum(p.tasks for p in parts) or 1
        mean = sum(p.accuracy for p in parts) / len(parts)
        link = f"<a class='policy' href='{base}?policy={quote(policy)}'>{escape(policy)}</a>"
        if policy in described:
            link += f"<div class='strategy muted'>{escape(described[policy])}</div>"
        rows.append(
            [
                f"<b>{link}</b>" if policy == selected else link,
                num(str(tasks)),
                num(f"{100 * mean:.1f}"),
                num(f"{sum(p.calls for p in parts) / tasks:.2f}"),
                num(f"{sum(p.tokens for p in parts) / tasks:,.0f}"),
                num(f"{sum(p.cost for p in parts) / tasks:.6f}"),
                num(f"{sum(p.cost for p in parts):.4f}"),
            ]
        )
    header = ["policy", "tasks", "accuracy %", "calls/task", "tokens/task", "$/task", "$ total"]
    return table(header, rows, "policies")


def _choices_table(
    stats: Sequence[DatasetStats],
    selected: str,
    choices: Sequence[Choice],
    oracle: Sequence[Choice],
    palette: Palette,
) -> str:
    best = best_singles(stats)
    rows = []
    # datasets in name order: the order results arrive in depends on the run's concurrency
    for row in sorted((s for s in stats if s.policy == selected), key=lambda s: s.dataset):
        tasks = row.tasks or 1
        mine = _parts(choices, row.dataset)
        champion = best.get(row.dataset)
        if champion is None:
            best_cell = "<span class='muted'>no single model in this run</span>"
        else:
            model = champion.policy.removeprefix(SINGLE)
            best_cell = (
                shares_bar([(model, "worker", 1)], palette, "best")
                + f"<span class='muted'>{escape(model)}: {100 * champion.accuracy:.1f}%, "
                f"${champion.cost / (champion.tasks or 1):.6f}/task</span>"
            )
        theirs = _parts(oracle, row.dataset)
        oracle_cell = (
            shares_bar(theirs, palette, "oracle") + shares_text(theirs)
            if theirs
            else "<span class='muted'>no single models</span>"
        )
        rows.append(
            [
                escape(row.dataset),
                num(str(row.tasks)),
                num(f"{100 * row.accuracy:.1f}"),
                shares_bar(mine, palette, "chosen") + shares_text(mine),
                best_cell,
                oracle_cell,
                num(f"{row.calls / tasks:.2f}"),
                num(f"{row.tokens / tasks:,.0f}"),
                num(f"{row.cost / tasks:.6f}"),
            ]
        )
    header = [
        "dataset", "tasks", "accuracy %", f"choices of {selected} (model · role, calls)",
        "best single model here", "oracle's choices (cheapest right single model)",
        "calls/task", "tokens/task", "$/task",
    ]  # fmt: skip
    return table(header, rows, "choices")


def _task_rows(run_id: str, rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            f"<a class='task' href='/runs/{quote(run_id)}/tasks/{quote(r['task_id'])}"
            f"?policy={quote(r['policy'])}'>{escape(r['task_id'])}</a>",
            escape(r["dataset"] or ""),
            "<span class='ok'>right</span>" if r["correct"] else "<span class='bad'>wrong</span>",
            num(str(r["calls"])),
            num(str(r["tokens"])),
            num(f"{r['cost'] or 0:.6f}"),
        ]
        for r in rows
    ]


def _ungraded(engine: Engine, run_id: str, page_number: int, per_page: int) -> str:
    """A run without graded results (`serve`, `ask`, or one just started): its tasks' calls."""
    first = (page_number - 1) * per_page
    rows, total = queries.ungraded_tasks(engine, run_id, first, per_page)
    if not total:
        return "<p>No calls in this run yet.</p>"
    cells = [
        [
            f"<a class='task' href='/runs/{quote(run_id)}/tasks/{quote(r['task_id'] or '')}'>"
            f"{escape(r['task_id'] or '')}</a>",
            escape(r["policy"] or ""),
            num(str(r["calls"])),
            num(str(r["tokens"] or 0)),
            num(f"{r['cost'] or 0:.6f}"),
        ]
        for r in rows
    ]
    return (
        f"<p>No graded results in this run: its tasks as called ({total}).</p>"
        + pager(f"/runs/{quote(run_id)}", page_number, first, len(rows), total, "")
        + table(["task", "policy", "calls", "tokens", "$"], cells, "tasks")
    )


def settings_table(config: dict[str, Any]) -> str:
    """A run's stored settings, a row each: a list as its items, a mapping as its pairs."""
    if not config:
        return ""
    rows = [
        [escape(str(key)), f"<code>{escape(_setting(value))}</code>"]
        for key, value in config.items()
    ]
    return "<h2>Settings</h2>" + table(["setting", "value"], rows, "settings")


def _setting(value: Any) -> str:
    if value is None or value in ([], {}, ""):
        return "–"
    if isinstance(value, list):
        return ", ".join(v if isinstance(v, str) else json.dumps(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} = {_setting(v)}" for k, v in value.items())
    return value if isinstance(value, str) else json.dumps(value)


def run_body(
    engine: Engine,
    aggregates: RunAggregates,
    run: dict[str, Any],
    requested: str | None,
    page_number: int,
    per_page: int,
) -> str:
    run_id = run["run_id"]
    base = f"/runs/{quote(run_id)}"
    stats = aggregates.stats()
    policies = list(dict.fromkeys(s.policy for s in stats))
    selected = requested if requested in policies else default_policy(policies)
    config = json.loads(run["config"] or "{}")
    head = (
        f"<p>kind <b>{escape(run['kind'])}</b> · status {escape(run['status'])} · pool "
        f"{escape(run['pool'] or '')} · <a id='frontier-link' href='{base}/frontier'>"
        f"accuracy–cost frontier</a></p>" + settings_table(config)
    )
    if selected is None:
        return head + _ungraded(engine, run_id, page_number, per_page)
    choices = aggregates.choices(selected)
    oracle = aggregates.oracle()
    palette = Palette(aggregates.models())
    prompt, completion = aggregates.tokens(selected)
    first = (page_number - 1) * per_page
    rows, total = queries.task_page_results(engine, run_id, selected, first, per_page)
    tasks = max(sum(s.tasks for s in stats if s.policy == selected), 1)
    query = f"policy={quote(selected)}&"
    return (
        head
        + "<h2>Policies</h2>"
        + _policy_table(base, stats, selected, strategy_names(engine, policies))
        + "<p class='muted'>accuracy: mean of the per-dataset accuracies, as "
        "<code>consortium eval</code> reports it.</p>"
        + f"<h2>Choices of a policy</h2>{_selector(base, policies, selected)}"
        + f"<p id='selected-summary'><b>{escape(selected)}</b>: "
        f"{prompt / tasks:,.0f} prompt + {completion / tasks:,.0f} completion tokens per task"
        " (a role prompt shows up as prompt tokens)</p>"
        + versus_its_favourite(stats, selected, choices)
        + palette.legend()
        + _choices_table(stats, selected, choices, oracle, palette)
        + f"<h2>Tasks of {escape(selected)} ({total})</h2>"
        + pager(base, page_number, first, len(rows), total, query)
        + table(
            ["task", "dataset", "grade", "calls", "tokens", "$"], _task_rows(run_id, rows), "tasks"
        )
    )
