from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.core.types import user
from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord
from tests.helpers import ReplayServers, untimed
from tests.test_cli import cli


def test_calls_round_trip(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    run_id = store.start_run("test", pool="p")
    record = CallRecord(
        run_id=run_id,
        model="m",
        messages=[user("2+2?")],
        response="4",
        policy="single:m",
        task_id="t1",
        turn=2,
        role="verifier",
        prompt_tokens=3,
        completion_tokens=1,
        cost=0.5,
        latency=0.25,
        verdict="ACCEPT",
    )
    store.record_call(record)
    store.record_call(
        CallRecord(
            run_id=run_id,
            model="m",
            messages=[user("x")],
            response=None,
            error="model 'm': HTTP 500: boom",
        )
    )
    rows = list(store.iter_calls(run_id))
    assert [r["turn"] for r in rows] == [2, None]
    first = rows[0]
    assert json.loads(first["messages"]) == [{"role": "user", "content": "2+2?"}]
    assert len(first["messages_hash"]) == 64
    assert (first["role"], first["verdict"], first["cost"]) == ("verifier", "ACCEPT", 0.5)
    assert rows[1]["error"].endswith("boom")
    listed = store.list_runs()
    assert listed[0]["run_id"] == run_id and listed[0]["calls"] == 2
    assert sqlite3.connect(tmp_path / "t.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.fixture(scope="module")
def slow_server(replay_dir: Path, replay_servers: ReplayServers) -> Iterator[ReplayServerProcess]:
    with replay_servers(replay_dir, "--sources", "split2", "--latency-base", "0.05") as server:
        yield server


def test_a_killed_run_keeps_every_finished_call_and_resumes_to_the_same_result(
    slow_server: ReplayServerProcess, replay_data: ReplayData, replay_dir: Path, tmp_path: Path
) -> None:
    pool_file = tmp_path / "pool.toml"
    pool_file.write_text(
        dump_pool(replay_pool(replay_data, slow_server.base_url, replay_data.models["split2"][:2]))
    )
    db = tmp_path / "traces.db"
    command = [
        sys.executable,
        "-m",
        "consortium",
        "eval",
        "--pool",
        str(pool_file),
        "--tasks",
        f"replay:data={replay_dir}:datasets=gsm8k:limit=150",
        "--concurrency",
        "8",
        "--traces",
        f"sqlite:///{db}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    finished = 0
    while time.monotonic() < deadline and finished < 40:
        time.sleep(0.3)
        if db.exists():
            try:
                finished = sqlite3.connect(db).execute("SELECT count(*) FROM calls").fetchone()[0]
            except sqlite3.OperationalError:
                finished = 0  # tables not created yet
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert finished >= 40, "the run should have finished some calls before the kill"
    connection = sqlite3.connect(db)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    rows = connection.execute(
        "SELECT response, prompt_tokens, completion_tokens, latency, task_id FROM calls"
    ).fetchall()
    assert len(rows) >= finished  # nothing finished was lost
    assert len(rows) < 450  # and it was really interrupted
    assert all(r[0] and r[1] > 0 and r[2] > 0 and r[3] > 0 and r[4] for r in rows)
    run_id, status = connection.execute("SELECT run_id, status FROM runs").fetchone()
    assert status == "running"  # never marked finished
    kept = connection.execute("SELECT count(*) FROM results").fetchone()[0]

    resumed = subprocess.run(
        [*command, "--resume", run_id, "--json", str(tmp_path / "resumed.json")],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    straight_db = f"sqlite:///{tmp_path / 'straight.db'}"
    straight = [*command[:-1], straight_db, "--json", str(tmp_path / "straight.json")]
    assert subprocess.run(straight, capture_output=True).returncode == 0

    def policies(name: str) -> dict[str, object]:
        report = json.loads((tmp_path / name).read_text())
        return {
            p: {k: v for k, v in untimed(entry).items() if k != "cost"}
            for p, entry in report["policies"].items()
        }

    assert policies("resumed.json") == policies("straight.json")
    pairs = connection.execute("SELECT policy, task_id FROM results").fetchall()
    assert len(pairs) == len(set(pairs)) == 150 * 3  # two models and random; none run twice
    calls = connection.execute("SELECT count(*) FROM calls").fetchone()[0]
    assert calls - len(rows) == 450 - kept  # the resume ran only what had no result
    assert connection.execute("SELECT status FROM runs").fetchone() == ("finished",)


def test_a_store_from_an_earlier_version_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:  # the calls table as it was before fallback_from
        db.execute(
            "CREATE TABLE calls (id INTEGER PRIMARY KEY, run_id VARCHAR(40) NOT NULL, "
            "policy VARCHAR(200), task_id VARCHAR(200), turn INTEGER, model VARCHAR(200) NOT NULL,"
            " role VARCHAR(40), messages_hash VARCHAR(64), messages TEXT, response TEXT, "
            "prompt_tokens INTEGER, completion_tokens INTEGER, cost FLOAT, latency FLOAT, "
            "verdict VARCHAR(40), error TEXT, cached BOOLEAN, created_at FLOAT NOT NULL)"
        )
    store = TraceStore(f"sqlite:///{path}")
    store.record_call(CallRecord("r", "m", [], "answer", fallback_from="other"))
    (row,) = store.iter_calls("r")
    assert row["fallback_from"] == "other" and row["response"] == "answer"


def test_a_run_ends_finished_failed_or_interrupted(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 'runs.db'}")
    with store.running("eval", pool="p", config={"k": 1}) as run:
        run.summary = {"tasks": 3}
    assert store.run(run.run_id)["status"] == "finished"  # type: ignore[index]
    assert json.loads(store.run(run.run_id)["summary"]) == {"tasks": 3}  # type: ignore[index]
    for error, status in ((ValueError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")):
        with pytest.raises(type(error)), store.running("eval") as broken:
            raise error
        assert store.run(broken.run_id)["status"] == status  # type: ignore[index]
    with store.running("eval", resume=run.run_id) as resumed:  # continues, starts nothing new
        assert resumed.run_id == run.run_id
    assert len(store.list_runs()) == 3


def test_a_run_whose_process_died_lists_as_interrupted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    opens = f"from consortium.runtime.store import TraceStore; store = TraceStore({url!r})"
    owner = subprocess.Popen(
        [sys.executable, "-c", f"{opens}; print(store.start_run('record'), flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    run_id = owner.stdout.readline().strip()
    store = TraceStore(url)
    assert store.run(run_id)["status"] == "running"  # type: ignore[index]
    os.kill(owner.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while store.run(run_id)["status"] == "running" and time.monotonic() < deadline:  # type: ignore[index]
        time.sleep(0.05)  # not reaped yet: a zombie is gone too
    assert store.run(run_id)["status"] == "interrupted"  # type: ignore[index]
    owner.wait()
    (listed,) = store.list_runs()
    assert (listed["run_id"], listed["status"]) == (run_id, "interrupted")
    shown = cli("traces", "list", "--traces", url)
    assert shown.returncode == 0, shown.stderr
    (row,) = [line for line in shown.stdout.splitlines() if run_id in line]
    assert "interrupted" in row and "running" not in row
    with sqlite3.connect(tmp_path / "runs.db") as db:  # the stored row is left as it was
        assert db.execute("SELECT status FROM runs").fetchone() == ("running",)
        # a pid reused by a later process is not the run's
        db.execute("UPDATE runs SET pid = ?", (os.getpid(),))
    assert store.run(run_id)["status"] == "interrupted"  # type: ignore[index]
    with sqlite3.connect(tmp_path / "runs.db") as db:  # another host's run: taken at its word
        db.execute("UPDATE runs SET host = 'another-host', pid = 1")
    assert store.run(run_id)["status"] == "running"  # type: ignore[index]
    mine = store.start_run("serve")  # this process's own run, alive
    assert store.run(mine)["status"] == "running"  # type: ignore[index]
    with store.running("eval", resume=run_id):  # a resume owns the run again
        assert store.run(run_id)["status"] == "running"  # type: ignore[index]
    assert store.run(run_id)["status"] == "finished"  # type: ignore[index]
