"""The reliability report at small scale, and a planted API key that must appear nowhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool
from tests.test_cli import cli

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "sk-planted-3f9c2e7a1b5d4c8e9f0a2b3c4d5e6f7a"


def test_reliability_report_at_small_scale(replay_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "reliability.json"
    script = str(ROOT / "bench/reliability.py")
    command = [sys.executable, script, "--data", str(replay_dir), "--calls", "210",
               "--resumes", "1", "--conductor-resumes", "0", "--fault-rate", "0.2",
               "--json", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())
    assert figures["tasks"] == 210 and figures["faults_total"] > 10
    retried = figures["faults_total"] - figures["faults_injected"].get("slow", 0)
    # Every fault but a slow body is followed by a retry, except a task's last (it then failed
    # visibly): a task that gave up made as many requests as it met faults.
    given_up = figures["tasks_failed_visibly"]
    assert figures["requests_to_faulty_server"] >= 210 + retried - given_up
    assert figures["wrong_answers_caused_by_faults"] == 0
    assert figures["traces_lost"] == 0
    assert figures["tasks_completed"] + figures["tasks_failed_visibly"] == 210
    assert figures["resumes_matching"] == figures["resumes_tested"] == 1


def test_a_planted_key_appears_in_nothing_written(
    replay_server: ReplayServerProcess, replay_data: ReplayData, replay_dir: Path, tmp_path: Path
) -> None:
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:2])
    text = dump_pool(config).replace(
        'strengths = "replay of recorded outcomes"',
        'strengths = "replay of recorded outcomes"\napi_key_env = "CONSORTIUM_PLANTED_KEY"',
    )
    pool = tmp_path / "pool.toml"
    pool.write_text(text)
    down = tmp_path / "down.toml"  # the same models at an address where nothing listens
    unreachable = text.replace(replay_server.base_url, f"http://127.0.0.1:{free_port()}/v1")
    down.write_text(unreachable.replace("max_retries = 3", "max_retries = 0"))  # fail at once
    env = {"CONSORTIUM_PLANTED_KEY": PLANTED, "CONSORTIUM_TRACES": f"sqlite:///{tmp_path / 't.db'}"}
    tasks = f"replay:data={replay_dir}:datasets=gsm8k:limit=5"
    outputs = [
        cli("eval", "--pool", str(pool), "--tasks", tasks, "--json", str(tmp_path / "e.json"),
            "--markdown", str(tmp_path / "e.md"), env=env),
        cli("eval", "--pool", str(down), "--tasks", tasks, env=env),
        cli("ask", "--pool", str(down), "--model", config.names[0], "What is 2 + 2?", env=env),
        cli("evolve", "--pool", str(pool), "--out", str(tmp_path / "evolve"), "--rounds", "1",
            "--tasks", tasks.replace("limit=5", "limit=20"), "--batch", "10",
            "--heldout-batch", "10", env=env),
    ]  # fmt: skip
    assert outputs[0].returncode == 0 and outputs[3].returncode == 0, outputs[3].stderr
    assert "cannot reach" in outputs[2].stderr  # the failure is reported …
    listed = cli("traces", "list", env=env)
    for run in json.loads((tmp_path / "e.json").read_text())["run_id"], listed.stdout.split()[0]:
        cli("traces", "export", run, "--out", str(tmp_path / f"{run}.jsonl"), env=env)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 8
    for path in written:  # … and the key is in no file: traces, WAL, reports, exports, state
        assert PLANTED.encode() not in path.read_bytes(), path
    for result in [*outputs, listed]:
        assert PLANTED not in result.stdout + result.stderr
