"""`consortium traces view`: a small web page over the trace store.

`/` lists runs; `/runs/{id}` shows a run's accuracy and cost per policy, the routing
distribution (which model in which role, per dataset) as plots, and its tasks; a task page shows
its calls as a timeline (model, role, prompt, answer, verdict, tokens, cost, latency).
Read-only; plots are drawn with matplotlib on request.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter, defaultdict
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from consortium.runtime.store import TraceStore

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;font-size:.9rem}
th{background:#f3f3f3} .num{text-align:right} .ok{color:#17803d} .bad{color:#b42318}
.call{border-left:4px solid #4a72b0;margin:.6rem 0;padding:.3rem .6rem;background:#fafafa}
.bar{height:10px;background:#4a72b0;display:inline-block}
pre{white-space:pre-wrap;max-height:18rem;overflow:auto;background:#fff;border:1px solid #eee}
img{max-width:48%;margin-right:1%}
"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><p><a href='/'>runs</a></p>"
        f"<h1>{escape(title)}</h1>{body}</body></html>",
        status_code=status,
    )


def _table(header: list[str], rows: list[list[str]], css: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{css}'><tr>{head}</tr>{body}</table>"


def _pager(base: str, page: int, first: int, shown: int, total: int) -> str:
    """Which tasks this page shows, with links to the pages before and after."""
    if total == 0:
        return ""
    links = []
    if page > 1:
        links.append(f"<a class='prev' href='{base}?page={page - 1}'>previous</a>")
    if first + shown < total:
        links.append(f"<a class='next' href='{base}?page={page + 1}'>next</a>")
    where = f"showing {first + 1 if shown else 0}–{first + shown} of {total}"
    return f"<p class='pager'>{where}{' · ' if links else ''}{' · '.join(links)}</p>"


def run_summary(store: TraceStore, run_id: str) -> dict[str, Any]:
    """Per policy: tasks, accuracy, calls, cost; routing: (model/role) counts per dataset."""
    results = list(store.iter_results(run_id))
    dataset_of = {r["task_id"]: r["dataset"] for r in results}
    policies: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in results:
        row = policies[r["policy"]]
        row["tasks"] += 1
        row["correct"] += bool(r["correct"])
        row["calls"] += r["calls"] or 0
        row["cost"] += r["cost"] or 0.0
    routing: dict[str, Counter[str]] = defaultdict(Counter)
    calls = list(store.iter_calls(run_id))
    for call in calls:
        dataset = dataset_of.get(call["task_id"], "(no result)")
        routing[dataset][f"{call['model']} · {call['role'] or 'worker'}"] += 1
    return {
        "policies": {p: dict(v) for p, v in policies.items()},
        "routing": {d: dict(c) for d, c in routing.items()},
        "results": results,
        "calls": len(calls),
        "cost": sum(c["cost"] or 0.0 for c in calls),
    }


class TraceViewer:
    def __init__(self, store: TraceStore, max_tasks: int = 500) -> None:
        self.store = store
        self.max_tasks = max_tasks
        self.app = Starlette(
            routes=[
                Route("/", self.runs),
                Route("/runs/{run_id}", self.run),
                Route("/runs/{run_id}/accuracy.png", self.accuracy_plot),
                Route("/runs/{run_id}/routing.png", self.routing_plot),
                Route("/runs/{run_id}/tasks/{task_id:path}", self.task),
            ]
        )

    async def runs(self, request: Request) -> Response:
        runs = await asyncio.to_thread(self.store.list_runs)
        rows = [
            [
                f"<a class='run' href='/runs/{quote(r['run_id'])}'>{escape(r['run_id'])}</a>",
                escape(r["kind"]),
                escape(r["status"]),
                escape(r["pool"] or ""),
                f"<span class='num'>{r['calls']}</span>",
                f"<span class='num'>{r['cost']:.6f}</span>",
            ]
            for r in runs
        ]
        header = ["run", "kind", "status", "pool", "calls", "cost $"]
        return _page("Consortium runs", _table(header, rows, "runs") if rows else "<p>No runs.</p>")

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = await asyncio.to_thread(self.store.run, run_id)
        if run is None:
            return _page("Unknown run", f"<p>No run {escape(run_id)} in this store.</p>", 404)
        summary = await asyncio.to_thread(run_summary, self.store, run_id)
        total = len(summary["results"])
        try:
            page = max(1, int(request.query_params.get("page", "1")))
        except ValueError:
            page = 1
        first = (page - 1) * self.max_tasks
        policy_rows = [
            [
                escape(name),
                str(int(p["tasks"])),
                f"{100 * p['correct'] / p['tasks']:.1f}",
                f"{p['calls'] / p['tasks']:.2f}",
                f"{p['cost']:.6f}",
            ]
            for name, p in summary["policies"].items()
        ]
        tasks = [
            [
                f"<a class='task' href='/runs/{quote(run_id)}/tasks/{quote(r['task_id'])}"
                f"?policy={quote(r['policy'])}'>{escape(r['task_id'])}</a>",
                escape(r["policy"]),
                escape(r["dataset"] or ""),
                "<span class='ok'>right</span>"
                if r["correct"]
                else "<span class='bad'>wrong</span>",
                str(r["calls"]),
                f"{r['cost'] or 0:.6f}",
            ]
            for r in summary["results"][first : first + self.max_tasks]
        ]
        config = json.loads(run["config"] or "{}")
        base = f"/runs/{quote(run_id)}"
        body = (
            f"<p>kind <b>{escape(run['kind'])}</b> · status {escape(run['status'])} · pool "
            f"{escape(run['pool'] or '')} · {summary['calls']} calls · "
            f"{summary['cost']:.6f} USD</p><p><code>{escape(json.dumps(config))}</code></p>"
            "<h2>Policies</h2>"
            + _table(
                ["policy", "tasks", "accuracy %", "calls/task", "cost $"], policy_rows, "policies"
            )
            + "<p class='note'>Accuracy here is pooled over all of a policy's tasks; the tables "
            "of <code>consortium eval</code> average the per-dataset accuracies, so the two "
            "differ when datasets differ in size.</p>" + "<h2>Accuracy and routing</h2>"
            f"<img id='accuracy' alt='accuracy per policy' src='{base}/accuracy.png'>"
            f"<img id='routing' alt='routing distribution' src='{base}/routing.png'>"
            f"<h2>Tasks ({total})</h2>"
            + _pager(base, page, first, len(tasks), total)
            + _table(["task", "policy", "dataset", "grade", "calls", "cost $"], tasks, "tasks")
        )
        return _page(f"Run {run_id}", body)

    async def task(self, request: Request) -> Response:
        run_id, task_id = request.path_params["run_id"], request.path_params["task_id"]
        calls = await asyncio.to_thread(self.store.task_calls, run_id, task_id)
        policy = request.query_params.get("policy")
        if policy is not None:
            calls = [c for c in calls if c["policy"] == policy]
        if not calls:
            return _page(
                "Unknown task",
                f"<p>No calls of {escape(task_id)} in run {escape(run_id)}.</p>",
                404,
            )
        start = min(c["created_at"] - (c["latency"] or 0.0) for c in calls)
        end = max(c["created_at"] for c in calls)
        span = max(end - start, 1e-6)
        items = []
        for index, c in enumerate(calls, 1):
            began = c["created_at"] - (c["latency"] or 0.0) - start
            offset, width = 100 * began / span, max(0.5, 100 * (c["latency"] or 0.0) / span)
            messages = json.loads(c["messages"] or "[]")
            prompt = "\n\n".join(f"[{m['role']}] {m['content']}" for m in messages)
            verdict = f" · verdict <b>{escape(c['verdict'])}</b>" if c["verdict"] else ""
            error = f"<p class='bad'>error: {escape(c['error'])}</p>" if c["error"] else ""
            items.append(
                f"<div class='call' data-model='{escape(c['model'])}'>"
                f"<b>{index}. {escape(c['model'])}</b> as <i>{escape(c['role'] or 'worker')}</i>"
                f"{verdict} · {c['prompt_tokens']}+{c['completion_tokens']} tokens · "
                f"{c['cost'] or 0:.6f} USD · {1000 * (c['latency'] or 0):.0f} ms"
                f"<div style='margin-left:{offset:.1f}%'><span class='bar' "
                f"style='width:{width:.1f}%'></span></div>{error}"
                f"<details><summary>prompt</summary><pre>{escape(prompt)}</pre></details>"
                f"<details open><summary>answer</summary><pre>{escape(c['response'] or '')}</pre>"
                "</details></div>"
            )
        shown = f" · policy <b>{escape(policy)}</b>" if policy else " · every policy"
        body = f"<p>run <a href='/runs/{quote(run_id)}'>{escape(run_id)}</a>{shown}</p>"
        body += "".join(items)
        return _page(f"Task {task_id}", f"<div id='timeline'>{body}</div>")

    async def accuracy_plot(self, request: Request) -> Response:
        summary = await asyncio.to_thread(run_summary, self.store, request.path_params["run_id"])
        return Response(await asyncio.to_thread(_accuracy_png, summary), media_type="image/png")

    async def routing_plot(self, request: Request) -> Response:
        summary = await asyncio.to_thread(run_summary, self.store, request.path_params["run_id"])
        return Response(await asyncio.to_thread(_routing_png, summary), media_type="image/png")


def _png(figure: Any) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.tight_layout()
    # "tight" grows the image to hold a legend placed outside the axes, however long it is.
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def _accuracy_png(summary: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = summary["policies"]
    names = [n if len(n) <= 36 else n[:35] + "…" for n in policies] or ["(no results)"]
    accuracy = [100 * p["correct"] / p["tasks"] for p in policies.values()] or [0.0]
    cost = [p["cost"] / p["tasks"] for p in policies.values()] or [0.0]
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(8, 1.0 + 0.45 * len(names)), gridspec_kw={"width_ratios": [3, 2]}
    )
    left.barh(names, accuracy, color="#4a72b0")
    left.set_xlabel("accuracy %")
    right.barh(names, cost, color="#b07a4a")
    right.set_xlabel("USD per task")
    right.set_yticks([])
    return _png(figure)


def _routing_png(summary: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    routing: dict[str, dict[str, int]] = summary["routing"] or {"(no calls)": {}}
    datasets = list(routing)
    pairs = sorted({pair for counts in routing.values() for pair in counts})
    columns = 1 + len(pairs) // 24  # legend entries per column, so 18 models × 3 roles fit
    height = max(0.8 + 0.5 * len(datasets), 0.6 + 0.22 * min(len(pairs), 24))
    # The bars keep ~6 inches; each legend column adds its own width.
    figure, axis = plt.subplots(figsize=(6 + 2.2 * columns, height))
    left = [0.0] * len(datasets)
    for pair in pairs:
        totals = [sum(routing[d].values()) or 1 for d in datasets]
        share = [100 * routing[d].get(pair, 0) / t for d, t in zip(datasets, totals, strict=True)]
        axis.barh(datasets, share, left=left, label=pair)
        left = [a + b for a, b in zip(left, share, strict=True)]
    axis.set_xlabel("% of calls (model · role)")
    if pairs:
        axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), ncol=columns)
    return _png(figure)
