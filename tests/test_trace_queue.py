"""The trace queue: rows written in batches off the event loop, none lost for an answered request,
whether the server stops or is killed under load."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from consortium.core.types import user
from consortium.pool.config import dump_pool
from consortium.records.names import short_name
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord
from consortium.runtime.trace_queue import TraceQueue


def record(index: int) -> CallRecord:
    return CallRecord(
        "run", "m", [user(f"question {index}")], f"answer {index}", task_id=str(index)
    )


def test_concurrent_calls_share_transactions_and_every_row_is_written(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    traces = TraceQueue(store)

    async def write_all() -> None:
        await asyncio.gather(*(traces.record(record(i)) for i in range(300)))

    asyncio.run(write_all())
    traces.close()
    rows = list(store.iter_calls("run"))
    assert sorted(int(r["task_id"]) for r in rows) == list(range(300))
    assert traces.rows == 300 and traces.batches < 300  # grouped, not one transaction a row


def test_a_row_is_committed_when_its_call_returns_and_close_drains(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    traces = TraceQueue(store)

    async def one() -> int:
        await traces.record(record(1))
        # another connection sees it: committed, not only queued
        with sqlite3.connect(tmp_path / "t.db") as db:
            return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])

    assert asyncio.run(one()) == 1
    traces.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(traces.record(record(2)))


def test_a_failed_insert_reaches_the_caller(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    with sqlite3.connect(tmp_path / "t.db") as db:
        db.execute("DROP TABLE calls")
    traces = TraceQueue(store)
    with pytest.raises(Exception, match="calls"):
        asyncio.run(traces.record(record(1)))
    traces.close()


def test_killed_under_load_every_answered_request_has_its_trace_row(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    model = replay_data.models["split2"][0]
    pool = tmp_path / "pool.toml"
    pool.write_text(dump_pool(replay_pool(replay_data, replay_server.base_url, [model])))
    questions = [
        r.question for r in replay_data.select(source="split2", datasets=["gsm8k"], split="test")
    ][:50]
    traces = tmp_path / "t.db"
    answered: list[str] = []
    server = ChildServer(
        "serve", "--pool", str(pool), "--policy", f"single:{short_name(model)}",
        "--traces", f"sqlite:///{traces}",
        ready_path="/health", label="serve", env={"CONSORTIUM_SERVE_TOKEN": ""},
    )  # fmt: skip
    killed = threading.Event()

    async def load(base_url: str) -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:

            async def client(offset: int) -> None:
                for i in range(offset, 10_000, 16):
                    try:
                        response = await http.post(
                            "/chat/completions",
                            json={
                                "model": "consortium",
                                "messages": [{"role": "user", "content": questions[i % 50]}],
                            },
                        )
                    except httpx.HTTPError:
                        return  # the server is gone
                    assert response.status_code == 200
                    answered.append(response.headers["x-consortium-task"])
                    if len(answered) == 150 and not killed.is_set():
                        killed.set()
                        os.kill(server.process.pid, signal.SIGKILL)

            await asyncio.gather(*(client(k) for k in range(16)))

    with server:
        asyncio.run(load(f"{server.root}/v1"))
    assert killed.is_set() and len(answered) >= 150
    with sqlite3.connect(traces) as db:
        traced = {task for (task,) in db.execute("SELECT task_id FROM calls")}
    assert set(answered) <= traced  # every answer the clients received is in the store
