"""`consortium traces view`: read-only web pages over the trace store.

`/` lists runs; `/runs/{id}` shows a run's policies and, for the one selected, its choices by
dataset beside the per-dataset best model and the oracle, and its tasks (paged);
`/runs/{id}/frontier` plots every policy's accuracy against its cost; a task page shows each
policy's transcript turn by turn with the grader's verdict, and a workflow's DAG; `/learning`
(with a learning server's folder) its versions, refits and traffic per window. Every page is
drawn on the server (HTML and SVG) from indexed queries.
"""

from __future__ import annotations

import asyncio
from html import escape
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from consortium.runtime.store import TraceStore
from consortium.serve.learn.history import read_history
from consortium.viewer.html import page, page_number
from consortium.viewer.learning_page import learning_body
from consortium.viewer.memo import AggregateMemo
from consortium.viewer.pages import frontier_body, runs_body, task_body
from consortium.viewer.run_page import run_body


class TraceViewer:
    def __init__(self, store: TraceStore, max_tasks: int = 200, learn: Path | None = None) -> None:
        self.store = store
        self.max_tasks = max_tasks
        self.learn = learn
        """The folder of a learning server (`serve --learn DIR`) whose page `/learning` shows."""
        self.memo = AggregateMemo(store.engine)
        self.app = Starlette(
            routes=[
                Route("/", self.runs),
                Route("/learning", self.learning),
                Route("/runs/{run_id}", self.run),
                Route("/runs/{run_id}/frontier", self.frontier),
                Route("/runs/{run_id}/tasks/{task_id:path}", self.task),
            ]
        )

    async def runs(self, request: Request) -> HTMLResponse:
        body = await asyncio.to_thread(runs_body, self.store.engine, self.memo)
        if self.learn is not None:
            body = (
                f"<p><a id='learning' href='/learning'>learning server {escape(str(self.learn))}"
                "</a>: its versions, refits and traffic per window</p>" + body
            )
        return page("Consortium runs", body)

    async def learning(self, request: Request) -> HTMLResponse:
        if self.learn is None:
            message = "<p>No learning server folder: consortium traces view --learn DIR</p>"
            return page("No learning server", message, 404)
        folder = self.learn
        history = await asyncio.to_thread(read_history, folder, self.store.url)
        return page("Learning server", learning_body(history, str(folder)))

    def _unknown(self, run_id: str) -> HTMLResponse:
        return page("Unknown run", f"<p>No run {escape(run_id)} in this store.</p>", 404)

    async def run(self, request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        run = await asyncio.to_thread(self.store.run, run_id)
        if run is None:
            return self._unknown(run_id)
        body = await asyncio.to_thread(
            lambda: run_body(
                self.store.engine,
                self.memo.of(run["run_id"]),
                run,
                request.query_params.get("policy"),
                page_number(request.query_params.get("page")),
                self.max_tasks,
            )
        )
        return page(f"Run {run['run_id']}", body, run_id=run["run_id"])

    async def frontier(self, request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        run = await asyncio.to_thread(self.store.run, run_id)
        if run is None:
            return self._unknown(run_id)
        body = await asyncio.to_thread(lambda: frontier_body(self.memo.of(run["run_id"])))
        return page(f"Frontier of run {run['run_id']}", body, run_id=run["run_id"])

    async def task(self, request: Request) -> HTMLResponse:
        run_id, task_id = request.path_params["run_id"], request.path_params["task_id"]
        policy = request.query_params.get("policy")
        body = await asyncio.to_thread(
            lambda: task_body(self.store.engine, self.memo.of(run_id), task_id, policy)
        )
        if body is None:
            message = f"<p>No calls or results of {escape(task_id)} in run {escape(run_id)}.</p>"
            return page("Unknown task", message, 404)
        return page(f"Task {task_id}", body, run_id=run_id)
