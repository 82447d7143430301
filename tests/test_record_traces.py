"""`consortium record --traces`: every call a recording makes is a call of a run of kind `record`
in the trace store, so `consortium traces list/show` and the viewer show it; a resume traces only
the calls it makes; without --traces the calls go to the default store of the folder run from."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.pool.config import dump_pool
from consortium.records import load_records, write_records
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.runtime.store import TraceStore
from tests.test_cli import cli
from tests.toy_records import MODELS, toy_manifest, toy_rows

QUESTIONS = 6


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Toy recorded outputs: cheap-a has two samples of each question, the others one."""
    folder = tmp_path_factory.mktemp("source") / "toy"
    write_records(folder, toy_manifest("toy"), toy_rows(QUESTIONS))
    return folder


@pytest.fixture(scope="module")
def pool_file(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with ReplayServerProcess(None, records=[source]) as server:
        config = replay_pool(load_records_replay([source]), server.base_url, max_retries=0)
        path = tmp_path_factory.mktemp("pool") / "pool.toml"
        path.write_text(dump_pool(config))
        yield path


def record(pool: Path, source: Path, out: Path, *extra: str) -> list[str]:
    return [
        "record", "--pool", str(pool), "--tasks", f"records:path={source}",
        "--out", str(out), *extra,
    ]  # fmt: skip


def test_record_traces_each_call_it_makes(pool_file: Path, source: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    out = tmp_path / "rec"
    first = cli(*record(pool_file, source, out, "--traces", url))
    assert first.returncode == 0, first.stderr
    store = TraceStore(url)
    [run] = store.list_runs()
    assert run["kind"] == "record" and run["status"] == "finished"
    assert f"calls traced as run {run['run_id']}" in first.stdout
    calls = list(store.iter_calls(run["run_id"]))
    rows = load_records(out).table.to_pylist()
    assert run["calls"] == len(calls) == len(rows) == QUESTIONS * len(MODELS)
    recorded = {(r["question_id"], r["model"], r["sample"]): r for r in rows}
    for call in calls:
        row = recorded[(call["task_id"], call["model"], call["turn"])]
        assert call["policy"] == "record" and call["error"] is None
        assert call["response"] == row["response"]
        assert row["question"] in call["messages"]
        assert call["prompt_tokens"] == row["tokens_in"]
        assert call["latency"] == pytest.approx(row["latency_s"])

    # a resume asking for a second sample traces only the calls it makes, as a run of its own;
    # cheap-b and strong recorded one sample, so their second is a failed call, traced with why
    second = cli(*record(pool_file, source, out, "--traces", url, "--samples", "2", "--resume"))
    assert second.returncode == 0, second.stderr
    latest = store.run("latest")
    assert latest is not None and latest["run_id"] != run["run_id"]
    resumed = list(store.iter_calls(latest["run_id"]))
    assert len(resumed) == QUESTIONS * len(MODELS)
    assert {call["turn"] for call in resumed} == {1}
    failed = [call for call in resumed if call["error"]]
    assert {call["model"] for call in failed} == {"cheap-b", "strong"}
    assert all("samples exhausted" in call["error"] for call in failed)

    shown = cli("traces", "show", "latest", "--traces", url, "--limit", "3")
    assert shown.returncode == 0, shown.stderr
    assert f"run {latest['run_id']} · record · finished" in shown.stdout
    listed = cli("traces", "list", "--traces", url)
    assert listed.stdout.count(" record ") == 2


def test_record_traces_to_the_default_store_of_the_folder_run_from(
    pool_file: Path, source: Path, tmp_path: Path
) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CONSORTIUM_TRACES"}
    result = subprocess.run(
        [sys.executable, "-m", "consortium", *record(pool_file, source, tmp_path / "rec")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    [run] = TraceStore(f"sqlite:///{tmp_path / 'consortium-traces.db'}").list_runs()
    assert run["kind"] == "record" and run["calls"] == QUESTIONS * len(MODELS)
