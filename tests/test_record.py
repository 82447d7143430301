"""`consortium record` against the real replay server: every model × question × sample in the
records format; kill -9 in the middle and --resume finishes the same file (nothing asked twice,
nothing lost); --max-cost stops before the cap; samples that run out are recorded as failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.pool.config import dump_pool, load_pool
from consortium.records import load_records, write_records
from consortium.records.layouts import import_files
from consortium.records.recorder import JOURNAL, STARTED
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.runtime.store import TraceStore
from tests.test_cli import one_line_error

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 8


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    real = Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", ROOT.parent / "shared/data"))
    source = real / "mot-cascade/GPT4_result/gsm_cot1.json"
    if not source.is_file():
        pytest.fail(f"recorded gpt-4 GSM8K outputs not found at {source}")
    manifest, rows = import_files(
        "mot-cascade", [source], dataset="gsm8k", kind="number", model="gpt-4", limit=QUESTIONS
    )
    folder = tmp_path_factory.mktemp("recorded") / "gsm8k"
    write_records(folder, manifest, rows)
    return folder


@pytest.fixture(scope="module")
def pool_file(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # 0.1 s per call, so that a run of 24 calls one at a time can be killed halfway
    with ReplayServerProcess(None, "--latency-base", "0.1", records=[recorded]) as server:
        config = replay_pool(load_records_replay([recorded]), server.base_url, max_retries=0)
        path = tmp_path_factory.mktemp("pool") / "pool.toml"
        path.write_text(dump_pool(config))
        yield path


def record_args(pool: Path, tasks: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "consortium", "record", "--pool", str(pool),
        "--tasks", f"records:path={tasks}", "--samples", "3", "--concurrency", "1",
        "--out", str(out), "--traces", f"sqlite:///{out.parent / 'traces.db'}", *extra,
    ]  # fmt: skip


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def without_latency(folder: Path) -> list[dict[str, object]]:
    table = load_records(folder).table
    assert table.column("latency_s").null_count == 0  # measured for every call
    return table.drop_columns(["latency_s"]).to_pylist()


def test_kill_9_then_resume_gives_the_uninterrupted_file(
    pool_file: Path, recorded: Path, tmp_path: Path
) -> None:
    whole = run(record_args(pool_file, recorded, tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    rows = without_latency(tmp_path / "whole")
    assert len(rows) == QUESTIONS * 3
    # the recorded samples, in order: sample k of the record is sample k of the source
    source = load_records(recorded).table.to_pylist()
    expected = {(r["question_id"], r["sample"]): r["response"] for r in source}
    assert {(r["question_id"], r["sample"]): r["response"] for r in rows} == expected
    assert sum(bool(r["correct"]) for r in rows) >= QUESTIONS * 3 - 3

    out = tmp_path / "killed"
    process = subprocess.Popen(record_args(pool_file, recorded, out), stderr=subprocess.DEVNULL)
    journal = out / JOURNAL
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 6:
            break
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    made = journal.read_bytes().count(b"\n")
    assert 6 <= made < QUESTIONS * 3, made
    assert not (out / "outputs.parquet").exists()
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    statuses = {json.loads(r["config"])["out"]: r["status"] for r in store.list_runs()}
    assert statuses == {str(tmp_path / "whole"): "finished", str(out): "interrupted"}
    refused = run(record_args(pool_file, recorded, out))
    assert refused.returncode == 1 and "pass --resume" in refused.stderr
    # the resume comes on a later day: the prices keep the date the run began
    (out / STARTED).write_text("2026-01-01\n")
    resumed = run(record_args(pool_file, recorded, out, "--resume"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"{QUESTIONS * 3 - made} new, {made} from the journal" in resumed.stdout
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    keys = [(r["question_id"], r["model"], r["sample"]) for r in lines]
    assert len(keys) == len(set(keys)) == QUESTIONS * 3  # nothing asked twice, nothing lost
    assert without_latency(out) == rows
    manifest = load_records(out).manifest
    assert {price.date for price in manifest.prices.values()} == {"2026-01-01"}
    whole_manifest = load_records(tmp_path / "whole").manifest
    whole_date = (tmp_path / "whole" / STARTED).read_text().strip()
    assert {price.date for price in whole_manifest.prices.values()} == {whole_date}
    dated = {
        name: price.model_copy(update={"date": whole_date})
        for name, price in manifest.prices.items()
    }
    assert manifest.model_copy(update={"prices": dated}) == whole_manifest


def test_max_cost_stops_before_the_cap_and_resume_finishes(
    pool_file: Path, recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "capped"
    capped = run(record_args(pool_file, recorded, out, "--max-cost", "0.2"))
    assert capped.returncode == 3, capped.stdout + capped.stderr
    assert "--max-cost 0.2 reached" in capped.stdout
    partial = load_records(out).table
    assert 0 < partial.num_rows < QUESTIONS * 3
    assert sum(partial.column("cost_usd").to_pylist()) <= 0.2
    finished = run(record_args(pool_file, recorded, out, "--resume", "--max-cost", "100"))
    assert finished.returncode == 0, finished.stderr
    assert load_records(out).table.num_rows == QUESTIONS * 3


def test_samples_beyond_the_recorded_ones_are_failures_not_reuses(
    pool_file: Path, recorded: Path, tmp_path: Path
) -> None:
    args = record_args(pool_file, recorded, tmp_path / "four", "--models", "gpt-4")
    args[args.index("--samples") + 1] = "4"
    result = run(args)
    assert result.returncode == 0, result.stderr
    rows = load_records(tmp_path / "four").table.to_pylist()
    fourth = [r for r in rows if r["sample"] == 3]
    assert len(fourth) == QUESTIONS
    assert all(r["response"] is None and "samples exhausted" in r["error"] for r in fourth)
    assert f"{QUESTIONS} failed calls" in result.stdout


def test_the_manifest_keeps_the_sampling_settings(
    pool_file: Path, recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "warm"
    first = run(record_args(pool_file, recorded, out, "--temperature", "0.5"))
    assert first.returncode == 0, first.stderr
    sampling = load_records(out).manifest.sampling
    assert sampling is not None
    assert (sampling.samples, sampling.temperature, sampling.top_p) == (3, 0.5, None)
    assert sampling.seed == "sample"  # sample k is sent with seed=k
    pool = load_pool(pool_file)
    assert sampling.max_tokens == {m.name: m.max_tokens for m in pool.models}
    assert json.loads((out / "manifest.json").read_text())["sampling"]["temperature"] == 0.5


def test_a_resume_with_other_sampling_settings_is_refused_and_appends_nothing(
    pool_file: Path, recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "warm"
    first = run(record_args(pool_file, recorded, out, "--temperature", "0.5"))
    assert first.returncode == 0, first.stderr
    before = {name: (out / name).read_bytes() for name in (JOURNAL, "outputs.parquet")}
    longer = tmp_path / "longer.toml"
    longer.write_text(pool_file.read_text().replace("max_tokens = 1024", "max_tokens = 2048"))
    refusals = {
        ("--temperature", "0.2"): "--temperature 0.5, not 0.2",
        (): "--temperature 0.5, not none (the endpoint's default)",
    }
    for extra, named in refusals.items():
        refused = run(record_args(pool_file, recorded, out, "--resume", *extra))
        one_line_error(refused, f"the journal was recorded with {named}; --resume must ask")
    other_length = record_args(longer, recorded, out, "--resume", "--temperature", "0.5")
    one_line_error(run(other_length), "max_tokens 1024 for gpt-4 in the pool file, not 2048")
    assert {name: (out / name).read_bytes() for name in before} == before  # nothing appended
    same = run(record_args(pool_file, recorded, out, "--resume", "--temperature", "0.5"))
    assert same.returncode == 0, same.stderr
    assert f"0 new, {QUESTIONS * 3} from the journal" in same.stdout
