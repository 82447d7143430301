"""The viewer on a long run of SYNTHETIC trace rows (bench/viewer_pages.py writes them): every
query a page makes reads through an index (no full scan of the calls or results tables), pages
hold one page of rows, and a run's aggregates are computed once until a row is written. The
page times themselves are measured by the bench (docs/benchmarks.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from bench.viewer_pages import CALLS_PER_TASK, CONDUCTOR, fill, pages
from sqlalchemy import event, text
from starlette.testclient import TestClient

from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import ResultRecord
from consortium.viewer.app import TraceViewer

CALLS = 20_000
FULL_SCAN = re.compile(r"\bSCAN (calls|results)\b(?! USING)")


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TraceStore, str]]:
    store = TraceStore(f"sqlite:///{tmp_path_factory.mktemp('scale') / 'traces.db'}")
    fill(store, 200, seed=1)  # a second, short run in the same tables
    yield store, fill(store, CALLS, seed=2)
    store.close()


def statements(store: TraceStore) -> tuple[list[tuple[str, Any]], Any]:
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    return seen, record


def test_every_page_query_reads_through_an_index(long_run: tuple[TraceStore, str]) -> None:
    store, run_id = long_run
    seen, record = statements(store)
    try:
        with TestClient(TraceViewer(store).app) as client:
            for path in pages(run_id, CALLS // CALLS_PER_TASK).values():
                assert client.get(path).status_code == 200, path
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    selects = [(s, p) for s, p in seen if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert len(selects) > 8
    with store.engine.connect() as db:
        for statement, parameters in selects:
            plan = db.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
            details = "\n".join(str(row[-1]) for row in plan)
            assert not FULL_SCAN.search(details), (statement, details)
    planted = "SELECT count(*) FROM calls WHERE response LIKE '%x%'"  # the check can fail
    with store.engine.connect() as db:
        details = "\n".join(str(r[-1]) for r in db.execute(text(f"EXPLAIN QUERY PLAN {planted}")))
    assert FULL_SCAN.search(details)


def test_a_long_run_is_paged_and_aggregated_once_per_change(
    long_run: tuple[TraceStore, str],
) -> None:
    store, run_id = long_run
    tasks = CALLS // CALLS_PER_TASK
    with TestClient(TraceViewer(store, max_tasks=50).app) as client:
        first = client.get(f"/runs/{run_id}?policy=trinity&page=3")
        assert first.text.count("class='task'") == 50
        assert f"showing 101–150 of {tasks}" in first.text
        seen, record = statements(store)
        try:
            again = client.get(f"/runs/{run_id}?policy=trinity&page=4")
            assert f"showing 151–200 of {tasks}" in again.text
            assert not [s for s, _ in seen if "GROUP BY" in s.upper()]  # aggregates kept
            store.record_result(
                ResultRecord(run_id, CONDUCTOR, "extra/1", "extra", "x", True, 1.0, "", 1, 1, 0.0)
            )
            changed = client.get(f"/runs/{run_id}?policy={CONDUCTOR}")
            assert [s for s, _ in seen if "GROUP BY" in s.upper()]  # a new row: recomputed
            assert "extra" in changed.text  # the new dataset's row
        finally:
            event.remove(store.engine, "before_cursor_execute", record)


def test_page_size_bounds_the_task_page(long_run: tuple[TraceStore, str]) -> None:
    store, run_id = long_run
    with TestClient(TraceViewer(store).app) as client:
        task = client.get(pages(run_id, CALLS // CALLS_PER_TASK)["task page, every policy"])
        assert task.status_code == 200
        assert task.text.count("class='policy'") == 12  # its 12 policies, nothing of the others
        assert task.text.count("<div class='turn") == CALLS_PER_TASK
