"""The command line as a user runs it: real processes, real server, one clear line per error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool
from tests.helpers import run_consortium

PLANTED_KEY = "sk-consortium-planted-0123456789abcdef"


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`consortium ARGS` in this process, with `env` added to the environment (tests/helpers.py;
    `timeout` is a child process's, kept for `cli_process`)."""
    return run_consortium(*args, env=env)


def cli_process(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`consortium ARGS` in a child process, with `env` added to this one's environment."""
    return subprocess.run(
        [sys.executable, "-m", "consortium", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("error:") and expected in result.stderr, result.stderr


@pytest.fixture
def pool_file(replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path) -> Path:
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:3])
    path = tmp_path / "pool.toml"
    path.write_text(
        dump_pool(config).replace(
            'strengths = "replay of recorded outcomes"',
            'strengths = "replay of recorded outcomes"\napi_key_env = "CONSORTIUM_PLANTED_KEY"',
            1,
        )
    )
    return path


def test_help_teaches_the_commands() -> None:
    result = cli_process("--help")  # the entry point, as a user starts it
    assert result.returncode == 0
    for command in ("ask", "conduct", "eval", "demo", "replay", "pool", "traces"):
        assert command in result.stdout
    serve_help = cli("replay", "serve", "--help").stdout
    assert "--write-pool" in serve_help and "--exit-with-parent" not in serve_help  # internal
    ask_help = cli("ask", "--help", env={"COLUMNS": "200"}).stdout
    assert "workflow:KIND" in ask_help and "judge-vote" in ask_help
    eval_help = cli("eval", "--help", env={"COLUMNS": "100"}).stdout
    assert "--no-baselines" in eval_help and "<bool>" not in eval_help  # a flag shows no type
    assert "<path>" in eval_help  # an option with a value does


def test_help_prose_is_reflowed_and_examples_keep_their_lines() -> None:
    from consortium.cli import _reflow

    text = """Answer one question: a conductor
    writes the workflow.

    Example:

      consortium conduct --pool p.toml \\
          "What is 2 + 2?"
    """
    assert _reflow(text) == (
        "Answer one question: a conductor writes the workflow.\n\nExample:\n\n"
        '  consortium conduct --pool p.toml \\\n      "What is 2 + 2?"'
    )


def test_pool_check(pool_file: Path, replay_data: ReplayData, tmp_path: Path) -> None:
    ok = cli("pool", "check", str(pool_file), env={"CONSORTIUM_PLANTED_KEY": PLANTED_KEY})
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count(" ok") == 3
    broken = replay_pool(
        replay_data, f"http://127.0.0.1:{free_port()}/v1", replay_data.models["split2"][:1]
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(dump_pool(broken))
    result = cli("pool", "check", str(bad))
    assert result.returncode == 1
    assert "unreachable" in result.stdout


async def test_pool_check_waits_for_a_server_started_in_the_background(
    pool_file: Path, replay_data: ReplayData, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import time

    from consortium.pool.check import wait_and_check

    monkeypatch.setenv("CONSORTIUM_PLANTED_KEY", PLANTED_KEY)
    later = tmp_path / "later.toml"

    async def write_later() -> None:
        await asyncio.sleep(0.6)
        later.write_text(pool_file.read_text())

    writer = asyncio.create_task(write_later())
    statuses = await wait_and_check(later, wait=10)
    await writer
    assert [s.ok for s in statuses] == [True, True, True]

    down = tmp_path / "down.toml"
    down.write_text(
        dump_pool(
            replay_pool(
                replay_data,
                f"http://127.0.0.1:{free_port()}/v1",
                replay_data.models["split2"][:1],
            )
        )
    )
    started = time.monotonic()
    (status,) = await wait_and_check(down, wait=1.0, poll=0.2)
    assert not status.reachable and "unreachable" in status.status
    assert time.monotonic() - started >= 1.0  # kept trying for the whole wait


def test_ask_traces_and_export_keep_the_key_out(
    pool_file: Path, tmp_path: Path, replay_data: ReplayData
) -> None:
    db = tmp_path / "traces.db"
    question = replay_data.select(datasets=["gsm8k"], split="test")[0].question
    env = {"CONSORTIUM_PLANTED_KEY": PLANTED_KEY, "CONSORTIUM_TRACES": f"sqlite:///{db}"}
    asked = cli("ask", "--pool", str(pool_file), "--model", "Mistral-7B-v0.1", question, env=env)
    assert asked.returncode == 0, asked.stderr
    assert "The answer is" in asked.stdout
    assert "single:Mistral-7B-v0.1 · answered by Mistral-7B-v0.1 · 1 call(s)" in asked.stderr
    run_id = asked.stderr.split("· run ")[-1].strip()
    listed = cli("traces", "list", env=env)
    assert run_id in listed.stdout, listed.stdout
    (row,) = [line for line in listed.stdout.splitlines() if run_id in line]
    assert "0.0000" not in row and "e-" in row  # a sub-cent cost still shows its size
    shown = cli("traces", "show", run_id, env=env)
    assert f"run {run_id} ·" in cli("traces", "show", "latest", env=env).stdout
    assert "Mistral-7B-v0.1" in shown.stdout and "showing" not in shown.stderr
    cut = cli("traces", "show", run_id, "--limit", "0", env=env)
    assert "Mistral-7B-v0.1" not in cut.stdout and "showing 0 of 1 calls" in cut.stderr
    export = tmp_path / "calls.jsonl"
    exported = cli("traces", "export", run_id, "--out", str(export), env=env)
    assert f"wrote 1 call(s) of run {run_id} to {export}" in exported.stderr
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["messages"][0]["content"] == question
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    for text in (asked.stdout, asked.stderr, listed.stdout, shown.stdout):
        assert PLANTED_KEY not in text
    assert PLANTED_KEY.encode() not in written


@pytest.mark.slow
def test_errors_are_one_clear_line(pool_file: Path, tmp_path: Path, replay_dir: Path) -> None:
    env = {
        "CONSORTIUM_PLANTED_KEY": PLANTED_KEY,
        "CONSORTIUM_TRACES": f"sqlite:///{tmp_path}/t.db",
        "CONSORTIUM_REPLAY_DATA": str(replay_dir),
    }
    one_line_error(
        cli("ask", "--pool", str(pool_file), "--model", "gpt-9", "hi", env=env),
        "unknown model 'gpt-9'",
    )
    one_line_error(cli("ask", "--pool", str(pool_file), "  ", env=env), "the question is empty")
    unset = {**env, "CONSORTIUM_PLANTED_KEY": ""}
    one_line_error(
        cli("ask", "--pool", str(pool_file), "hi", env=unset), "CONSORTIUM_PLANTED_KEY is not set"
    )
    one_line_error(
        cli(
            "ask",
            "--pool",
            str(pool_file),
            "--model",
            "Mistral-7B-v0.1",
            "not a recorded question",
            env=env,
        ),
        "HTTP 404",
    )
    broken = tmp_path / "broken.toml"
    broken.write_text('[[models]]\nname = "x"\nbase_url = "ftp://nowhere"\nmodel = "x"\n')
    one_line_error(cli("pool", "check", str(broken)), "models[0] (x).base_url")
    one_line_error(
        cli("eval", "--pool", str(pool_file), "--tasks", "replay:limit=ten", env=env),
        "limit must be an integer",
    )
    one_line_error(
        cli("eval", "--pool", str(pool_file), "--tasks", "nosuch", env=env),
        "unknown task set 'nosuch'",
    )
    one_line_error(cli("traces", "show", "no-such-run", env=env), "no run 'no-such-run'")
    one_line_error(
        cli(
            "ask", "--pool", str(pool_file), "--policy",
            "conductor:Mistral-7B-v0.1:workers=Mistral-7B-v0.1", "hi", env=env,
        ),
        "cannot be both the conductor and a worker",
    )  # fmt: skip
    # A mistyped policy folder says it is missing and what is there, not the spec grammar.
    (tmp_path / "policies" / "trinity-replay").mkdir(parents=True)
    one_line_error(
        cli("ask", "--pool", str(pool_file), "--policy", str(tmp_path / "policies/trinity"), "hi"),
        "no such policy directory (in " + str(tmp_path / "policies") + ": trinity-replay)",
    )


def evaluate(pool_file: Path, tmp_path: Path, spec: str, out: str, *options: str) -> dict[str, Any]:
    """Run `consortium eval` with a planted key and a fresh trace store; its JSON report."""
    env = {"CONSORTIUM_PLANTED_KEY": PLANTED_KEY, "CONSORTIUM_TRACES": f"sqlite:///{tmp_path}/t.db"}
    report = tmp_path / out
    result = cli(
        "eval", "--pool", str(pool_file), "--tasks", spec, *options, "--json", str(report), env=env
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(report.read_text())
    assert f"run {loaded['run_id']} · its calls: consortium traces show" in result.stderr
    return loaded


def test_eval_writes_json_and_markdown(pool_file: Path, tmp_path: Path, replay_dir: Path) -> None:
    spec = f"replay:data={replay_dir}:datasets=mmlu,gsm8k:limit=30"
    report = evaluate(
        pool_file,
        tmp_path,
        spec,
        "r.json",
        "--policy",
        "single:MetaMath-Mistral-7B",
        "--policy",
        "random",
        "--markdown",
        str(tmp_path / "r.md"),
    )
    assert "replay of recorded outcomes" in report["pool"]
    assert set(report["policies"]) == {"single:MetaMath-Mistral-7B", "random"}
    metamath = report["policies"]["single:MetaMath-Mistral-7B"]
    assert set(metamath["per_dataset"]) == {"mmlu", "gsm8k"}
    assert metamath["tasks"] == 60 and metamath["calls"] == 60 and metamath["errors"] == 0
    assert "| single:MetaMath-Mistral-7B |" in (tmp_path / "r.md").read_text()


def test_eval_caps_are_enforced(pool_file: Path, tmp_path: Path, replay_dir: Path) -> None:
    spec = f"replay:data={replay_dir}:datasets=gsm8k:limit=20"
    capped = evaluate(
        pool_file,
        tmp_path,
        spec,
        "r.json",
        "--policy",
        "single:MetaMath-Mistral-7B",
        "--max-cost",
        "0.0003",
        "--concurrency",
        "1",
    )
    report = capped["policies"]["single:MetaMath-Mistral-7B"]
    assert report["cost"] <= 0.0003  # each call reserves its worst case before it is made
    assert 0 < report["errors"] < 20 and report["calls"] == 20 - report["errors"]
    none = evaluate(
        pool_file, tmp_path, spec, "n.json", "--policy", "random", "--task-max-calls", "0"
    )
    report = none["policies"]["random"]
    assert report["calls"] == 0 and report["errors"] == 20


def test_bad_task_files_are_one_clear_line(pool_file: Path, tmp_path: Path) -> None:
    undecodable = tmp_path / "bytes.jsonl"
    undecodable.write_bytes(b'{"question": "What is 1+1?", "answer": "#### 2"}\n\xff\xfe bad\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"question": "  ", "answer": "#### 2"}\n')
    traces = f"sqlite:///{tmp_path / 't.db'}"
    for path, expected in ((undecodable, "not UTF-8 text"), (empty, "question is empty")):
        result = cli(
            "eval", "--pool", str(pool_file), "--tasks", f"gsm8k:path={path}", "--traces", traces
        )
        one_line_error(result, expected)


def in_terminal(args: list[str], columns: int) -> str:
    """`consortium ARGS` in a pseudo-terminal `columns` wide: what its user reads (no colours)."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "consortium", *args],
        stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=120) == 0, b"".join(chunks).decode()
    os.close(leader)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r", "")


def test_traces_list_keeps_every_run_id_whole_in_80_columns(tmp_path: Path) -> None:
    """`traces show` needs the id `traces list` prints: in a terminal 80 columns wide the other
    columns give way (the pool first), never the id."""
    from consortium.runtime.store import TraceStore

    url = f"sqlite:///{tmp_path / 't.db'}"
    store = TraceStore(url)
    for kind in ("ask", "eval", "serve"):
        store.start_run(kind, pool=str(tmp_path / "a-pool-file-in-a-folder-with-a-long-name.toml"))
    shown = in_terminal(["traces", "list", "--traces", url], 80)
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80, shown
    assert "…" not in shown
    ids = [run["run_id"] for run in store.list_runs()]
    assert [i for i in ids if any(f"│ {i} │" in line for line in lines)] == ids, shown
    assert "pools: consortium traces show RUN" in shown
    wide = in_terminal(["traces", "list", "--traces", url], 120)
    assert all(i in wide for i in ids) and "┃ pool" in wide  # wide enough for the pool too
