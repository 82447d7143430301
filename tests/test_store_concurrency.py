"""Eight processes write calls into one trace store at once, PostgreSQL then SQLite (WAL): no row
is lost, none is written twice, every id is unique and is the one its writer was given."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from consortium.runtime.pgserver import PostgresServer
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord
from consortium.runtime.store_tables import calls

WRITERS = 8
CALLS_EACH = 100


def write_calls(url: str, run_id: str, writer: int, start: Any, ids: Any) -> None:
    """One writer process: waits for the others, then records its calls one by one."""
    store = TraceStore(url)
    start.wait()
    written = []
    for index in range(CALLS_EACH):
        record = CallRecord(
            run_id=run_id,
            model=f"model-{writer}",
            messages=[{"role": "user", "content": f"writer {writer} call {index}"}],
            response=f"answer {writer}/{index}",
            task_id=f"{writer}:{index}",
            prompt_tokens=index,
        )
        written.append(store.record_call(record))
    store.close()
    ids.put((writer, written))


def check_concurrent_writers(url: str) -> None:
    store = TraceStore(url)
    run_id = store.start_run("concurrency")
    context = multiprocessing.get_context("spawn")
    start, ids = context.Barrier(WRITERS), context.Queue()
    writers = [
        context.Process(target=write_calls, args=(url, run_id, w, start, ids))
        for w in range(WRITERS)
    ]
    for process in writers:
        process.start()
    given = dict(ids.get(timeout=180) for _ in writers)
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0
    rows = list(store.iter_calls(run_id))
    assert len(rows) == WRITERS * CALLS_EACH
    assert len({row["id"] for row in rows}) == len(rows)
    assert sorted(row["task_id"] for row in rows) == sorted(
        f"{w}:{i}" for w in range(WRITERS) for i in range(CALLS_EACH)
    )
    by_id = {row["id"]: row for row in rows}
    for writer, written in given.items():
        assert len(written) == CALLS_EACH
        assert [by_id[i]["task_id"] for i in written] == [
            f"{writer}:{i}" for i in range(CALLS_EACH)
        ]
    with store.engine.connect() as db:
        count = db.execute(select(func.count(func.distinct(calls.c.id)))).scalar_one()
    assert count == WRITERS * CALLS_EACH
    store.close()


@pytest.mark.slow
def test_eight_writers_into_postgres(postgres_server: PostgresServer) -> None:
    check_concurrent_writers(postgres_server.create_database("writers"))


@pytest.mark.slow
def test_eight_writers_into_sqlite(tmp_path: Path) -> None:
    check_concurrent_writers(f"sqlite:///{tmp_path / 'writers.db'}")


def open_store(url: str, start: Any, done: Any) -> None:
    start.wait()
    TraceStore(url).close()
    done.put(True)


@pytest.mark.parametrize("round_", range(3))
def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path, round_: int) -> None:
    # Each creates the missing tables; the losers of the check-then-create race must not fail
    # ("table runs already exists": seen when Ray workers opened a new SQLite store together).
    url = f"sqlite:///{tmp_path / 'new.db'}"
    context = multiprocessing.get_context("spawn")
    start, done = context.Barrier(WRITERS), context.Queue()
    openers = [context.Process(target=open_store, args=(url, start, done)) for _ in range(WRITERS)]
    for process in openers:
        process.start()
    for process in openers:
        process.join(timeout=120)
    assert [process.exitcode for process in openers] == [0] * WRITERS
    assert done.qsize() == WRITERS
